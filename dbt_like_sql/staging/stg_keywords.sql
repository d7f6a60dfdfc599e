-- One row per tracked keyword per snapshot day. Rename and cast only.
-- Reads the keyword fields by their names in the vendor's contract (sources/vendor_contract.yml): the JSON
-- paths, their types and how the vendor sends them are declared there alone, and `vendor.keywords` is the raw
-- table flattened by it. Meeting the real vendor's shape is an edit of the contract, not of this file.
with

source as (
    select * from vendor.keywords
),

renamed as (
    select
        cast(id as varchar) as keyword_id,
        cast(parent_id as varchar) as domain_id,
        cast(account as varchar) as account,
        cast(snapshot_date as date) as snapshot_date,
        cast(keyword as varchar) as keyword,
        cast(search_engine as varchar) as search_engine,
        cast(device as varchar) as device,
        cast(location_code as varchar) as location_code,
        cast(location_name as varchar) as location_name,
        cast(location_variant as varchar) as location_variant,
        cast(language_code as varchar) as language_code,
        cast(frequency as varchar) as frequency,
        tag_ids,
        cast(search_volume as bigint) as search_volume,
        cast(position as integer) as position,
        cast(ranking_url as varchar) as ranking_url,
        cast(created_at as timestamp with time zone) as created_at,
        cast(captured_at as timestamp with time zone) as captured_at,
        cast(extracted_at as timestamp with time zone) as extracted_at
    from source
),

final as (
    select * from renamed
)

select * from final
