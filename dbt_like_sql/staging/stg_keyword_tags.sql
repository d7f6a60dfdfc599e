-- Bridge: one row per keyword x tag per snapshot day, unnested from the keyword's tag ids.
with

keywords as (
    select * from staging.stg_keywords
),

unnested as (
    select
        keyword_id,
        domain_id,
        account,
        snapshot_date,
        unnest(tag_ids) as tag_id
    from keywords
    where tag_ids is not null
),

final as (
    select distinct
        keyword_id,
        cast(tag_id as varchar) as tag_id,
        domain_id,
        account,
        snapshot_date
    from unnested
)

select * from final
