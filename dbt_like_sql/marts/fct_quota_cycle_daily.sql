-- Grain: one row per account x quota metric x snapshot day: the metric's billing cycle as detected from
-- the data (usage falling sharply = a reset; for the keyword stock only when the data show a billing reset:
-- dataRows reset the same day and the keyword records did not go), usage projected at the cycle's end, whether and when the
-- allowance runs out before the next reset, with a robust (median) burn rate beside the mean.
-- keywords are a stock (net change, additions and removals apart); dataRows a flow within a cycle.
with

usage as (
    select * from staging.stg_usage
),

keyword_changes as (
    select * from marts.agg_account_keyword_changes_daily
),

metrics as (
    select
        account,
        snapshot_date,
        'keywords' as metric,
        'stock' as metric_kind,
        keywords_usage as usage,
        keywords_limit as quota_limit,
        coalesce(keywords_remaining, keywords_limit - keywords_usage) as remaining
    from usage
    union all
    select
        account,
        snapshot_date,
        'dataRows' as metric,
        'flow' as metric_kind,
        data_rows_usage as usage,
        data_rows_limit as quota_limit,
        coalesce(data_rows_remaining, data_rows_limit - data_rows_usage) as remaining
    from usage
),

with_changes as (
    select
        m.*,
        kc.keywords_added,
        kc.keywords_removed
    from metrics as m
    left join keyword_changes as kc
        on kc.account = m.account and kc.snapshot_date = m.snapshot_date and m.metric = 'keywords'
),

with_previous as (
    select
        *,
        lag(snapshot_date) over by_metric as lag_date,
        lag(usage) over by_metric as lag_usage,
        lag(quota_limit) over by_metric as lag_limit
    from with_changes
    window by_metric as (partition by account, metric order by snapshot_date)
),

previous as (
    select
        * exclude (lag_date, lag_usage, lag_limit),
        -- the previous snapshot counts only within 31 days, so a full rebuild equals the incremental one
        case when lag_date >= snapshot_date - 31 then lag_date end as previous_snapshot_date,
        case when lag_date >= snapshot_date - 31 then lag_usage end as previous_usage,
        case when lag_date >= snapshot_date - 31 then lag_limit end as previous_limit
    from with_previous
),

falls as (
    select
        *,
        date_diff('day', previous_snapshot_date, snapshot_date) as days_since_previous,
        -- usage fell by more than half since the previous snapshot
        coalesce(previous_usage > 0 and usage < previous_usage * 0.5, false) as fell_by_half
    from previous
),

resets as (
    select
        * exclude (fell_by_half),
        -- a flow resets when it falls by half; a stock only when the data show a billing reset: the account's
        -- flow reset on the same snapshot, and the records removed explain less than half of the fall (a
        -- clean-up of keywords is a negative net change, never a reset)
        case
            when metric_kind = 'flow' then fell_by_half
            else fell_by_half
                and max(case when metric_kind = 'flow' and fell_by_half then 1 else 0 end) over same_snapshot = 1
                and coalesce(keywords_removed, 0) * 2 < previous_usage - usage
        end as is_reset
    from falls
    window same_snapshot as (partition by account, snapshot_date)
),

reset_starts as (
    select
        *,
        -- the cycle starts on the reset day; when the reset fell in a gap of snapshots that holds the 1st of
        -- the month, on that 1st (the calendar-month billing convention), else on the first day after the gap
        case
            when not is_reset then null
            when date_trunc('month', snapshot_date) > previous_snapshot_date
                then cast(date_trunc('month', snapshot_date) as date)
            else cast(previous_snapshot_date + 1 as date)
        end as reset_start
    from resets
),

-- each reset with the cycle it closes (from the previous reset's start to this one's) and the cycle before
reset_chain as (
    select
        account,
        metric,
        snapshot_date as reset_seen_on,
        reset_start,
        lag(snapshot_date) over by_reset as previous_reset_seen_on,
        date_diff('day', lag(reset_start) over by_reset, reset_start) as cycle_length
    from reset_starts
    where is_reset
    window by_reset as (partition by account, metric order by snapshot_date)
),

cycle_chain as (
    select
        *,
        lag(previous_reset_seen_on) over by_reset as earlier_reset_seen_on,
        lag(cycle_length) over by_reset as previous_cycle_length
    from reset_chain
    window by_reset as (partition by account, metric order by reset_seen_on)
),

-- where each snapshot's known history starts: its latest snapshot of the 62 days without a previous one (a
-- first snapshot, or one after more than 31 days without: a reset in such a gap cannot be seen), else the
-- earliest of the 62 days
anchored as (
    select
        *,
        coalesce(
            max(case when previous_snapshot_date is null then snapshot_date end) over last_62_days,
            min(snapshot_date) over last_62_days
        ) as history_start,
        max(case when quota_limit <> previous_limit then snapshot_date end) over last_62_days
            as latest_limit_change_62d
    from reset_starts
    window last_62_days as (
        partition by account, metric order by snapshot_date
        range between interval 62 days preceding and current row
    )
),

-- the resets seen in the 62 days up to each snapshot, since its history's start; a cycle counts when both
-- its resets are in them, and a cycle more than 3 days longer or shorter than the one before it is a change
-- of cadence
window_resets as (
    select
        d.account,
        d.metric,
        d.snapshot_date,
        c.reset_seen_on,
        c.reset_start,
        c.cycle_length,
        c.previous_reset_seen_on,
        coalesce(
            c.previous_reset_seen_on >= d.snapshot_date - 62 and c.previous_reset_seen_on >= d.history_start, false
        ) as cycle_in_window,
        coalesce(
            c.earlier_reset_seen_on >= d.snapshot_date - 62 and c.earlier_reset_seen_on >= d.history_start
            and abs(c.cycle_length - c.previous_cycle_length) > 3,
            false
        ) as cadence_changed
    from anchored as d
    inner join cycle_chain as c
        on c.account = d.account and c.metric = d.metric
        and c.reset_seen_on between d.snapshot_date - 62 and d.snapshot_date
        and c.reset_seen_on >= d.history_start
),

-- a change of cadence: only the cycles from the changed one on count
counted_resets as (
    select
        *,
        max(case when cadence_changed then previous_reset_seen_on end)
            over (partition by account, metric, snapshot_date) as cadence_from
    from window_resets
),

evidence as (
    select
        account,
        metric,
        snapshot_date,
        count(*) as resets_62d,
        max(reset_start) as latest_reset_start,
        count(case when cycle_in_window and previous_reset_seen_on >= coalesce(cadence_from, previous_reset_seen_on)
            then 1 end) as cycles_observed,
        avg(case when cycle_in_window and previous_reset_seen_on >= coalesce(cadence_from, previous_reset_seen_on)
            then cycle_length end) as cycle_length_days,
        max(case when cycle_in_window and previous_reset_seen_on >= coalesce(cadence_from, previous_reset_seen_on)
            then cycle_length end)
        - min(case when cycle_in_window and previous_reset_seen_on >= coalesce(cadence_from, previous_reset_seen_on)
            then cycle_length end) as cycle_length_spread_days,
        max(case when cadence_changed then reset_seen_on end) as cadence_changed_on
    from counted_resets
    group by account, metric, snapshot_date
),

cycles as (
    select
        r.*,
        coalesce(e.resets_62d, 0) as resets_62d,
        coalesce(e.cycles_observed, 0) as cycles_observed,
        e.cycle_length_days,
        e.cycle_length_spread_days,
        e.cadence_changed_on,
        coalesce(
            e.latest_reset_start,
            -- a flow with no reset seen yet: the calendar month its history starts in is assumed
            case when r.metric_kind = 'flow' then cast(date_trunc('month', r.history_start) as date) end
        ) as cycle_start
    from anchored as r
    left join evidence as e
        on e.account = r.account and e.metric = r.metric and e.snapshot_date = r.snapshot_date
),

cadenced as (
    select
        *,
        case
            when resets_62d = 0 and metric_kind = 'flow' then 'calendar_month_assumed'
            when resets_62d = 0 then 'none'
            when resets_62d = 1 then 'monthly_assumed'
            when cycle_length_days between 28 and 31 then 'monthly'
            -- N is the mean cycle rounded to the nearest day (halves up), the N cycle_end uses
            else 'every_' || cast(cast(round(cycle_length_days) as integer) as varchar) || '_days'
        end as reset_cadence,
        case
            when resets_62d = 0 then 'no_reset'
            when cycles_observed = 0 then 'one_reset'
            when cycles_observed = 1 then 'seen_once'
            else 'seen_repeatedly'
        end as cadence_evidence
    from cycles
),

expected as (
    select
        *,
        case
            when reset_cadence in ('monthly', 'monthly_assumed', 'calendar_month_assumed')
                then cast(cycle_start + interval 1 month - interval 1 day as date)
            when reset_cadence like 'every_%'
                then cast(cycle_start + cast(round(cycle_length_days) as integer) - 1 as date)
        end as expected_cycle_end
    from cadenced
),

bounded as (
    select
        *,
        -- an overdue cycle (its expected end passed without a reset) has no known end
        case when expected_cycle_end >= snapshot_date then expected_cycle_end end as cycle_end,
        coalesce(expected_cycle_end < snapshot_date, false) as is_overdue
    from expected
),

burns as (
    select
        *,
        case
            when metric_kind = 'flow' and cycle_start = snapshot_date
                then usage * 1.0
            when metric_kind = 'flow' and is_reset and cycle_start is not null
                then usage * 1.0 / (date_diff('day', cycle_start, snapshot_date) + 1)
            when previous_usage is not null and not is_reset
                then (usage - previous_usage) * 1.0 / days_since_previous
        end as daily_burn
    from bounded
),

rates as (
    select
        *,
        avg(daily_burn) over last_7_days as burn_rate_mean_7d,
        median(daily_burn) over last_7_days as burn_rate_median_7d
    from burns
    window last_7_days as (
        partition by account, metric order by snapshot_date
        range between interval 6 days preceding and current row
    )
),

final as (
    select
        r.account,
        r.snapshot_date,
        r.metric,
        r.metric_kind,
        r.usage,
        r.quota_limit,
        r.remaining,
        r.usage * 100.0 / nullif(r.quota_limit, 0) as utilisation_pct,
        r.previous_usage * 100.0 / nullif(r.previous_limit, 0) as previous_utilisation_pct,
        r.previous_snapshot_date,
        r.days_since_previous,
        r.usage - r.previous_usage as net_change,
        r.keywords_added,
        r.keywords_removed,
        r.is_reset,
        r.quota_limit <> r.previous_limit as limit_changed,
        -- the latest limit change of the current cycle (of the 62 days for a metric without a cycle)
        case when r.latest_limit_change_62d >= coalesce(r.cycle_start, r.latest_limit_change_62d)
            then r.latest_limit_change_62d
        end as limit_changed_on,
        -- unknown (null) without a previous snapshot, or when either limit is 0 (no utilisation to compare)
        case when r.previous_usage is not null and r.previous_limit <> 0 and r.quota_limit <> 0 then
            r.previous_usage * 100.0 / r.previous_limit < 80
            and r.usage * 100.0 / r.quota_limit >= 80
        end as crossed_80_pct,
        case when r.previous_usage is not null and r.previous_limit <> 0 and r.quota_limit <> 0 then
            r.previous_usage * 100.0 / r.previous_limit < 100
            and r.usage * 100.0 / r.quota_limit >= 100
        end as crossed_100_pct,
        r.reset_cadence,
        r.cadence_evidence,
        r.cycles_observed,
        r.cycle_length_days,
        r.cycle_length_spread_days,
        r.cadence_changed_on,
        r.cycle_start,
        r.expected_cycle_end,
        r.cycle_end,
        r.is_overdue,
        case when r.is_overdue then date_diff('day', r.expected_cycle_end, r.snapshot_date) else 0 end
            as days_overdue,
        date_diff('day', r.cycle_start, r.snapshot_date) + 1 as cycle_days_elapsed,
        date_diff('day', r.snapshot_date, r.cycle_end) as cycle_days_left,
        r.daily_burn,
        r.burn_rate_mean_7d,
        r.burn_rate_median_7d,
        case when r.metric_kind = 'flow' and r.cycle_start is not null
            then r.usage * 1.0 / (date_diff('day', r.cycle_start, r.snapshot_date) + 1)
        end as cycle_average_burn,
        case when r.cycle_end is not null and r.burn_rate_median_7d is not null
            then r.usage + greatest(r.burn_rate_median_7d, 0) * date_diff('day', r.snapshot_date, r.cycle_end)
        end as projected_usage_at_cycle_end,
        case
            -- out of quota with a reset still to come (overdue included)
            when r.remaining <= 0 and r.expected_cycle_end is not null then true
            when r.cycle_end is not null and r.burn_rate_median_7d is not null
                then r.usage + greatest(r.burn_rate_median_7d, 0) * date_diff('day', r.snapshot_date, r.cycle_end) >= r.quota_limit
        end as runs_out_before_reset,
        case
            when r.remaining <= 0 then r.snapshot_date
            when r.burn_rate_median_7d > 0
                and (r.cycle_end is null
                     or r.snapshot_date + cast(ceil(r.remaining / r.burn_rate_median_7d) as integer) <= r.cycle_end)
                then r.snapshot_date + cast(ceil(r.remaining / r.burn_rate_median_7d) as integer)
        end as projected_exhaustion_date
    from rates as r
)

select * from final
