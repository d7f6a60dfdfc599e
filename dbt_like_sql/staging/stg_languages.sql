-- One row per search engine x language code per snapshot day (reference data). Rename and cast only.
-- Reads the row fields the spec marks "not shown" (docs/reference/sandbox.md, "Invented record shapes"):
-- meeting the real vendor's shape is a change to this file alone.
with

source as (
    select * from raw.languages
),

renamed as (
    select
        cast(code as varchar) as language_code,
        cast(parent_id as varchar) as search_engine,
        cast(account as varchar) as account,
        cast(snapshot_date as date) as snapshot_date,
        cast(attributes ->> '$.name' as varchar) as language_name,
        cast(extracted_at as timestamp with time zone) as extracted_at
    from source
),

final as (
    select * from renamed
)

select * from final
