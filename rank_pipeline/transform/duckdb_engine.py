"""The models on DuckDB: :class:`DuckDBEngine`, the primitives of
:class:`rank_pipeline.transform.primitives.ModelEngine` on one writer connection, each one transaction
(docs/concepts/models.md, "The DuckDB engine").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date
from typing import Any

import duckdb

from rank_pipeline.transform import duckdb_raw
from rank_pipeline.transform.errors import BuildError, TestExecutionError
from rank_pipeline.transform.horizon import last_loaded_date
from rank_pipeline.transform.nodes import Model, Seed
from rank_pipeline.transform.primitives import RawLedger, RawTable
from rank_pipeline.transform.project import Project
from rank_pipeline.transform.rewrite import windowed_sql
from rank_pipeline.transform.sql import one_row, table_columns
from rank_pipeline.transform.sql import qualified as _rel
from rank_pipeline.transform.sql import quote_ident as _qi
from rank_pipeline.transform.sql import relation_kind as _relation_kind
from rank_pipeline.transform.testing import failure_counts_sql, json_safe

__all__ = ["DuckDBEngine", "incremental_sql"]


def _drop(con: duckdb.DuckDBPyConnection, schema: str, name: str) -> None:
    kind = _relation_kind(con, schema, name)
    if kind == "VIEW":
        con.execute(f"drop view {_rel(schema, name)}")
    elif kind is not None:
        con.execute(f"drop table {_rel(schema, name)}")


def _dated_relations(con: duckdb.DuckDBPyConnection, column: str) -> frozenset[tuple[str, str]]:
    """Every (schema, name) in the catalog that has ``column`` (one catalog query)."""
    rows = con.execute(
        "select table_schema, table_name from information_schema.columns "
        "where table_catalog = current_database() and column_name = ?",
        [column],
    ).fetchall()
    return frozenset((r[0], r[1]) for r in rows)


@contextmanager
def _transaction(con: duckdb.DuckDBPyConnection, failure: str) -> Iterator[None]:
    """One transaction: committed at the end, rolled back on a DuckDB error, which is raised as a
    :class:`BuildError` whose message is ``failure`` with ``{exc}`` filled in."""
    con.begin()
    try:
        yield
        con.commit()
    except duckdb.Error as exc:
        con.rollback()
        raise BuildError(failure.format(exc=exc)) from exc


def _count(con: duckdb.DuckDBPyConnection, schema: str, name: str) -> int:
    row = con.execute(f"select count(*) from {_rel(schema, name)}").fetchone()
    assert row is not None
    return int(row[0])


class DuckDBEngine:
    """The primitives on one DuckDB writer connection (made by
    :func:`rank_pipeline.warehouse.engines.open_engine` on the warehouse's build file).

    Args:
        con: the open writer connection (not inside a transaction).
        warehouse: what owns the build file: ``build_path``, ``published_path`` and ``publish(con)``
            (:mod:`rank_pipeline.warehouse.engines`); None for a bare connection (no publish).
    """

    name = "duckdb"
    persistent_views = True
    raw_ledger: RawLedger | None = None  # set while open_engine holds the engine
    reads_raw_in_place = False
    con: duckdb.DuckDBPyConnection

    def __init__(self, con: duckdb.DuckDBPyConnection, warehouse: Any = None):
        self.con = con
        self.warehouse = warehouse

    @property
    def catalog(self) -> str:
        """The catalog readers see the tables in: the published file's name (``warehouse``)."""
        return self.warehouse.published_path.stem

    @property
    def written_to(self) -> str:
        """Where the tables are written: the build file."""
        return str(self.warehouse.build_path)

    def location(self, schema: str, name: str) -> str:
        """Where ``schema.name`` is stored: the build file (until :meth:`publish`)."""
        return str(self.warehouse.build_path)

    def prepare(self, project: Project) -> None:
        """Nothing to do: earlier builds are in the build file."""

    # -------------------------------------------------------------- primitives

    def ensure_schema(self, schema: str) -> None:
        """``create schema if not exists``."""
        self.con.execute(f"create schema if not exists {_qi(schema)}")

    def render(self, duckdb_sql: str) -> str:
        """The SQL as written: DuckDB is the models' dialect."""
        return duckdb_sql

    def output_columns(self, sql: str, where: str) -> list[str]:
        """The columns ``sql`` outputs (bound, not run).

        Raises:
            BuildError: the SELECT does not bind.
        """
        try:
            return list(self.con.sql(sql).columns)
        except duckdb.Error as exc:
            raise BuildError(f"{where}: the SELECT failed: {exc}") from exc

    def last_loaded(self, project: Project) -> date | None:
        """The last day of the raw tables the project reads (:func:`rank_pipeline.transform.horizon.last_loaded_date`)."""
        return last_loaded_date(self.con, project)

    def dated_relations(self, model: Model, column: str) -> frozenset[tuple[str, str]]:
        """Every relation of the catalog that has ``column`` (the ones ``model`` reads among them)."""
        return _dated_relations(self.con, column)

    def stored_by_day(self, schema: str, name: str, date_column: str) -> bool:
        """True when ``schema.name`` is a table (whose days a delete and insert replace)."""
        return _relation_kind(self.con, schema, name) == "BASE TABLE"

    def day_span(self, relations: Iterable[tuple[str, str]], column: str) -> tuple[date, date] | None:
        """``(min, max)`` of ``column`` over the relations, in one query; None when they hold no row."""
        union = " union all ".join(f"select min({_qi(column)}) as lo, max({_qi(column)}) as hi from {_rel(s, n)}"
                                   for s, n in sorted(relations))
        if not union:
            return None
        lo, hi = one_row(self.con, f"select min(lo), max(hi) from ({union})")
        return None if lo is None else (lo, hi)

    def watermark(self, schema: str, name: str, column: str) -> Any:
        """``max(column)`` of the table; None when it is no table or has no such column."""
        if _relation_kind(self.con, schema, name) != "BASE TABLE":
            return None
        try:
            row = self.con.execute(f"select max({_qi(column)}) from {_rel(schema, name)}").fetchone()
        except duckdb.Error:
            return None  # the column is gone: rebuild
        return row[0] if row else None

    def create_view(self, schema: str, name: str, sql: str, where: str) -> None:
        """Create or replace the view ``schema.name`` (a table of that name is dropped), in one transaction.

        Raises:
            BuildError: the view's SQL does not bind; the old relation is kept.
        """
        with _transaction(self.con, f"{where}: creating the view failed: {{exc}}"):
            if _relation_kind(self.con, schema, name) == "BASE TABLE":
                self.con.execute(f"drop table {_rel(schema, name)}")
            self.con.execute(f"create or replace view {_rel(schema, name)} as\n{sql}")

    def replace_whole(self, schema: str, name: str, sql: str, where: str, *,
                      date_column: str | None = None) -> int:
        """Build ``sql`` into a side table, then replace ``schema.name`` with it in one transaction; the rows.

        Raises:
            BuildError: the SELECT failed; ``schema.name`` is unchanged.
        """
        con, side = self.con, f"__{name}__build"
        con.execute(f"drop table if exists {_rel(schema, side)}")
        try:
            con.execute(f"create table {_rel(schema, side)} as\n{sql}")
        except duckdb.Error as exc:
            con.execute(f"drop table if exists {_rel(schema, side)}")
            raise BuildError(f"{where}: the SELECT failed: {exc}. {schema}.{name} is unchanged") from exc
        con.begin()
        try:
            _drop(con, schema, name)
            con.execute(f"alter table {_rel(schema, side)} rename to {_qi(name)}")
            con.commit()
        except BaseException:
            con.rollback()
            con.execute(f"drop table if exists {_rel(schema, side)}")
            raise
        return _count(con, schema, name)

    def replace_days(self, schema: str, name: str, sql: str, where: str, date_column: str, first: date,
                     last: date) -> int:
        """Delete the days ``first .. last`` and insert ``sql``'s rows by name, in one transaction; the rows.

        Raises:
            BuildError: the SELECT or the insert failed (e.g. the model's columns changed); the table is
                unchanged.
        """
        failure = (f"{where}: incremental build of {date_column} = {first} .. {last} failed: {{exc}}. The table "
                   "is unchanged; if the model's columns changed, run a full refresh")
        with _transaction(self.con, failure):
            self.con.execute(f"delete from {_rel(schema, name)} where {_qi(date_column)} between ? and ?",
                             [first, last])
            row = self.con.execute(f"insert into {_rel(schema, name)} by name\n{sql}").fetchone()
        assert row is not None
        return int(row[0])

    def load_seed(self, seed: Seed, sql: str) -> int:
        """Create ``seeds.<name>`` from ``sql`` in one transaction; its comment records the seed's version
        and checksum.

        Raises:
            BuildError: the CSV cannot be read or a value does not fit its declared type.
        """
        comment = f"seed {seed.name} version {seed.version or '-'} sha256 {seed.checksum}".replace("'", "''")
        with _transaction(self.con, f"{seed.path}: loading seed {seed.qualified_name} failed: {{exc}}"):
            self.con.execute(f"create or replace table {_rel(seed.schema, seed.name)} as\n{sql}")
            self.con.execute(f"comment on table {_rel(seed.schema, seed.name)} is '{comment}'")
        return _count(self.con, seed.schema, seed.name)

    # -------------------------------------------------------------- raw tables

    @property
    def raw_loaded(self) -> bool:
        """True: the build file keeps the raw days loaded."""
        return True

    def load_raw(self, tables: Sequence[RawTable], first: date | None, last: date | None, *,
                 count: bool = True) -> dict[date, dict[str, int]]:
        """The days ``first .. last`` of ``tables`` replaced by the days handed, in one transaction
        (:func:`rank_pipeline.transform.duckdb_raw.load_raw`); ``{day: {table: rows}}`` of those days.

        Raises:
            RawLoadError: a day's files cannot be read or disagree with it; every table is rolled back.
        """
        return duckdb_raw.load_raw(self.con, tables, first, last)

    def replace_raw_rows(self, name: str, columns: Sequence[tuple[str, str]],
                         rows: Sequence[Mapping[str, Any]]) -> int:
        """Every row of ``raw.<name>`` replaced by ``rows`` in one transaction; the rows written."""
        return duckdb_raw.replace_raw_rows(self.con, name, columns, rows)

    # -------------------------------------------------------------- reads

    def failing_rows(self, duckdb_sqls: Sequence[str], sample_size: int = 5) -> list[tuple[int, list[dict]]]:
        """``(rows, the first sample_size rows as JSON-safe dicts)`` of each SELECT: one query counts the rows
        of all (17-31 % less CPU than a query each for the shipped models' tests), then the failing ones are
        sampled.

        Raises:
            TestExecutionError: a SELECT does not run (``index``: which).
        """
        if not duckdb_sqls:
            return []
        try:
            counts: dict[int, int] | None = dict(self.con.execute(failure_counts_sql(duckdb_sqls)).fetchall())
        except duckdb.Error:
            counts = None  # find the SELECT that does not run, below
        out: list[tuple[int, list[dict]]] = []
        for index, sql in enumerate(duckdb_sqls):
            if counts is not None and counts[index] == 0:  # passed: nothing to sample
                out.append((0, []))
                continue
            try:
                failures = counts[index] if counts is not None else one_row(
                    self.con, f"select count(*) from ({sql}) as failing")[0]
                sample: list[dict] = []
                if failures:
                    cur = self.con.execute(f"select * from ({sql}) as failing limit {max(0, int(sample_size))}")
                    names = [d[0] for d in cur.description or []]
                    sample = [json_safe(dict(zip(names, row, strict=True))) for row in cur.fetchall()]
            except duckdb.Error as exc:
                raise TestExecutionError(str(exc), index) from exc
            out.append((int(failures), sample))
        return out

    def column_types(self, qualified: str) -> list[tuple[str, str]]:
        """``[(column, DuckDB type)]`` of ``schema.name`` in the build file, in table order."""
        schema, name = qualified.split(".", 1)
        return list(table_columns(self.con, schema, name).items())

    def row_count(self, qualified: str) -> int:
        """Rows of ``schema.name`` (the whole relation)."""
        return _count(self.con, *qualified.split(".", 1))

    def publish(self):
        """Copy the build file over the published one atomically (``warehouse.publish``); returns the
        published path."""
        return self.warehouse.publish(self.con)


def incremental_sql(con: duckdb.DuckDBPyConnection, model: Model, partition_date: date,
                    until: date | None = None) -> str:
    """The SELECT an incremental build of ``model`` runs on ``con`` for the days ``partition_date .. until``
    (:func:`rank_pipeline.transform.rewrite.windowed_sql` over the relations of ``con``'s catalog that have
    the model's date column).

    Raises:
        BuildError: the model is not incremental, or ``until`` is before ``partition_date``.
    """
    column = model.incremental.date_column if model.incremental is not None else ""
    return windowed_sql(model, partition_date, until or partition_date, _dated_relations(con, column))
