"""Every Dagster step key and run tag this project reads or writes by name, declared once (``dagster/...``
tags are Dagster's, ``rank_pipeline/...`` the project's), so one edit renames a step everywhere.
"""

from __future__ import annotations

__all__ = ["AUTO_MATERIALIZE_TAG", "BACKFILL_TAG", "BOOT_TAG", "EXTRACT_STEP", "HOST_TAG", "LOAD_STEP", "PARTITION_TAG",
           "PID_TAG", "PUBLISHED_PATH", "PUBLISH_STEPS", "RANGE_END_TAG", "RANGE_START_TAG", "RUN_HISTORY_PATH",
           "SCHEDULE_TAG", "SENSOR_TAG", "dimension_tag", "step_key"]

# --- Dagster's run tags -------------------------------------------------------------------------------
PARTITION_TAG = "dagster/partition"
"""The partition key of a run of one partition (a day, or ``<day>|<shard>`` for a day x shard key)."""
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
"""The first and last partition of a single-run backfill of a range."""
BACKFILL_TAG = "dagster/backfill"
SCHEDULE_TAG = "dagster/schedule_name"
SENSOR_TAG = "dagster/sensor_name"
AUTO_MATERIALIZE_TAG = "dagster/auto_materialize"


def dimension_tag(dimension: str) -> str:
    """The tag Dagster gives a run of a multi-partition key for one ``dimension`` (``dagster/partition/date``)."""
    return f"{PARTITION_TAG}/{dimension}"


# --- the project's process tags ----------------------------------------------------------------------
PID_TAG = "rank_pipeline/pid"
HOST_TAG = "rank_pipeline/host"
BOOT_TAG = "rank_pipeline/boot_id"
"""The process that runs a run: its pid, host name and the machine's boot id, recorded by every run
(:func:`rank_pipeline.defs.process_tags.record_process_tags`) so a run whose process is gone can be marked
failed; a ``rank-pipeline run`` of the command line is known by its pid tag."""


# --- the project's step keys ---------------------------------------------------------------------------
EXTRACT_STEP = "extract_snapshots"
"""The op of the ``snapshots/*`` multi-asset (one extraction step for every endpoint)."""
LOAD_STEP = "load_raw_tables"
"""The op of the ``raw/*`` multi-asset (one load step for every raw table)."""
RUN_HISTORY_PATH: tuple[str, ...] = ("ops", "run_history")
PUBLISHED_PATH: tuple[str, ...] = ("warehouse", "published")
"""The asset keys (paths) of the run history and of the published warehouse."""


def step_key(path: tuple[str, ...]) -> str:
    """The step key of a single asset with key ``path``, as Dagster makes it."""
    return "__".join(path)


PUBLISH_STEPS: tuple[str, ...] = (step_key(RUN_HISTORY_PATH), step_key(PUBLISHED_PATH))
"""The steps of the publish stage: the run history is written just before the published file."""
