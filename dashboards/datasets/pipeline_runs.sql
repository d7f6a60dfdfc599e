-- Data health: one row per pipeline run (ops.run_history has one row per run and partition; run-level
-- columns repeat on a multi-day run's rows, per-day figures are summed). run_date: the UTC day it started.
select
    run_id,
    any_value(job_name) as job_name,
    any_value(launched_by) as launched_by,
    any_value(status) as status,
    cast(timezone('UTC', any_value(started_at)) as date) as run_date,
    any_value(started_at) as started_at,
    any_value(ended_at) as ended_at,
    any_value(duration_s) as duration_s,
    min(snapshot_date) as first_snapshot_date,
    max(snapshot_date) as last_snapshot_date,
    count(*) as partitions,
    sum(snapshot_rows) as snapshot_rows,
    sum(requests) as requests,
    sum(rate_limited) as rate_limited,
    any_value(checks_passed) as checks_passed,
    any_value(checks_failed) as checks_failed,
    any_value(failed_checks) as failed_checks,
    any_value(failed_step) as failed_step
from ops.run_history
where started_at is not null
group by run_id
