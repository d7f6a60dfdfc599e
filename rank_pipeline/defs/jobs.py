"""The daily job (every asset, one partition per UTC day), its schedule and the rebuild jobs."""

from datetime import UTC, datetime

import dagster as dg

from rank_pipeline.defs.model_assets import FULL_REFRESH_TAG
from rank_pipeline.settings import OpsSettings

DAILY_JOB_NAME = "daily_rank_pipeline"

daily_job = dg.define_asset_job(
    DAILY_JOB_NAME,
    selection=dg.AssetSelection.all(),
    description="Extract today's snapshots, load the raw tables, build and test the models, publish.",
    executor_def=dg.in_process_executor,
)

DAILY_SCHEDULE_NAME = "daily_rank_pipeline_schedule"


def build_daily_schedule(ops: OpsSettings | None = None) -> dg.ScheduleDefinition:
    """The daily job's schedule, on by default: when ``RANK_PIPELINE_SCHEDULE_CRON`` (5 fields, default
    ``15 6 * * *``) ticks in ``RANK_PIPELINE_SCHEDULE_TIMEZONE`` (IANA name, default ``UTC``).

    Each tick requests one run of the partition of the UTC day of its scheduled time (partitions are UTC
    days, :mod:`rank_pipeline.defs.partitions`; the API tells only the present, spec "Snapshots"), so
    with a time zone ahead of or behind UTC a tick near midnight requests the UTC day, not the local one.
    Dagster tags the run ``dagster/schedule_name`` and ``dagster/partition``. Runs of two ticks never
    overlap in effect: a run waits for the data folder's writer lock.

    Raises:
        rank_pipeline.settings.ConfigurationError: a bad cron or time zone setting (one line naming the
            variable); this fails the loading of ``workspace.yaml``.
    """
    ops = ops if ops is not None else OpsSettings.from_env()

    @dg.schedule(
        name=DAILY_SCHEDULE_NAME,
        job=daily_job,
        cron_schedule=ops.schedule_cron,
        execution_timezone=ops.schedule_timezone,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"At '{ops.schedule_cron}' ({ops.schedule_timezone}; RANK_PIPELINE_SCHEDULE_CRON and "
                    "RANK_PIPELINE_SCHEDULE_TIMEZONE): the daily job for the partition of the tick's UTC day "
                    "(the API tells only the present).",
    )
    def _daily(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        return dg.RunRequest(partition_key=tick_partition_key(context.scheduled_execution_time))

    return _daily


def tick_partition_key(scheduled: datetime) -> str:
    """The daily partition (``YYYY-MM-DD``, UTC) of a tick scheduled at ``scheduled`` (time zone aware)."""
    return scheduled.astimezone(UTC).date().isoformat()


daily_schedule = build_daily_schedule()

REBUILD_JOB_NAME = "rebuild_from_snapshots"

rebuild_job = dg.define_asset_job(
    REBUILD_JOB_NAME,
    selection=dg.AssetSelection.all() - dg.AssetSelection.groups("snapshots"),
    description="Rebuild the raw tables and models of the selected days from the Parquet snapshots "
                "(no API call), later days within each model's horizon included, then publish. Launch it "
                "as a backfill over a range of days (one run). Same as `rank-pipeline rebuild --from D1 "
                "--to D2` (rank_pipeline.steps.rebuild).",
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
