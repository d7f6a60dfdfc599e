-- One row per competitor per domain per snapshot day. Rename and cast only.
-- Reads the competitor fields the spec marks "not shown" (docs/reference/sandbox.md, "Invented
-- record shapes"): meeting the real vendor's shape is a change to this file alone.
with

source as (
    select * from raw.competitors
),

renamed as (
    select
        cast(id as varchar) as competitor_id,
        cast(parent_id as varchar) as domain_id,
        cast(account as varchar) as account,
        cast(snapshot_date as date) as snapshot_date,
        cast(attributes ->> '$.domain' as varchar) as competitor_domain,
        cast(attributes ->> '$.name' as varchar) as competitor_name,
        cast(attributes ->> '$.createdAt' as timestamp with time zone) as created_at,
        cast(extracted_at as timestamp with time zone) as extracted_at
    from source
),

final as (
    select * from renamed
)

select * from final
