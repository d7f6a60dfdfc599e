-- One row per account per snapshot day: the plan's keyword and data-row quota. Rename and cast only.
-- Reads the fields by their names in the vendor's contract (sources/vendor_contract.yml), which alone holds
-- their JSON paths: meeting the real vendor's shape is an edit of the contract, not of this file.
with

source as (
    select * from vendor.usage
),

renamed as (
    select
        cast(account as varchar) as account,
        cast(snapshot_date as date) as snapshot_date,
        cast(id as varchar) as account_id,
        cast(api_enabled as boolean) as api_enabled,
        cast(keywords_usage as bigint) as keywords_usage,
        cast(keywords_limit as bigint) as keywords_limit,
        cast(keywords_remaining as bigint) as keywords_remaining,
        cast(data_rows_usage as bigint) as data_rows_usage,
        cast(data_rows_limit as bigint) as data_rows_limit,
        cast(data_rows_remaining as bigint) as data_rows_remaining,
        cast(extracted_at as timestamp with time zone) as extracted_at
    from source
),

final as (
    select * from renamed
)

select * from final
