"""The daily job (every asset, one partition per UTC day), its schedule and the rebuild jobs (the ones
``rank-pipeline rebuild`` runs); sharded (``RANK_PIPELINE_SHARDS``), the daily job leaves the extraction to
``extract_shards`` (:mod:`rank_pipeline.defs.shard_runs`)."""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg

from rank_pipeline.defs.model_assets import FULL_REFRESH_TAG
from rank_pipeline.defs.partitions import shard_partition_key
from rank_pipeline.defs.warehouse_assets import RELOAD_TAG
from rank_pipeline.settings import OpsSettings, ShardPlan

DAILY_JOB_NAME = "daily_rank_pipeline"


def build_daily_job(shards: ShardPlan | None = None) -> dg.UnresolvedAssetJobDefinition:
    """``daily_rank_pipeline``: every asset for one day; with ``shards`` (``RANK_PIPELINE_SHARDS``) every
    asset but the ``snapshots`` group, which the ``extract_shards`` job extracts per day x shard
    (:mod:`rank_pipeline.defs.shard_runs`). Its partitions are its assets' (Dagster infers them)."""
    if shards is None:
        return dg.define_asset_job(
            DAILY_JOB_NAME,
            selection=dg.AssetSelection.all(),
            description="Extract today's snapshots, load the raw tables, build and test the models, publish.",
            executor_def=dg.in_process_executor,
        )
    return dg.define_asset_job(
        DAILY_JOB_NAME,
        selection=dg.AssetSelection.all() - dg.AssetSelection.groups("snapshots"),
        description=f"Load the raw tables from the snapshots all {shards.count} shards of the day committed, "
                    "build and test the models, publish (requested by the sensor daily_run_when_shards_committed).",
        executor_def=dg.in_process_executor,
    )


daily_job = build_daily_job()

DAILY_SCHEDULE_NAME = "daily_rank_pipeline_schedule"


def build_daily_schedule(ops: OpsSettings, shards: ShardPlan | None = None,
                         shard_job: dg.UnresolvedAssetJobDefinition | None = None,
                         days: dg.DailyPartitionsDefinition | None = None) -> dg.ScheduleDefinition:
    """The daily job's schedule, on by default, ticking at ``RANK_PIPELINE_SCHEDULE_CRON`` (default ``15 6 * * *``)
    in ``RANK_PIPELINE_SCHEDULE_TIMEZONE`` (default ``UTC``); each tick requests its UTC day's partition, one run
    per shard with ``shards``, none before ``days``' first (docs/concepts/dagster.md, "The schedule").

    Raises rank_pipeline.settings.ConfigurationError: a bad cron or time zone (one line naming the variable).
    """
    if shards is not None and shard_job is None:
        raise ValueError("build_daily_schedule: shards need their shard_job")

    @dg.schedule(
        name=DAILY_SCHEDULE_NAME,
        job=daily_job if shards is None else shard_job,
        cron_schedule=ops.schedule_cron,
        execution_timezone=ops.schedule_timezone,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"At '{ops.schedule_cron}' ({ops.schedule_timezone}; RANK_PIPELINE_SCHEDULE_CRON and "
                    "RANK_PIPELINE_SCHEDULE_TIMEZONE): the daily job for the partition of the tick's UTC day "
                    "(the API tells only the present).",
    )
    def _daily(context: dg.ScheduleEvaluationContext):
        day = tick_partition_key(context.scheduled_execution_time)
        if days is not None and day < days.start.date().isoformat():
            return dg.SkipReason(f"{day} is before the first partition {days.start.date()} (partition_start)")
        if shards is None:
            return dg.RunRequest(partition_key=day)
        # a schedule tick requesting several runs names each with a run key (Dagster requires it)
        return [dg.RunRequest(run_key=str(key), partition_key=key)
                for key in (shard_partition_key(day, shard) for shard in shards.shards)]

    return _daily


def tick_partition_key(scheduled: datetime) -> str:
    """The daily partition (``YYYY-MM-DD``, UTC) of a tick scheduled at ``scheduled`` (time zone aware)."""
    return scheduled.astimezone(UTC).date().isoformat()


REBUILD_JOB_NAME = "rebuild_from_snapshots"
REBUILD_FULL_REFRESH_JOB_NAME = "rebuild_full_refresh"

rebuild_job = dg.define_asset_job(
    REBUILD_JOB_NAME,
    selection=dg.AssetSelection.all() - dg.AssetSelection.groups("snapshots"),
    description="Rebuild the raw tables and models of the selected days from the Parquet snapshots "
                "(no API call): the raw days hold what their committed snapshots hold (a day without one "
                "loses its raw rows), later days within each model's horizon are rebuilt too, then publish. "
                "Launch it as a backfill over a range of days (one run). `rank-pipeline rebuild --from D1 "
                "--to D2` runs this job.",
    tags={RELOAD_TAG: "true"},
    executor_def=dg.in_process_executor,
)

rebuild_full_refresh_job = dg.define_asset_job(
    REBUILD_FULL_REFRESH_JOB_NAME,
    selection=dg.AssetSelection.all() - dg.AssetSelection.groups("snapshots"),
    description="Drop and reload every raw table from all committed snapshots and build every model from "
                "scratch (launch it for any one partition), then publish: after a model's columns or a "
                "seed changed. `rank-pipeline rebuild --full-refresh` runs this job.",
    tags={FULL_REFRESH_TAG: "true"},
    executor_def=dg.in_process_executor,
)
