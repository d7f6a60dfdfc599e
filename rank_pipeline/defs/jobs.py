"""The daily job (every asset, one partition per UTC day) and its schedule."""

import dagster as dg

DAILY_JOB_NAME = "daily_rank_pipeline"

daily_job = dg.define_asset_job(
    DAILY_JOB_NAME,
    selection=dg.AssetSelection.all(),
    description="Extract today's snapshots, load the raw tables, build and test the models, publish.",
    executor_def=dg.in_process_executor,
)

daily_schedule = dg.build_schedule_from_partitioned_job(
    daily_job,
    hour_of_day=6,
    minute_of_hour=15,
    description="Every day at 06:15 UTC: the partition of that day (the API tells only the present).",
)
