-- One row per search engine x location code per snapshot day (reference data). Rename and cast only.
-- Reads the fields by their names in the vendor's contract (sources/vendor_contract.yml), which alone holds
-- their JSON paths: meeting the real vendor's shape is an edit of the contract, not of this file.
with

source as (
    select * from vendor.locations
),

renamed as (
    select
        cast(location_code as varchar) as location_code,
        cast(parent_id as varchar) as search_engine,
        cast(account as varchar) as account,
        cast(snapshot_date as date) as snapshot_date,
        cast(location_name as varchar) as location_name,
        cast(location_variant as varchar) as location_variant,
        cast(country_code as varchar) as country_code,
        cast(extracted_at as timestamp with time zone) as extracted_at
    from source
),

final as (
    select * from renamed
)

select * from final
