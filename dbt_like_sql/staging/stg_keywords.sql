-- One row per tracked keyword per snapshot day. Rename and cast only.
-- The only place that reads the keyword fields the spec marks "not shown" (docs/reference/sandbox.md,
-- "Invented record shapes"): meeting the real vendor's shape is a change to the `parsed` CTE below.
with

source as (
    select * from raw.keywords
),

parsed as (
    select
        *,
        -- one parse per record; fields absent from a record (or of another type) come out null
        json_transform(attributes, '{
            "keyword": "VARCHAR",
            "searchEngine": "VARCHAR",
            "device": "VARCHAR",
            "location": {"name": "VARCHAR", "variant": "VARCHAR"},
            "language": {"code": "VARCHAR"},
            "frequency": "VARCHAR",
            "tagIds": ["VARCHAR"],
            "searchVolume": "BIGINT",
            "createdAt": "VARCHAR",
            "results": {"organic": {"position": "INTEGER", "url": "VARCHAR", "capturedAt": "VARCHAR"}}
        }') as attrs
    from source
),

renamed as (
    select
        cast(id as varchar) as keyword_id,
        cast(parent_id as varchar) as domain_id,
        cast(account as varchar) as account,
        cast(snapshot_date as date) as snapshot_date,
        attrs.keyword as keyword,
        attrs.searchEngine as search_engine,
        attrs.device as device,
        cast(location_code as varchar) as location_code,
        attrs.location.name as location_name,
        attrs.location.variant as location_variant,
        attrs.language.code as language_code,
        attrs.frequency as frequency,
        attrs.tagIds as tag_ids,
        attrs.searchVolume as search_volume,
        attrs.results.organic.position as position,
        attrs.results.organic.url as ranking_url,
        cast(attrs.createdAt as timestamp with time zone) as created_at,
        cast(attrs.results.organic.capturedAt as timestamp with time zone) as captured_at,
        cast(extracted_at as timestamp with time zone) as extracted_at
    from parsed
),

final as (
    select * from renamed
)

select * from final
