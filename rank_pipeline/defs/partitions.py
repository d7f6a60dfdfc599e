"""Daily partitions keyed by snapshot date (UTC), today included (spec: the API tells only the present),
from the first day of the data folder (:func:`daily_partitions_from`; the start is a setting,
:func:`rank_pipeline.snapshots.partition_start`); with ``RANK_PIPELINE_SHARDS=n`` the extraction is
partitioned by day x shard (:func:`shard_partitions`)."""

import functools
import warnings
from collections.abc import Callable
from datetime import date
from typing import ParamSpec, TypeVar

import dagster as dg

from rank_pipeline.operations.dagster_names import dimension_tag
from rank_pipeline.settings import Shard, ShardPlan


@functools.cache
def daily_partitions_from(start: date) -> dg.DailyPartitionsDefinition:
    """One partition per UTC day from ``start``; ``end_offset=1`` includes today. One object per start, so the
    definitions built for one start share it."""
    return dg.DailyPartitionsDefinition(start_date=start.isoformat(), timezone="UTC", end_offset=1)


DIRECT_USE_START = date(2026, 1, 1)
daily_partitions = daily_partitions_from(DIRECT_USE_START)
"""The partitions of the assets and jobs built without settings, for direct use (``dg.materialize`` in tests):
from :data:`DIRECT_USE_START`. The definitions (:func:`rank_pipeline.defs.component.build_definitions`) build
theirs from the data folder's start instead."""

P = ParamSpec("P")
R = TypeVar("R")



def deliberate_beta(build: Callable[P, R]) -> Callable[P, R]:
    """Decorator of a function that defines assets with Dagster's beta APIs this project uses deliberately:
    while it runs, and only then, their two beta warnings are filtered (``BackfillPolicy.single_run()``
    on every partitioned asset, so a backfill of many days is one run; ``MultiToSingleDimensionPartitionMapping``,
    a daily asset reading every shard of its day). Every other warning, and these elsewhere, still shows."""

    @functools.wraps(build)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Parameter `backfill_policy` of function",
                                    category=dg.BetaWarning)
            warnings.filterwarnings("ignore", message="Class `MultiToSingleDimensionPartitionMapping` is currently "
                                    "in beta", category=dg.BetaWarning)
            return build(*args, **kwargs)

    return wrapper


DATE_DIMENSION = "date"
"""The day dimension of the shard partitions (:func:`shard_partitions`): the daily partition key."""
SHARD_DIMENSION = "shard"
"""The shard dimension of the shard partitions: ``<i>-of-<n>`` (:attr:`rank_pipeline.settings.Shard.key`)."""
SHARD_TAG = dimension_tag(SHARD_DIMENSION)
"""The tag Dagster gives a run of one shard partition (its shard key); a daily run has none."""
DATE_TAG = dimension_tag(DATE_DIMENSION)
"""The tag Dagster gives a run of one shard partition (its day)."""


def shard_partitions(plan: ShardPlan, days: dg.DailyPartitionsDefinition = daily_partitions
                     ) -> dg.MultiPartitionsDefinition:
    """Day x shard (``RANK_PIPELINE_SHARDS``): the daily partitions ``days`` and a static dimension ``0-of-n`` ..
    ``<n-1>-of-n``. A key reads ``2026-03-02|0-of-2`` (dimensions in name order: date, shard)."""
    return dg.MultiPartitionsDefinition({
        DATE_DIMENSION: days,
        SHARD_DIMENSION: dg.StaticPartitionsDefinition([s.key for s in plan.shards]),
    })


def shard_partition_key(day: str, shard: Shard) -> dg.MultiPartitionKey:
    """The partition of ``shard`` on ``day`` (``YYYY-MM-DD``) in :func:`shard_partitions`."""
    return dg.MultiPartitionKey({DATE_DIMENSION: day, SHARD_DIMENSION: shard.key})


@deliberate_beta
def date_dependency(key: dg.AssetKey, plan: ShardPlan | None) -> dg.AssetKey | dg.AssetDep:
    """A daily asset's dependency on the extraction asset ``key``: as it is unsharded; sharded, on every
    shard of the same day (``MultiToSingleDimensionPartitionMapping`` on the date dimension)."""
    if plan is None:
        return key
    return dg.AssetDep(key, partition_mapping=dg.MultiToSingleDimensionPartitionMapping(
        partition_dimension_name=DATE_DIMENSION))
