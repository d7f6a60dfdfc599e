"""Argument types and checks of the command line: whole numbers, dates, the daily partitions, the version."""

from __future__ import annotations

import argparse
from datetime import UTC, date, datetime

from rank_pipeline.cli.errors import UsageError


def today() -> date:
    return datetime.now(UTC).date()


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rank-pipeline")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "unknown"


def positive_int(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of at least 1")
    return int(value)


def parse_date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date; use YYYY-MM-DD") from None


def check_partition(day: date, settings) -> date:
    """Refuse, in one line, a date after today or before the first daily partition that a setting gives
    (``partition_start``, :func:`rank_pipeline.snapshots.partition_start.partition_start`). Before a default
    start (the first snapshot day, init's day, today), or on it, the day's run makes it the first snapshot day:
    the partitions of this process start there (:func:`rank_pipeline.settings.start_partitions_at`), so a day
    that is today when the command starts stays a partition when the definitions load after midnight, UTC."""
    from rank_pipeline.settings import find_project, start_partitions_at
    from rank_pipeline.snapshots.partition_start import partition_start

    start, last = partition_start(settings, find_project()), today()
    if day < start.day and start.explicit:
        raise UsageError(f"--date {day} is before the first daily partition {start.day} ({start.source}): pass a "
                         f"date from {start.day} to {last}, or set {start.source} to {day} or earlier")
    if day <= start.day and not start.explicit:
        start_partitions_at(day)
    if day > last:
        raise UsageError(f"--date {day} is outside the daily partitions: pass a date from {start.day} to {last} "
                         "(today, UTC)")
    return day
