"""The warehouse's record of its own runs, ``ops.run_history``, one row per ``(run_id, snapshot_date)``:
:data:`COLUMNS` from plain :class:`RunFacts`, written by :func:`upsert` and made final by :func:`finalize`
(docs/concepts/operations.md, "Run history").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import duckdb

from rank_pipeline.operations.dagster_names import (
    AUTO_MATERIALIZE_TAG,
    BACKFILL_TAG,
    PARTITION_TAG,
    PID_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    SCHEDULE_TAG,
    SENSOR_TAG,
    dimension_tag,
)
from rank_pipeline.snapshots.schema import ENDPOINTS
from rank_pipeline.transform.sql import quote_ident, table_columns

__all__ = [
    "COLUMNS",
    "LAUNCHED_BY_TAG",
    "LAUNCH_KINDS",
    "SCHEMA",
    "STAGES",
    "STATUSES",
    "TABLE",
    "TABLE_NAME",
    "DayFigures",
    "RunFacts",
    "ensure_table",
    "finalize",
    "launched_by",
    "partition_days",
    "recorded_runs",
    "reread_passes",
    "set_checks",
    "upsert",
]

SCHEMA = "ops"
TABLE_NAME = "run_history"
TABLE = f"{SCHEMA}.{TABLE_NAME}"

LAUNCHED_BY_TAG = "rank_pipeline/launched_by"
"""Run tag naming what launched the run when Dagster's own tags do not: ``cli`` for ``rank-pipeline run``
and ``demo``."""

LAUNCH_KINDS: tuple[str, ...] = ("schedule", "backfill", "sensor", "cli", "other")
"""``launched_by`` values: a schedule tick, a backfill (launched from the UI or ``dagster job backfill``),
a sensor (automation included), the command line, anything else (the UI's launchpad, ``dagster job
execute``, Python)."""

STATUSES: tuple[str, ...] = ("success", "failure", "canceled")
"""``status`` values: Dagster's end states of a run, lower case."""

STAGES: tuple[str, ...] = ("extract", "load", "models", "publish")
"""Stages whose seconds are recorded (``<stage>_s``): the extraction step, the raw load step, every seed
and model step (their data tests included), the publish step."""

COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "VARCHAR"),
    ("snapshot_date", "DATE"),
    ("job_name", "VARCHAR"),
    ("launched_by", "VARCHAR"),
    ("status", "VARCHAR"),
    ("started_at", "TIMESTAMP WITH TIME ZONE"),
    ("ended_at", "TIMESTAMP WITH TIME ZONE"),
    ("duration_s", "DOUBLE"),
    ("partitions_in_run", "INTEGER"),
    *((f"rows_{r}", "BIGINT") for r in ENDPOINTS),
    ("snapshot_rows", "BIGINT"),
    ("requests", "BIGINT"),
    ("rate_limited", "BIGINT"),
    ("retries", "BIGINT"),
    ("reread_passes", "BIGINT"),
    ("checks_passed", "INTEGER"),
    ("checks_failed", "INTEGER"),
    ("failed_checks", "VARCHAR"),
    *((f"{s}_s", "DOUBLE") for s in STAGES),
    ("failed_step", "VARCHAR"),
    ("failure_reason", "VARCHAR"),
    ("final", "BOOLEAN"),
    ("recorded_at", "TIMESTAMP WITH TIME ZONE"),
)
"""``(column, DuckDB type)`` of :data:`TABLE`, in order (``rows_<resource>`` for every snapshot resource)."""

_REASON_CHARS = 300


@dataclass
class DayFigures:
    """What a run's extraction did for one day: ``rows`` (``{resource: snapshot rows}``), the day's HTTP
    ``requests``, ``rate_limited`` (429s) and ``retries`` over every account, and ``reread_passes``.
    """

    rows: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    rate_limited: int = 0
    retries: int = 0
    reread_passes: int = 0


@dataclass
class RunFacts:
    """One run as recorded in :data:`TABLE`, one row per day of :attr:`days`: times timezone-aware;
    ``stage_seconds``: each of :data:`STAGES` reached, in seconds; ``figures``: a day's :class:`DayFigures`
    (absent: nothing extracted, NULL); ``final`` false for a running run's own provisional row.
    """

    run_id: str
    job_name: str
    status: str
    launched_by: str
    started_at: datetime | None
    ended_at: datetime | None
    days: list[date]
    figures: dict[date, DayFigures] = field(default_factory=dict)
    checks_passed: int = 0
    checks_failed: int = 0
    failed_checks: list[str] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    failed_step: str | None = None
    failure_reason: str | None = None
    final: bool = True

    @property
    def duration_s(self) -> float | None:
        """Seconds from start to end; None when either is unknown."""
        if self.started_at is None or self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()

    @property
    def reason(self) -> str | None:
        """:attr:`failure_reason` on one line, at most 300 characters."""
        return " ".join(self.failure_reason.split())[:_REASON_CHARS] if self.failure_reason else self.failure_reason

    @property
    def failed_checks_text(self) -> str | None:
        """:attr:`failed_checks` joined with ``; ``, at most 300 characters; None when none failed."""
        return "; ".join(self.failed_checks)[:_REASON_CHARS] if self.failed_checks else None

    def rows(self, recorded_at: datetime) -> list[tuple]:
        """The table rows of this run, one per day, as tuples in :data:`COLUMNS` order."""
        duration, reason = self.duration_s, self.reason
        out = []
        for day in self.days:
            fig = self.figures.get(day)
            per_resource = [fig.rows.get(r) if fig is not None else None for r in ENDPOINTS]
            out.append((
                self.run_id, day, self.job_name, self.launched_by, self.status, self.started_at, self.ended_at,
                duration, len(self.days), *per_resource,
                sum(fig.rows.values()) if fig is not None else None,
                *((fig.requests, fig.rate_limited, fig.retries, fig.reread_passes) if fig is not None
                  else (None,) * 4),
                self.checks_passed, self.checks_failed, self.failed_checks_text,
                *(self.stage_seconds.get(s) for s in STAGES),
                self.failed_step, reason, self.final, recorded_at,
            ))
        return out


def launched_by(tags: Mapping[str, str]) -> str:
    """What launched a run, from its tags (one of :data:`LAUNCH_KINDS`): ``backfill``, ``schedule``, ``sensor``
    (a sensor or auto-materialize tag), ``cli`` (:data:`LAUNCHED_BY_TAG` or ``rank_pipeline/pid``), else ``other``.
    """
    if tags.get(BACKFILL_TAG):
        return "backfill"
    if tags.get(SCHEDULE_TAG):
        return "schedule"
    if tags.get(SENSOR_TAG) or tags.get(AUTO_MATERIALIZE_TAG):
        return "sensor"
    if tags.get(LAUNCHED_BY_TAG) == "cli" or tags.get(PID_TAG):
        return "cli"
    return "other"


def partition_days(tags: Mapping[str, str]) -> list[date]:
    """The days of a run's partition (``dagster/partition``; for a day x shard partition its date,
    ``dagster/partition/date``) or partition range (``dagster/asset_partition_range_start`` .. ``_end``),
    ascending; empty when it has neither or they are not dates."""
    try:
        if tags.get(PARTITION_TAG):
            return [date.fromisoformat(tags.get(dimension_tag("date")) or tags[PARTITION_TAG])]
        start, end = tags.get(RANGE_START_TAG), tags.get(RANGE_END_TAG)
        if start and end:
            first, last = date.fromisoformat(start), date.fromisoformat(end)
            return [first + timedelta(days=i) for i in range((last - first).days + 1)]
    except ValueError:
        pass
    return []


def reread_passes(passes: Iterable[int]) -> int:
    """Passes beyond the first over the lists read, ``sum(passes - 1)``: a quiet one-page list adds 0, a quiet
    longer one 1 (the confirming pass, spec "Limits" rules 4-6), a shifting one one per extra pass.
    """
    return sum(max(0, p - 1) for p in passes)


def ensure_table(con: duckdb.DuckDBPyConnection) -> None:
    """Create schema ``ops`` and :data:`TABLE` if absent, and add any column of :data:`COLUMNS` it lacks
    (a resource added to the catalogue). Never drops a row or a column."""
    con.execute(f"create schema if not exists {SCHEMA}")
    present = table_columns(con, SCHEMA, TABLE_NAME)
    if not present:
        cols = ", ".join(f"{quote_ident(n)} {t}" for n, t in COLUMNS)
        con.execute(f"create table if not exists {TABLE} ({cols})")
        return
    for name, typ in COLUMNS:
        if name not in present:
            con.execute(f"alter table {TABLE} add column {quote_ident(name)} {typ}")


def recorded_runs(con: duckdb.DuckDBPyConnection) -> dict[str, bool]:
    """``{run id: whether its rows are final}`` of every run in :data:`TABLE` (final: written from the record
    of the finished run; not final: the provisional rows a running run wrote of itself)."""
    ensure_table(con)
    return {r[0]: bool(r[1]) for r in con.execute(f"select run_id, bool_and(final) from {TABLE} group by run_id").fetchall()}


def _update_run(con: duckdb.DuckDBPyConnection, run_id: str, values: Mapping[str, object], where: str = "") -> int:
    """Set the run-level ``values`` (``{column: value}``) on every row of ``run_id`` (and ``where``); rows changed."""
    sets = ", ".join(f"{quote_ident(c)} = ?" for c in values)
    row = con.execute(f"update {TABLE} set {sets} where run_id = ?{where}", [*values.values(), run_id]).fetchone()
    return int(row[0]) if row else 0


def finalize(con: duckdb.DuckDBPyConnection, run: RunFacts, recorded_at: datetime | None = None) -> int:
    """Make a successful run's provisional rows final, keeping their per-day figures and checks; run-level
    columns come from ``run`` (its step events), ``final`` true, ``recorded_at`` (default now, UTC).
    Returns the rows made final (0 without provisional rows; docs/concepts/operations.md, "Run history").
    """
    values = {"status": run.status, "ended_at": run.ended_at, "duration_s": run.duration_s,
              **{f"{s}_s": run.stage_seconds.get(s) for s in STAGES},
              "failed_step": run.failed_step, "failure_reason": run.reason, "final": True,
              "recorded_at": recorded_at or datetime.now(UTC)}
    return _update_run(con, run.run_id, values, " and not final")


def set_checks(con: duckdb.DuckDBPyConnection, run: RunFacts) -> int:
    """Set the checks columns (passed, failed, the failed checks' names) of the rows of ``run`` from it,
    e.g. after its ``ops/run_history`` step ran its own tests; rows changed."""
    return _update_run(con, run.run_id, {"checks_passed": run.checks_passed, "checks_failed": run.checks_failed,
                                         "failed_checks": run.failed_checks_text})


def upsert(con: duckdb.DuckDBPyConnection, runs: Sequence[RunFacts], recorded_at: datetime | None = None) -> int:
    """Replace the rows of each run of ``runs`` (one with no day skipped) in one transaction on ``con`` (the build
    file's writer, idle; the caller holds the lock); returns the rows written (``recorded_at``: default now, UTC).
    """
    ensure_table(con)
    recorded_at = recorded_at or datetime.now(UTC)
    rows = [row for run in runs for row in run.rows(recorded_at)]
    ids = sorted({run.run_id for run in runs if run.days})
    names = ", ".join(quote_ident(n) for n, _ in COLUMNS)
    marks = ", ".join("?" for _ in COLUMNS)
    con.begin()
    try:
        if ids:
            con.execute(f"delete from {TABLE} where run_id in (select unnest(?::varchar[]))", [ids])
        if rows:
            con.executemany(f"insert into {TABLE} ({names}) values ({marks})", rows)
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return len(rows)
