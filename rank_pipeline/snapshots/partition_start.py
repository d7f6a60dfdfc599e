"""The first daily partition of a data folder (:func:`partition_start`): the setting, else the first committed
snapshot day, else the project's day, else today; a setting after the first snapshot day is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from rank_pipeline.settings import ConfigurationError, Settings, UserProject
from rank_pipeline.snapshots.reader import list_snapshot_dates
from rank_pipeline.snapshots.schema import ENDPOINTS
from rank_pipeline.snapshots.storage import Store

__all__ = ["FIRST_SNAPSHOT", "INIT_DAY", "TODAY", "PartitionStart", "first_snapshot_day", "partition_start"]


@dataclass(frozen=True)
class PartitionStart:
    """The first daily partition (UTC) and where it comes from, as messages name it: the variable or the
    ``defs.yaml`` attribute that set it, ``the first snapshot day``, ``the project's init day`` or ``today``."""

    day: date
    source: str

    @property
    def explicit(self) -> bool:
        """Whether a setting gave the start (rather than a default)."""
        return self.source not in (FIRST_SNAPSHOT, INIT_DAY, TODAY)


FIRST_SNAPSHOT = "the first snapshot day"
INIT_DAY = "the project's init day"
TODAY = "today"


def first_snapshot_day(root: Path | str | Store) -> date | None:
    """The earliest day any endpoint has a committed snapshot under ``root``; None when there is none."""
    firsts = [days[0] for days in (list_snapshot_dates(root, endpoint) for endpoint in ENDPOINTS) if days]
    return min(firsts, default=None)


def partition_start(settings: Settings, project: UserProject | None = None,
                    today: date | None = None) -> PartitionStart:
    """The first daily partition: ``settings.ops.partition_start`` when set; else the data folder's first
    committed snapshot day; else ``project.started``; else ``today`` (default: today, UTC).

    Raises ConfigurationError: the setting is after the first committed snapshot day (one line: the
    partitions it would drop, and what to set instead).
    """
    first = first_snapshot_day(settings.paths.snapshot_store_uri)
    given = settings.ops.partition_start
    if given is not None:
        if first is not None and given > first:
            where = settings.ops.partition_start_from
            raise ConfigurationError(
                f"{where} {given} is after {first}, the first committed snapshot day of {settings.data_dir}: the "
                f"materialized partitions before {given} would be dropped; set it to {first} or earlier, or "
                "remove it (the default is the first snapshot day)")
        return PartitionStart(given, settings.ops.partition_start_from)
    if first is not None:
        return PartitionStart(first, FIRST_SNAPSHOT)
    if project is not None and project.started is not None:
        return PartitionStart(project.started, INIT_DAY)
    return PartitionStart(today or datetime.now(UTC).date(), TODAY)
