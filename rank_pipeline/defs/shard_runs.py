"""Extraction sharded as Dagster partitions (``RANK_PIPELINE_SHARDS=n``): :func:`build_shard_job`,
:func:`build_shards_committed_sensor` (the daily run once every shard of a day succeeded) and
:func:`check_partitioning`. Why a sensor: docs/concepts/dagster.md, "Sharded extraction".
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import dagster as dg

from rank_pipeline.defs.partitions import DATE_TAG, SHARD_TAG
from rank_pipeline.settings import SENSOR_INTERVAL_S, SHARDS_ENV, ConfigurationError, DataPaths, ShardPlan

__all__ = ["SHARDS_COMMITTED_SENSOR_NAME", "SHARD_JOB_NAME", "build_shard_job", "build_shards_committed_sensor",
           "check_partitioning", "committed_days", "partitioning"]

SHARD_JOB_NAME = "extract_shards"
SHARDS_COMMITTED_SENSOR_NAME = "daily_run_when_shards_committed"


def partitioning(plan: ShardPlan | None) -> str:
    """How the ``snapshots/*`` assets are partitioned: ``daily``, or ``daily x <n> shards``."""
    return "daily" if plan is None else f"daily x {plan.count} shards"


def check_partitioning(data_dir: Path, plan: ShardPlan | None, *, record: bool = False) -> None:
    """Refuse a shard plan whose partitioning differs from the folder's runs'; with ``record``, write it when none.
    Raises rank_pipeline.settings.ConfigurationError: one line naming ``RANK_PIPELINE_SHARDS``, both
    partitionings and what to do; nothing written.
    """
    path = DataPaths(data_dir).partitioning_record
    wanted = partitioning(plan)
    try:
        recorded = json.loads(path.read_text())["snapshot_assets"]
    except FileNotFoundError:
        recorded = None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigurationError(f"cannot read {path} ({exc}): restore it, or remove it to adopt the current "
                                 f"{SHARDS_ENV} setting") from exc
    if recorded is not None and recorded != wanted:
        before = recorded.removeprefix("daily x ").removesuffix(" shards") if recorded != "daily" else None
        back = f"set {SHARDS_ENV}={before}" if before else f"unset {SHARDS_ENV}"
        raise ConfigurationError(
            f"{SHARDS_ENV}={plan.count if plan else 'unset'} would partition the snapshot assets {wanted}, but "
            f"the runs of {data_dir} were partitioned {recorded}, and Dagster would strand their partition "
            f"history: {back}, or use a new data folder (RANK_PIPELINE_DATA_DIR) for the new partitioning")
    if recorded is None and record:
        data_dir.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")  # shard runs may record at once
        partial.write_text(json.dumps({"snapshot_assets": wanted}) + "\n")
        os.replace(partial, path)


KEEP_REQUESTED = 400
"""How many requested days the sensor's cursor remembers (more than a year of days)."""
RUNS_LOOKED_AT = 2000
"""How many of the latest successful shard runs a tick reads."""


def build_shard_job(plan: ShardPlan) -> dg.UnresolvedAssetJobDefinition:
    """``extract_shards``: the ``snapshots/*`` assets (partitioned by day x shard,
    :func:`rank_pipeline.defs.partitions.shard_partitions`) for one partition per run."""
    return dg.define_asset_job(
        SHARD_JOB_NAME,
        selection=dg.AssetSelection.groups("snapshots"),
        description=f"Extract one shard of {plan.count} for one day (RANK_PIPELINE_SHARDS): the shard's accounts, "
                    "its own budget, its shard manifests. The shards of a day run as parallel runs; the "
                    f"daily run follows once all have committed ({SHARDS_COMMITTED_SENSOR_NAME}).",
        executor_def=dg.in_process_executor,
    )


def committed_days(instance: dg.DagsterInstance, plan: ShardPlan) -> list[str]:
    """The days (``YYYY-MM-DD``, ascending) every shard of ``plan`` extracted in a successful run
    (tags ``dagster/partition/date`` and ``dagster/partition/shard``), among the latest
    :data:`RUNS_LOOKED_AT` successful shard runs. A shard run whose blocking ``complete`` check failed
    is not successful, so its day waits."""
    keys = [s.key for s in plan.shards]
    records = instance.get_run_records(
        dg.RunsFilter(statuses=[dg.DagsterRunStatus.SUCCESS], tags={SHARD_TAG: keys}), limit=RUNS_LOOKED_AT)
    shards_of: dict[str, set[str]] = defaultdict(set)
    for record in records:
        tags = record.dagster_run.tags
        if tags.get(DATE_TAG):
            shards_of[tags[DATE_TAG]].add(tags[SHARD_TAG])
    return sorted(day for day, shards in shards_of.items() if shards >= set(keys))


def build_shards_committed_sensor(plan: ShardPlan, daily_job) -> dg.SensorDefinition:
    """``daily_run_when_shards_committed``: every :data:`~rank_pipeline.settings.SENSOR_INTERVAL_S` s, one run of
    ``daily_job`` per day of :func:`committed_days` not requested before (cursor of :data:`KEEP_REQUESTED`
    days, run key ``shards-committed-<day>``); a day re-extracted later is launched by hand.
    """

    @dg.sensor(name=SHARDS_COMMITTED_SENSOR_NAME, job=daily_job, minimum_interval_seconds=SENSOR_INTERVAL_S,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description=f"Requests the daily run of a day once all {plan.count} shards of the day have "
                           f"committed (a successful {SHARD_JOB_NAME} run each); once per day.")
    def daily_run_when_shards_committed(context: dg.SensorEvaluationContext):
        requested = json.loads(context.cursor) if context.cursor else []
        new = [day for day in committed_days(context.instance, plan) if day not in requested]
        if not new:
            return dg.SkipReason(f"no day with all {plan.count} shards committed that was not requested yet")
        context.update_cursor(json.dumps((requested + new)[-KEEP_REQUESTED:]))
        return [dg.RunRequest(run_key=f"shards-committed-{day}", partition_key=day) for day in new]

    return daily_run_when_shards_committed
