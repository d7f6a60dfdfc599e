"""Data tests of models and seeds (the ``tests`` of their ``.yml``); each is one Dagster asset check.

Each test is a SELECT returning the *failing* rows; the test passes when it returns none.

==================== ===================================================== ===========================
kind                 failing rows                                          ``failures`` counts
==================== ===================================================== ===========================
not_null             rows where the column is null                         rows
unique               non-null values occurring more than once              duplicated values
accepted_values      rows whose non-null value is not in ``values``        rows
relationships        rows whose non-null value is absent from ``to.field`` rows
expression           rows where the expression is not true (false or null) rows
unique_combination   combinations of the columns occurring more than once  duplicated combinations
==================== ===================================================== ===========================

Partition scope: with ``partition_date`` given, a test reads only the relation's rows of that date (its
incremental ``date_column``, else ``snapshot_date``) when the relation has that column, so a daily check
costs one day; the target of a ``relationships`` test is read whole. Without it, the whole relation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from datetime import time as dt_time
from decimal import Decimal
from typing import Any

import duckdb
import sqlglot

from rank_pipeline.transform.errors import TestExecutionError
from rank_pipeline.transform.nodes import Model, PipelineTable, Seed, TestSpec
from rank_pipeline.transform.sql import one_row, table_columns
from rank_pipeline.transform.sql import quote_ident as _qi

Tested = Model | Seed | PipelineTable
"""What has ``.yml`` tests: a model, a seed, or a table the pipeline writes (``sources/<name>.yml``)."""

__all__ = ["TestResult", "partition_column", "run_test", "run_tests", "test_sql"]


@dataclass(frozen=True)
class TestResult:
    """Outcome of one data test.

    Attributes:
        name: the test's stable name (the asset check name), e.g. ``not_null__keyword_id``.
        passed: no failing rows.
        failures: number of failing rows (or duplicated values/combinations; see module docstring).
        sample_rows: up to ``sample_size`` failing rows as dicts, JSON-safe (dates as ISO text; :func:`json_safe`).
        sql: the SELECT of failing rows that ran, to paste into the duckdb shell.
        blocking: a failure should block downstream assets.
        kind, column: the test kind and column (None for model-level tests).
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


def _has_column(con: duckdb.DuckDBPyConnection, schema: str, name: str, column: str) -> bool:
    return column in table_columns(con, schema, name)


def partition_column(relation: Tested) -> str:
    """The name of the column a daily test scopes by: the incremental ``date_column``, else ``snapshot_date``
    (a relation without that column is tested whole). Used by :func:`run_tests` here and by the Spark engine's
    ``run_tests``. Reads only the model's ``.yml`` (no warehouse); raises nothing."""
    incremental = getattr(relation, "incremental", None)
    return incremental.date_column if incremental is not None else "snapshot_date"


def _relation_sql(
    con: duckdb.DuckDBPyConnection | None, relation: Tested, partition_date: date | None,
    until: date | None = None,
) -> str:
    base = f"{_qi(relation.schema)}.{_qi(relation.name)}"
    if partition_date is None:
        return base
    column = partition_column(relation)
    if con is not None and not _has_column(con, relation.schema, relation.name, column):
        return base
    if until is None or until == partition_date:
        return f"(select * from {base} where {_qi(column)} = date '{partition_date.isoformat()}')"
    return (f"(select * from {base} where {_qi(column)} between date '{partition_date.isoformat()}' "
            f"and date '{until.isoformat()}')")


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


def test_sql(
    relation: Tested,
    test: TestSpec,
    partition_date: date | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    until: date | None = None,
) -> str:
    """The SELECT of failing rows for ``test`` on ``relation`` (see the module docstring).

    ``con`` is used only to check that the relation has the partition column; without it the partition
    filter is applied whenever ``partition_date`` is given.
    """
    rel = _relation_sql(con, relation, partition_date, until)
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


def run_test(
    con: duckdb.DuckDBPyConnection,
    relation: Tested,
    test: TestSpec,
    partition_date: date | None = None,
    *,
    until: date | None = None,
    sample_size: int = 5,
) -> TestResult:
    """Run one test; see :func:`run_tests`."""
    return _run(con, relation, test, test_sql(relation, test, partition_date, con, until), sample_size)


def _run(con: duckdb.DuckDBPyConnection, relation: Tested, test: TestSpec, sql: str,
         sample_size: int) -> TestResult:
    try:
        (failures,) = one_row(con, f"select count(*) from ({sql}) as failing")
        sample: list[dict[str, Any]] = []
        if failures:
            cur = con.execute(f"select * from ({sql}) as failing limit {int(sample_size)}")
            names = [d[0] for d in cur.description]
            sample = [json_safe(dict(zip(names, row, strict=True))) for row in cur.fetchall()]
    except duckdb.Error as exc:
        raise TestExecutionError(
            f"test {test.name} of {relation.qualified_name} could not run: {exc}. Is the model built? SQL:\n{sql}"
        ) from exc
    return TestResult(
        name=test.name, passed=failures == 0, failures=int(failures), sample_rows=sample, sql=sql,
        blocking=test.blocking, kind=test.kind, column=test.column,
    )


def run_tests(
    con: duckdb.DuckDBPyConnection,
    relation: Tested,
    partition_date: date | None = None,
    *,
    until: date | None = None,
    sample_size: int = 5,
) -> list[TestResult]:
    """Run every test of a model or seed, in ``.yml`` order.

    Args:
        con: a connection where the relation (and relationships targets) exist.
        relation: a :class:`Model` or :class:`Seed`.
        partition_date: restrict to one partition (module docstring), or None for the whole relation.
        until: with ``partition_date``, restrict to the days ``partition_date .. until`` instead.
        sample_size: failing rows to keep per test (JSON-safe: dates as ISO text, see :func:`json_safe`).

    Raises:
        TestExecutionError: a test's SQL failed (e.g. the relation or a column does not exist).
    """
    if partition_date is not None and relation.tests and not _has_column(
            con, relation.schema, relation.name, partition_column(relation)):
        partition_date = until = None  # no partition column: every test reads the whole relation
    # the relation's columns are read once here, not once per test (test_sql's con=None)
    return [_run(con, relation, t, test_sql(relation, t, partition_date, None, until), sample_size)
            for t in relation.tests]
