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


def check_partition(day: date) -> date:
    """Refuse a date outside the daily partitions (:data:`rank_pipeline.defs.partitions.PARTITIONS_START`..today)."""
    from rank_pipeline.settings import PARTITIONS_START

    first, last = date.fromisoformat(PARTITIONS_START), today()
    if not first <= day <= last:
        raise UsageError(f"--date {day} is outside the daily partitions: pass a date from {first} to {last} "
                         "(today, UTC)")
    return day
