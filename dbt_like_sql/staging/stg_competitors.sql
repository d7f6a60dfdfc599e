-- One row per competitor per domain per snapshot day. Rename and cast only.
-- Reads the fields by their names in the vendor's contract (sources/vendor_contract.yml), which alone holds
-- their JSON paths: meeting the real vendor's shape is an edit of the contract, not of this file.
with

source as (
    select * from vendor.competitors
),

renamed as (
    select
        cast(id as varchar) as competitor_id,
        cast(parent_id as varchar) as domain_id,
        cast(account as varchar) as account,
        cast(snapshot_date as date) as snapshot_date,
        cast(competitor_domain as varchar) as competitor_domain,
        cast(competitor_name as varchar) as competitor_name,
        cast(created_at as timestamp with time zone) as created_at,
        cast(extracted_at as timestamp with time zone) as extracted_at
    from source
),

final as (
    select * from renamed
)

select * from final
