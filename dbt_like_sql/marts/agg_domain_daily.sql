-- Grain: one row per domain x snapshot day, over all the domain's keywords (every engine, device,
-- location and language): the line an analyst charts per domain, no re-weighting needed. Same metrics
-- as agg_domain_segment_daily (counted once in int_keyword_rankings_rollup_daily), plus volatility over 7 days.
with

grouped as (
    select * from marts.int_keyword_rankings_rollup_daily
),

domains as (
    select * from staging.stg_domains
),

aggregated as (
    select * from grouped
    where grouping_level = 'domain'
),

windowed as (
    select
        *,
        sum(absolute_change_1d_sum) over last_7_days
            / nullif(sum(ranking_both_days_keywords) over last_7_days, 0) as volatility_7d
    from aggregated
    window last_7_days as (
        partition by group_id order by snapshot_date
        range between interval 6 days preceding and current row
    )
),

final as (
    select
        a.account,
        a.group_id as domain_id,
        d.domain,
        a.snapshot_date,
        -- the metrics, in the rollup's order, then volatility_7d; the rollup's keys and helpers left out
        a.* exclude (
            grouping_level, account, group_id, search_engine, device, location_code, language_code, snapshot_date,
            absolute_change_1d_sum, ranking_both_days_keywords
        )
    from windowed as a
    left join domains as d
        on d.domain_id = a.group_id and d.snapshot_date = a.snapshot_date
)

select * from final
