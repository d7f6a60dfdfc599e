-- One row per domain per account per snapshot day. Rename and cast only.
-- Reads the fields by their names in the vendor's contract (sources/vendor_contract.yml), which alone holds
-- their JSON paths: meeting the real vendor's shape is an edit of the contract, not of this file.
with

source as (
    select * from vendor.domains
),

renamed as (
    select
        cast(id as varchar) as domain_id,
        cast(account as varchar) as account,
        cast(snapshot_date as date) as snapshot_date,
        cast(domain as varchar) as domain,
        cast(host as varchar) as host,
        cast(match_type as varchar) as match_type,
        cast(project_name as varchar) as project_name,
        cast(extracted_at as timestamp with time zone) as extracted_at
    from source
),

final as (
    select * from renamed
)

select * from final
