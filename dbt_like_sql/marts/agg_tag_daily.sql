-- Grain: one row per account x tag x snapshot day, over the keywords carrying the tag that day (all
-- domains): the same metrics as agg_domain_daily, counted once in int_keyword_rankings_rollup_daily.
with

tags as (
    select * from staging.stg_tags
),

grouped as (
    select * from marts.int_keyword_rankings_rollup_daily
),

final as (
    select
        a.account,
        a.group_id as tag_id,
        t.tag_name,
        a.snapshot_date,
        -- the metrics, in the rollup's order; the rollup's keys and volatility helpers left out
        a.* exclude (
            grouping_level, account, group_id, search_engine, device, location_code, language_code, snapshot_date,
            absolute_change_1d_sum, ranking_both_days_keywords
        )
    from grouped as a
    left join tags as t
        on t.account = a.account and t.tag_id = a.group_id and t.snapshot_date = a.snapshot_date
    where a.grouping_level = 'tag'
)

select * from final
