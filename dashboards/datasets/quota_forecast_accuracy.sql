-- One row per account x quota metric x day whose billing cycle has ended (marts.fct_quota_forecast_accuracy):
-- the day's forecasts beside what happened, and their errors in days and in units. Every number is the mart's.
select
    account,
    metric,
    snapshot_date,
    reset_cadence,
    cadence_evidence,
    is_overdue,
    expected_cycle_end,
    actual_cycle_end,
    days_to_cycle_end,
    cycle_end_error_days,
    projected_usage_at_cycle_end,
    actual_usage_at_cycle_end,
    usage_error_units,
    usage_error_pct,
    projected_exhaustion_date,
    actual_exhaustion_date,
    exhaustion_error_days,
    runs_out_before_reset,
    ran_out_before_reset,
    runs_out_forecast_correct,
    limit_changed_after_forecast
from marts.fct_quota_forecast_accuracy
