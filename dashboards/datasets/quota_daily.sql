-- One row per account x snapshot day x quota metric (marts.fct_quota_cycle_daily): usage against the
-- limit, the billing cycle (start, end = the day before the next reset; null and is_overdue when the expected
-- reset has not come, with the cadence's evidence), the median daily burn over the
-- last 7 days, the usage projected at the cycle's end, whether it runs out before the reset and on which
-- day. Every number is the mart's; utilisation is utilisation_pct as a fraction (for a `.1%` format).
select
    account,
    snapshot_date,
    metric,
    metric_kind,
    usage,
    quota_limit,
    remaining,
    utilisation_pct,
    utilisation_pct / 100 as utilisation,
    daily_burn,
    burn_rate_median_7d,
    cycle_start,
    expected_cycle_end,
    cycle_end,
    cycle_days_left,
    is_overdue,
    days_overdue,
    reset_cadence,
    cadence_evidence,
    cycles_observed,
    projected_usage_at_cycle_end,
    runs_out_before_reset,
    projected_exhaustion_date
from marts.fct_quota_cycle_daily
