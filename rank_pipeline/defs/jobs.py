"""The daily job (every asset, one partition per UTC day) and its schedule."""

import dagster as dg

from rank_pipeline.defs.model_assets import FULL_REFRESH_TAG

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

REBUILD_JOB_NAME = "rebuild_from_snapshots"

rebuild_job = dg.define_asset_job(
    REBUILD_JOB_NAME,
    selection=dg.AssetSelection.all() - dg.AssetSelection.groups("snapshots"),
    description="Rebuild the raw tables and models of the selected days from the Parquet snapshots "
                "(no API call), later days within each model's horizon included, then publish. Launch it "
                "as a backfill over a range of days (one run). Same as `rank-pipeline rebuild --from D1 "
                "--to D2` (rank_pipeline.rebuild).",
    executor_def=dg.in_process_executor,
)

rebuild_full_refresh_job = dg.define_asset_job(
    "rebuild_full_refresh",
    selection=dg.AssetSelection.all() - dg.AssetSelection.groups("snapshots"),
    description="Drop and reload every raw table from all committed snapshots and build every model from "
                "scratch (launch it for any one partition), then publish: after a model's columns or a "
                "seed changed. Same as `rank-pipeline rebuild --full-refresh`.",
    tags={FULL_REFRESH_TAG: "true"},
    executor_def=dg.in_process_executor,
)
