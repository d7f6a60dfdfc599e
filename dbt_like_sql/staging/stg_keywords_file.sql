-- One row per keyword combination the keywords file wants tracked (RANK_PIPELINE_KEYWORDS_FILE), as the
-- raw/keywords_file asset planned it against the day's snapshot; only rows whose domain resolved to an id.
-- Rename and cast only: the one place the marts read raw.keywords_file from.
with

source as (
    select * from raw.keywords_file
),

renamed as (
    select
        cast(account as varchar) as account,
        cast(domain_id as varchar) as domain_id,
        cast(domain as varchar) as domain,
        cast(keyword as varchar) as keyword,
        cast(search_engine as varchar) as search_engine,
        cast(device as varchar) as device,
        cast(location as varchar) as location,
        cast(location_code as varchar) as location_code,
        cast(language_code as varchar) as language_code,
        cast(frequency as varchar) as frequency,
        tags,
        cast(file as varchar) as file,
        cast(file_line as integer) as file_line,
        cast(planned_at as timestamp with time zone) as planned_at
    from source
    where domain_id is not null
),

final as (
    select * from renamed
)

select * from final
