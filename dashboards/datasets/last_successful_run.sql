-- Data health: the last run that succeeded (whatever the date range), from ops.run_history.
select
    max(ended_at) as last_success_at,
    arg_max(job_name, ended_at) as job_name,
    arg_max(launched_by, ended_at) as launched_by,
    max(snapshot_date) filter (where ended_at = (select max(ended_at) from ops.run_history where status = 'success'))
        as snapshot_date,
    round(arg_max(duration_s, ended_at), 1) as duration_s
from ops.run_history
where status = 'success'
