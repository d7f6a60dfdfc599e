-- Grain: one row per account x quota metric x snapshot day whose billing cycle has ended (a later reset was
-- seen): that day's forecasts from fct_quota_cycle_daily beside what then happened until the cycle's end,
-- and their errors in days and in units.
with

quota as (
    select * from marts.fct_quota_cycle_daily
),

-- each snapshot's run: the latest snapshot on or before it without a previous one (more than 31 days without a
-- snapshot break a run, and a reset in such a gap cannot be seen); a cycle is closed only by a reset of its run
cycles as (
    select
        *,
        max(case when previous_snapshot_date is null then snapshot_date end) over (
            partition by account, metric order by snapshot_date rows between unbounded preceding and current row
        ) as run_start
    from quota
),

resets as (
    select
        account,
        metric,
        run_start,
        snapshot_date as reset_seen_on,
        cycle_start as next_cycle_start
    from cycles
    where is_reset
),

-- the first reset seen after each day closes the day's cycle
next_resets as (
    select
        c.account,
        c.metric,
        c.snapshot_date,
        min(r.reset_seen_on) as reset_seen_on
    from cycles as c
    inner join resets as r
        on r.account = c.account and r.metric = c.metric and r.run_start = c.run_start
        and r.reset_seen_on > c.snapshot_date
    group by c.account, c.metric, c.snapshot_date
),

closed as (
    select
        n.account,
        n.metric,
        n.snapshot_date,
        cast(r.next_cycle_start - 1 as date) as actual_cycle_end
    from next_resets as n
    inner join resets as r
        on r.account = n.account and r.metric = n.metric and r.reset_seen_on = n.reset_seen_on
),

-- what happened from the day of the forecast to the cycle's end
outcomes as (
    select
        k.account,
        k.metric,
        k.snapshot_date,
        k.actual_cycle_end,
        min(case when o.remaining <= 0 then o.snapshot_date end) as actual_exhaustion_date,
        max(case when o.snapshot_date = k.actual_cycle_end then o.usage end) as actual_usage_at_cycle_end,
        max(o.quota_limit) <> min(o.quota_limit) as limit_changed_after_forecast
    from closed as k
    inner join cycles as o
        on o.account = k.account and o.metric = k.metric
        and o.snapshot_date between k.snapshot_date and k.actual_cycle_end
    group by k.account, k.metric, k.snapshot_date, k.actual_cycle_end
),

final as (
    select
        f.account,
        f.metric,
        f.snapshot_date,
        f.cycle_start,
        f.reset_cadence,
        f.cadence_evidence,
        f.is_overdue,
        f.expected_cycle_end,
        o.actual_cycle_end,
        date_diff('day', f.snapshot_date, o.actual_cycle_end) as days_to_cycle_end,
        date_diff('day', o.actual_cycle_end, f.expected_cycle_end) as cycle_end_error_days,
        f.usage,
        f.quota_limit,
        f.burn_rate_median_7d,
        f.projected_usage_at_cycle_end,
        o.actual_usage_at_cycle_end,
        f.projected_usage_at_cycle_end - o.actual_usage_at_cycle_end as usage_error_units,
        (f.projected_usage_at_cycle_end - o.actual_usage_at_cycle_end) * 100.0
            / nullif(o.actual_usage_at_cycle_end, 0) as usage_error_pct,
        f.projected_exhaustion_date,
        o.actual_exhaustion_date,
        date_diff('day', o.actual_exhaustion_date, f.projected_exhaustion_date) as exhaustion_error_days,
        f.runs_out_before_reset,
        o.actual_exhaustion_date is not null as ran_out_before_reset,
        f.runs_out_before_reset = (o.actual_exhaustion_date is not null) as runs_out_forecast_correct,
        o.limit_changed_after_forecast
    from outcomes as o
    inner join cycles as f
        on f.account = o.account and f.metric = o.metric and f.snapshot_date = o.snapshot_date
)

select * from final
