-- One row per tracked keyword per snapshot day. Rename and cast only.
-- The only place that reads the keyword fields the spec marks "not shown" (docs/architecture.md,
-- "Invented record shapes"): meeting the real vendor's shape is a change to this file alone.
with

source as (
    select * from raw.keywords
),

renamed as (
    select
        cast(id as varchar) as keyword_id,
        cast(parent_id as varchar) as domain_id,
        cast(account as varchar) as account,
        cast(snapshot_date as date) as snapshot_date,
        cast(attributes ->> '$.keyword' as varchar) as keyword,
        cast(attributes ->> '$.searchEngine' as varchar) as search_engine,
        cast(attributes ->> '$.device' as varchar) as device,
        cast(location_code as varchar) as location_code,
        cast(attributes ->> '$.location.name' as varchar) as location_name,
        cast(attributes ->> '$.location.variant' as varchar) as location_variant,
        cast(attributes ->> '$.language.code' as varchar) as language_code,
        cast(attributes ->> '$.frequency' as varchar) as frequency,
        cast(json_extract(attributes, '$.tagIds') as varchar[]) as tag_ids,
        cast(attributes ->> '$.searchVolume' as bigint) as search_volume,
        cast(attributes ->> '$.results.organic.position' as integer) as position,
        cast(attributes ->> '$.results.organic.url' as varchar) as ranking_url,
        cast(attributes ->> '$.createdAt' as timestamp with time zone) as created_at,
        cast(attributes ->> '$.results.organic.capturedAt' as timestamp with time zone) as captured_at,
        cast(extracted_at as timestamp with time zone) as extracted_at
    from source
),

final as (
    select * from renamed
)

select * from final
