"""Build models and load seeds into DuckDB.

The materializations (view, table, incremental with its partition, range, fold and self-reference builds)
and the contract an incremental model must meet, so that any order of loads equals a full build, have one
home: docs/concepts/any-order.md. :func:`build` and :func:`build_all` below implement them.
"""

from __future__ import annotations

import time
from datetime import date
from typing import Any

import duckdb

from rank_pipeline.transform.dependencies import MODEL_SCHEMAS
from rank_pipeline.transform.engines import BuildResult
from rank_pipeline.transform.errors import BuildError
from rank_pipeline.transform.horizon import affected_ranges, last_loaded_date
from rank_pipeline.transform.project import Model, Project, Seed
from rank_pipeline.transform.rewrite import fold_start, strip_sql, windowed_sql
from rank_pipeline.transform.sql import qualified as _rel
from rank_pipeline.transform.sql import quote_ident as _qi
from rank_pipeline.transform.sql import relation_kind as _relation_kind
from rank_pipeline.transform.sql import table_columns

__all__ = ["DuckDBEngine", "build", "build_all", "build_seed", "incremental_sql", "seed_sql"]


def _columns(con: duckdb.DuckDBPyConnection, schema: str, name: str) -> list[str]:
    return list(table_columns(con, schema, name))


def _drop(con: duckdb.DuckDBPyConnection, schema: str, name: str) -> None:
    kind = _relation_kind(con, schema, name)
    if kind == "VIEW":
        con.execute(f"drop view {_rel(schema, name)}")
    elif kind is not None:
        con.execute(f"drop table {_rel(schema, name)}")


def _swap_in(con: duckdb.DuckDBPyConnection, schema: str, name: str, select_sql: str, where: str) -> int:
    """Build ``select_sql`` into a side table, then replace ``schema.name`` with it in one transaction."""
    side = f"__{name}__build"
    con.execute(f"drop table if exists {_rel(schema, side)}")
    try:
        con.execute(f"create table {_rel(schema, side)} as\n{select_sql}")
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
    (rows,) = con.execute(f"select count(*) from {_rel(schema, name)}").fetchone()
    return int(rows)


def incremental_sql(
    con: duckdb.DuckDBPyConnection, model: Model, partition_date: date, until: date | None = None
) -> str:
    """The SELECT an incremental build of ``model`` runs for the days ``partition_date .. until``.

    Every upstream relation that has the model's date column (looked up in ``con``'s catalog) is replaced
    by a subquery filtered to ``[partition_date - lookback_days, until]``; a self-reference
    (``Model.reads_itself``) by the model's own rows dated before ``partition_date``; the whole is wrapped
    to keep only rows of ``partition_date .. until`` (``until`` defaults to ``partition_date``). See the
    module docstring for the contract.

    Raises:
        BuildError: the model is not incremental, or ``until`` is before ``partition_date``.
    """
    return _rewrite(con, model, partition_date, until or partition_date)


def _dated_relations(con: duckdb.DuckDBPyConnection, column: str) -> frozenset[tuple[str, str]]:
    """Every (schema, name) in the catalog that has ``column`` (one catalog query)."""
    rows = con.execute(
        "select table_schema, table_name from information_schema.columns "
        "where table_catalog = current_database() and column_name = ?",
        [column],
    ).fetchall()
    return frozenset((r[0], r[1]) for r in rows)


def _rewrite(con: duckdb.DuckDBPyConnection, model: Model, start: date | None, end: date | None,
             mode: str = "range") -> str:
    dated = (_dated_relations(con, model.incremental.date_column)
             if model.incremental is not None and start is not None and end is not None else frozenset())
    return windowed_sql(model, start, end, dated, mode)


def _build_fold(con: duckdb.DuckDBPyConnection, model: Model, partition_date: date | None, full_refresh: bool,
                started: float) -> BuildResult:
    """``strategy: fold``: fold the upstream days after the watermark into the previous relation, or
    rebuild it whole when a day at or before the watermark changed (see the module docstring)."""
    assert model.incremental is not None and model.incremental.watermark is not None
    schema, name = model.schema, model.name
    where = f"{model.path} ({model.qualified_name})"
    watermark = None
    if not full_refresh and partition_date is not None and _relation_kind(con, schema, name) == "BASE TABLE":
        try:
            (watermark,) = con.execute(
                f"select max({_qi(model.incremental.watermark)}) from {_rel(schema, name)}").fetchone()
        except duckdb.Error:
            watermark = None  # the column is gone: rebuild
    first = fold_start(watermark, partition_date)
    if first is None:
        sql = _rewrite(con, model, None, None)
        rows = _swap_in(con, schema, name, sql, where)
        return BuildResult(rows, time.perf_counter() - started, sql, "full_refresh")
    sql = _rewrite(con, model, first, date(9999, 12, 31), mode="fold")
    rows = _swap_in(con, schema, name, sql, where)
    return BuildResult(rows, time.perf_counter() - started, sql, "incremental", first, None)


def build(
    con: duckdb.DuckDBPyConnection,
    model: Model,
    partition_date: date | None = None,
    *,
    until: date | None = None,
    full_refresh: bool = False,
) -> BuildResult:
    """Build one model into ``<schema>.<name>`` according to its materialization (module docstring).

    Args:
        con: the writer connection (not inside a transaction); upstream relations must exist.
        model: from :func:`~rank_pipeline.transform.project.load_project`.
        partition_date: for incremental models, the first day to (re)build; ignored by views and tables.
        until: the last day to rebuild (default ``partition_date``): the days ``partition_date .. until``
            are replaced in ONE transaction (:func:`rank_pipeline.transform.horizon.affected_ranges`
            says which days a load changes).
        full_refresh: incremental models rebuild every date.

    Raises:
        BuildError: the SQL failed, the incremental output lacks its date column, or the incremental
            output no longer matches the target's columns (run with ``full_refresh=True``). The target
            keeps its previous state.
    """
    started = time.perf_counter()
    schema, name = model.schema, model.name
    con.execute(f"create schema if not exists {_qi(schema)}")
    sql = strip_sql(model.sql)
    where = f"{model.path} ({model.qualified_name})"
    if model.materialized == "view":
        con.begin()
        try:
            if _relation_kind(con, schema, name) == "BASE TABLE":
                con.execute(f"drop table {_rel(schema, name)}")
            con.execute(f"create or replace view {_rel(schema, name)} as\n{sql}")
            con.commit()
        except duckdb.Error as exc:
            con.rollback()
            raise BuildError(f"{where}: creating the view failed: {exc}") from exc
        return BuildResult(None, time.perf_counter() - started, sql, "view")

    if model.incremental is not None and model.incremental.strategy == "fold":
        return _build_fold(con, model, partition_date, full_refresh, started)
    exists = _relation_kind(con, schema, name) == "BASE TABLE"
    if model.materialized == "table" or full_refresh or partition_date is None or not exists:
        if model.reads_itself:
            sql = _rewrite(con, model, None, None)
        rows = _swap_in(con, schema, name, sql, where)
        if model.incremental is not None and model.incremental.date_column not in _columns(con, schema, name):
            raise BuildError(
                f"{where}: an incremental model must output its date column {model.incremental.date_column!r}"
            )
        mode = "table" if model.materialized == "table" else "full_refresh"
        return BuildResult(rows, time.perf_counter() - started, sql, mode)

    assert model.incremental is not None
    column = model.incremental.date_column
    end = until or partition_date
    select = _rewrite(con, model, partition_date, end)
    con.begin()
    try:
        con.execute(f"delete from {_rel(schema, name)} where {_qi(column)} between ? and ?", [partition_date, end])
        (rows,) = con.execute(f"insert into {_rel(schema, name)} by name\n{select}").fetchone()
        con.commit()
    except duckdb.Error as exc:
        con.rollback()
        raise BuildError(
            f"{where}: incremental build of {column} = {partition_date} .. {end} failed: {exc}. The table is "
            "unchanged; if the model's columns changed, run a full refresh"
        ) from exc
    return BuildResult(int(rows), time.perf_counter() - started, select, "incremental", partition_date, end)


def seed_sql(seed: Seed) -> str:
    """The DuckDB SELECT that reads a seed's CSV (header row), typed by its ``.yml`` ``column_types``."""
    path = str(seed.path).replace("'", "''")
    types = ""
    if seed.column_types:
        pairs = ", ".join(
            f"'{k.replace(chr(39), chr(39) * 2)}': '{v.replace(chr(39), chr(39) * 2)}'"
            for k, v in seed.column_types.items()
        )
        types = f", types = {{{pairs}}}"
    return f"select * from read_csv('{path}', header = true, auto_detect = true{types})\n"


def build_seed(con: duckdb.DuckDBPyConnection, seed: Seed) -> BuildResult:
    """Load a seed CSV (header row) as ``seeds.<name>`` in one transaction, typed by its ``.yml``.

    The table comment records the seed's version and checksum.

    Raises:
        BuildError: the CSV cannot be read or a value does not fit its declared type.
    """
    started = time.perf_counter()
    sql = seed_sql(seed)
    comment = f"seed {seed.name} version {seed.version or '-'} sha256 {seed.checksum}".replace("'", "''")
    con.execute(f"create schema if not exists {_qi(seed.schema)}")
    con.begin()
    try:
        con.execute(f"create or replace table {_rel(seed.schema, seed.name)} as\n{sql}")
        con.execute(f"comment on table {_rel(seed.schema, seed.name)} is '{comment}'")
        con.commit()
    except duckdb.Error as exc:
        con.rollback()
        raise BuildError(f"{seed.path}: loading seed {seed.qualified_name} failed: {exc}") from exc
    (rows,) = con.execute(f"select count(*) from {_rel(seed.schema, seed.name)}").fetchone()
    return BuildResult(int(rows), time.perf_counter() - started, sql, "seed")


def build_all(
    con: duckdb.DuckDBPyConnection,
    project: Project,
    partition_date: date | None = None,
    *,
    until: date | None = None,
    full_refresh: bool = False,
) -> dict[str, BuildResult]:
    """Load every seed, then build every model in :meth:`Project.topological_order`.

    With ``partition_date`` (and ``until``, default the same day): the raw days ``partition_date ..
    until`` were just loaded; each incremental model rebuilds the days that load changed, later
    already-loaded days within its horizon included
    (:func:`rank_pipeline.transform.horizon.affected_ranges`), each model in one transaction.

    Returns:
        ``{qualified name: BuildResult}`` in build order. Stops at the first :class:`BuildError`.
    """
    results: dict[str, Any] = {}
    for schema in MODEL_SCHEMAS:
        con.execute(f"create schema if not exists {_qi(schema)}")
    for seed in project.seeds.values():
        results[seed.qualified_name] = build_seed(con, seed)
    ranges: dict[str, tuple[date, date]] = {}
    if partition_date is not None and not full_refresh:
        ranges = affected_ranges(project, partition_date, until or partition_date, last_loaded_date(con, project))
    for model in project.topological_order():
        first, last = ranges.get(model.qualified_name, (partition_date, until))
        results[model.qualified_name] = build(con, model, first, until=last, full_refresh=full_refresh)
    return results


class DuckDBEngine:
    """The models on DuckDB: one writer connection to the warehouse's build file
    (:class:`rank_pipeline.transform.engines.ModelEngine`, made by :func:`rank_pipeline.warehouse.engines.open_engine`).

    Incremental: a build of days rebuilds those days (and, in :meth:`build_all`, every later loaded day
    within the horizon); tests read the rows rebuilt. :meth:`publish` copies the build file over the
    published one atomically. The raw tables are the caller's to load on :attr:`con`.

    Args:
        con: the open writer connection to the build file.
        warehouse: what owns the build file: ``build_path``, ``published_path`` and ``publish(con)`` (the
            pipeline's ``Warehouse``, :mod:`rank_pipeline.warehouse.engines`).
    """

    name = "duckdb"
    incremental = True
    con: duckdb.DuckDBPyConnection

    def __init__(self, con: duckdb.DuckDBPyConnection, warehouse: Any):
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

    def build_seed(self, seed: Seed) -> BuildResult:
        """:func:`build_seed` on this connection."""
        return build_seed(self.con, seed)

    def build(self, model: Model, partition_date: date | None = None, *, until: date | None = None,
              full_refresh: bool = False) -> BuildResult:
        """:func:`build` on this connection."""
        return build(self.con, model, partition_date, until=until, full_refresh=full_refresh)

    def build_all(self, project: Project, partition_date: date | None = None, *, until: date | None = None,
                  full_refresh: bool = False) -> dict[str, BuildResult]:
        """:func:`build_all` on this connection."""
        return build_all(self.con, project, partition_date, until=until, full_refresh=full_refresh)

    def affected_ranges(self, project: Project, first: date, last: date) -> dict[str, tuple[date, date]]:
        """``{incremental model: (first day, last day)}`` a load of ``first .. last`` makes it rebuild
        (:func:`rank_pipeline.transform.horizon.affected_ranges`)."""
        return affected_ranges(project, first, last, last_loaded_date(self.con, project))

    def run_tests(self, relation: Model | Seed, partition_date: date | None = None, *,
                  until: date | None = None) -> list:
        """:func:`rank_pipeline.transform.testing.run_tests` on this connection."""
        from rank_pipeline.transform.testing import run_tests

        return run_tests(self.con, relation, partition_date, until=until)

    def failing_rows(self, duckdb_sql: str, sample_size: int = 5) -> tuple[int, list[dict]]:
        """``(rows, the first sample_size rows as JSON-safe dicts)`` of a SELECT."""
        from rank_pipeline.transform.testing import json_safe

        (rows,) = self.con.execute(f"select count(*) from ({duckdb_sql})").fetchone()
        cur = self.con.execute(f"{duckdb_sql} limit {int(sample_size)}")
        names = [d[0] for d in cur.description]
        return int(rows), [json_safe(dict(zip(names, row, strict=True))) for row in cur.fetchall()]

    def column_types(self, qualified: str) -> list[tuple[str, str]]:
        """``[(column, DuckDB type)]`` of ``schema.name`` in the build file, in table order."""
        schema, name = qualified.split(".", 1)
        return list(table_columns(self.con, schema, name).items())

    def row_count(self, qualified: str) -> int:
        """Rows of ``schema.name`` (the whole relation)."""
        schema, name = qualified.split(".", 1)
        (rows,) = self.con.execute(f"select count(*) from {_rel(schema, name)}").fetchone()
        return int(rows)

    def publish(self):
        """Copy the build file over the published one atomically (``warehouse.publish``); returns the
        published path."""
        return self.warehouse.publish(self.con)
