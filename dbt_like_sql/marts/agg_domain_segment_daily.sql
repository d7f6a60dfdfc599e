-- Grain: one row per domain x search engine x device x location x language x snapshot day (a
-- "segment"): ranking distribution, average positions, visibility, estimated clicks, comparable
-- keywords, winners and losers on four horizons, top 3 / top 10 entries and exits, volatility. Every rule
-- is a column of fct_keyword_rankings_daily, counted and averaged once in
-- int_keyword_rankings_rollup_daily.
with

grouped as (
    select * from marts.int_keyword_rankings_rollup_daily
),

domains as (
    select * from staging.stg_domains
),

final as (
    select
        a.account,
        a.group_id as domain_id,
        d.domain,
        a.search_engine,
        a.device,
        a.location_code,
        a.language_code,
        a.snapshot_date,
        -- the metrics, in the rollup's order; the rollup's keys and volatility helpers left out
        a.* exclude (
            grouping_level, account, group_id, search_engine, device, location_code, language_code, snapshot_date,
            absolute_change_1d_sum, ranking_both_days_keywords
        )
    from grouped as a
    left join domains as d
        on d.domain_id = a.group_id and d.snapshot_date = a.snapshot_date
    where a.grouping_level = 'segment'
)

select * from final
