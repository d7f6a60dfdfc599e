"""Data tests of models and seeds (the ``tests`` of their ``.yml``), each one Dagster asset check: a SELECT of
the failing rows, run on any engine (:func:`run_tests`) over the days :func:`test_days` decides, for every
engine. Kinds and what they count: docs/concepts/models.md, "Data tests".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from datetime import time as dt_time
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import sqlglot

from rank_pipeline.transform.errors import TestExecutionError
from rank_pipeline.transform.nodes import Model, PipelineTable, Seed, TestSpec
from rank_pipeline.transform.sql import quote_ident as _qi

if TYPE_CHECKING:
    from rank_pipeline.transform.primitives import BuildResult, ModelEngine

Tested = Model | Seed | PipelineTable
"""What has ``.yml`` tests: a model, a seed, or a table the pipeline writes (``sources/<name>.yml``)."""

__all__ = ["TestResult", "failure_counts_sql", "json_safe", "partition_column", "run_tests", "test_days",
           "test_sql"]


@dataclass(frozen=True)
class TestResult:
    """Outcome of one data test: ``name`` (the asset check's), ``passed``, ``failures`` (failing rows, or
    duplicated values or combinations), ``sample_rows`` (JSON-safe dicts), ``sql`` (the SELECT that ran, in the
    engine's dialect), ``blocking``, ``kind`` and ``column`` (None for model-level tests).
    """

    __test__ = False  # not a pytest test class

    name: str
    passed: bool
    failures: int
    sample_rows: list[dict[str, Any]] = field(default_factory=list)
    sql: str = ""
    blocking: bool = False
    kind: str = ""
    column: str | None = None


def _literal(value: Any) -> str:
    return sqlglot.exp.convert(value).sql(dialect="duckdb")


def partition_column(relation: Tested) -> str:
    """The name of the column a daily test scopes by: the incremental ``date_column``, else ``snapshot_date``
    (a relation without that column is tested whole). Reads only the model's ``.yml`` (no warehouse); raises
    nothing."""
    incremental = getattr(relation, "incremental", None)
    return incremental.date_column if incremental is not None else "snapshot_date"


def _relation_sql(relation: Tested, partition_date: date | None, until: date | None = None) -> str:
    base = f"{_qi(relation.schema)}.{_qi(relation.name)}"
    if partition_date is None:
        return base
    column = partition_column(relation)
    if until is None or until == partition_date:
        return f"(select * from {base} where {_qi(column)} = date '{partition_date.isoformat()}')"
    return (f"(select * from {base} where {_qi(column)} between date '{partition_date.isoformat()}' "
            f"and date '{until.isoformat()}')")


def failure_counts_sql(sqls: Sequence[str]) -> str:
    """One SELECT of ``(test_index, failures)`` rows, one a SELECT of ``sqls`` (its position, its row count):
    how an engine counts a relation's failing rows in one query (:meth:`ModelEngine.failing_rows`)."""
    return "\nunion all\n".join(f"select {i} as test_index, count(*) as failures from (\n{sql}\n) as failing"
                                 for i, sql in enumerate(sqls))


def json_safe(value: Any) -> Any:
    """``value`` with dates, times, decimals, UUIDs and bytes made JSON-serializable (ISO text, float, str),
    recursively through lists, tuples and dicts: failing rows go to check metadata as JSON."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, datetime | date | dt_time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    return str(value)  # UUID, timedelta, intervals and anything else DuckDB returns


def _column(test: TestSpec) -> str:
    """The quoted column of a column test (``not_null``, ``unique``, ``accepted_values``, ``relationships``).

    Raises:
        ValueError: the test names no column (the project loader gives every column test one).
    """
    if test.column is None:
        raise ValueError(f"test {test.name}: a {test.kind} test needs a column")
    return _qi(test.column)


def test_sql(relation: Tested, test: TestSpec, partition_date: date | None = None, until: date | None = None) -> str:
    """The DuckDB SELECT of failing rows for ``test`` on ``relation`` (docs/concepts/models.md, "Data
    tests"), over the days
    ``partition_date .. until`` (``until`` default ``partition_date``; None: the whole relation) of its
    :func:`partition_column`, which the relation must have."""
    rel = _relation_sql(relation, partition_date, until)
    p = test.params
    if test.kind == "not_null":
        return f"select * from {rel} as t where {_column(test)} is null"
    if test.kind == "unique":
        c = _column(test)
        return f"select {c}, count(*) as n_rows from {rel} as t where {c} is not null group by {c} having count(*) > 1"
    if test.kind == "accepted_values":
        values = ", ".join(_literal(v) for v in p["values"])
        c = _column(test)
        return f"select * from {rel} as t where {c} is not null and {c} not in ({values})"
    if test.kind == "relationships":
        schema, _, name = p["to"].partition(".")
        c, f = _column(test), _qi(p["field"])
        return (
            f"select * from {rel} as t where t.{c} is not null and not exists "
            f"(select 1 from {_qi(schema)}.{_qi(name)} as parent where parent.{f} = t.{c})"
        )
    if test.kind == "expression":
        return f"select * from {rel} as t where ({p['expression']}) is not true"
    if test.kind == "unique_combination":
        cols = ", ".join(_qi(c) for c in p["columns"])
        return f"select {cols}, count(*) as n_rows from {rel} as t group by {cols} having count(*) > 1"
    raise TestExecutionError(f"unknown test kind {test.kind!r}")  # pragma: no cover - validated at load


def test_days(relation: Tested, built: BuildResult | None, first: date | None,
              last: date | None) -> tuple[date | None, date | None]:
    """The days the tests of ``relation`` read after ``built`` in a run of the days ``first .. last``
    (None, None: the whole relation): a seed whole; the days an incremental build rebuilt; else the run's
    days (both None after a full refresh)."""
    if isinstance(relation, Seed):
        return None, None
    if built is not None and built.partition_date is not None:
        return built.partition_date, built.until
    return first, last


def run_tests(engine: ModelEngine, relation: Tested, partition_date: date | None = None, *,
              until: date | None = None, sample_size: int = 5) -> list[TestResult]:
    """Run every test of ``relation`` (a :class:`Model`, :class:`Seed` or :class:`PipelineTable`) on ``engine``, in
    ``.yml`` order, over ``partition_date .. until`` (:func:`test_days`; None: the whole relation, as for one
    without :func:`partition_column`), keeping ``sample_size`` failing rows each.

    Raises TestExecutionError: a test's SQL failed (e.g. a missing relation or column), naming the test.
    """
    if not relation.tests:
        return []
    if partition_date is not None and partition_column(relation) not in {
            column for column, _ in engine.column_types(relation.qualified_name)}:
        partition_date = until = None  # no partition column: every test reads the whole relation
    sqls = [test_sql(relation, t, partition_date, until) for t in relation.tests]
    try:
        found = engine.failing_rows(sqls, sample_size)
    except TestExecutionError as exc:
        if exc.index is None:
            raise
        test = relation.tests[exc.index]
        raise TestExecutionError(
            f"test {test.name} of {relation.qualified_name} could not run on {engine.name}: {exc}. Is it built? "
            f"SQL:\n{engine.render(sqls[exc.index])}", exc.index) from exc
    return [TestResult(name=t.name, passed=failures == 0, failures=failures, sample_rows=sample,
                       sql=engine.render(sql), blocking=t.blocking, kind=t.kind, column=t.column)
            for t, sql, (failures, sample) in zip(relation.tests, sqls, found, strict=True)]
