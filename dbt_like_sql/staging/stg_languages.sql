-- One row per search engine x language code per snapshot day (reference data). Rename and cast only.
-- Reads the fields by their names in the vendor's contract (sources/vendor_contract.yml), which alone holds
-- their JSON paths: meeting the real vendor's shape is an edit of the contract, not of this file.
with

source as (
    select * from vendor.languages
),

renamed as (
    select
        cast(language_code as varchar) as language_code,
        cast(parent_id as varchar) as search_engine,
        cast(account as varchar) as account,
        cast(snapshot_date as date) as snapshot_date,
        cast(language_name as varchar) as language_name,
        cast(extracted_at as timestamp with time zone) as extracted_at
    from source
),

final as (
    select * from renamed
)

select * from final
