"""The raw tables on DuckDB: :meth:`rank_pipeline.transform.duckdb_engine.DuckDBEngine.load_raw` and
``replace_raw_rows``, copying the files the pipeline hands (:class:`rank_pipeline.transform.primitives.RawTable`)
into ``raw.<name>`` in one transaction.

A table's days are deleted and inserted again; the columns a file holds are read by name (``attributes``
as JSON) with ``loaded_at`` the transaction's start, so files of every snapshot version load into the same
table, and a column the table has beyond its declared ones (an earlier version's copies of ``attributes``
fields) is dropped. Local files are read by ``read_parquet``; files on an object store through the
``pyarrow.dataset`` handed with them (no DuckDB extension is loaded). The checks and messages of
docs/concepts/completeness.md, "Snapshots": the rows of each day agree with the manifest and carry that day.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

import duckdb

from rank_pipeline.transform.errors import RawLoadError
from rank_pipeline.transform.primitives import RawDay, RawTable
from rank_pipeline.transform.sql import one_row, table_columns
from rank_pipeline.transform.sql import quote_ident as _qi

__all__ = ["load_raw", "replace_raw_rows"]

RAW_SCHEMA = "raw"

log = logging.getLogger(__name__)


def _raw(name: str) -> str:
    return f"{RAW_SCHEMA}.{_qi(name)}"


def _ensure(con: duckdb.DuckDBPyConnection, table: RawTable) -> dict[str, str]:
    """Create ``raw.<name>`` from its declared columns if absent; drop the columns beyond them (a dated
    table only); its columns."""
    columns = ", ".join(f"{_qi(c)} {t}" for c, t in table.columns)
    con.execute(f"create table if not exists {_raw(table.name)} ({columns})")
    have = table_columns(con, RAW_SCHEMA, table.name)
    declared = {c for c, _ in table.columns}
    stale = [c for c in have if c not in declared] if table.dated else []
    for column in stale:
        con.execute(f"alter table {_raw(table.name)} drop column {_qi(column)}")
    if stale:
        log.info("raw.%s: dropped %s (copies of attributes fields an earlier version kept)",
                 table.name, ", ".join(stale))
        have = table_columns(con, RAW_SCHEMA, table.name)
    return have


def _insert_day(con: duckdb.DuckDBPyConnection, table: RawTable, day: RawDay, have: Mapping[str, str]) -> int:
    """Insert the rows of ``day``'s files by name; check they carry that day and agree with ``day.rows``."""
    where = f"partition {day.day} of raw.{table.name}"
    registered = None
    if day.dataset is None:
        names = ", ".join("'" + f.replace("'", "''") + "'" for f in day.files)
        source = f"read_parquet([{names}], union_by_name = true, hive_partitioning = false)"
    else:
        registered = f"__snapshot_{table.name}_{uuid.uuid4().hex[:8]}"
        con.register(registered, day.dataset)
        source = registered
    select = ", ".join("cast(attributes as json) as attributes" if c == "attributes" else _qi(c)
                       for c in day.columns if c in have)
    try:
        (inserted,) = one_row(
            con, f"insert into {_raw(table.name)} by name select {select}, current_timestamp as loaded_at "
                 f"from {source}")
    except Exception as exc:  # DuckDB, or pyarrow reading the object store
        raise RawLoadError(
            f"{where}: reading {day.folder} failed: {exc}. The load was rolled back and raw tables keep their "
            f"previous state; fix or re-extract the snapshot, then reload") from exc
    finally:
        if registered is not None:
            con.unregister(registered)
    (loaded,) = one_row(con, f"select count(*) from {_raw(table.name)} where snapshot_date = ?", [day.day])
    if inserted != loaded:
        raise RawLoadError(
            f"{where}: {inserted - loaded} row(s) in {day.folder} carry another snapshot_date; the files do not "
            f"belong to this partition. Re-extract {table.name} for {day.day}")
    if day.rows != loaded:
        raise RawLoadError(
            f"{where}: {loaded} rows read from {day.folder} but its manifest says {day.rows}; the snapshot is "
            f"damaged. Re-extract {table.name} for {day.day}")
    if not day.complete:
        log.warning("raw.%s partition %s: the snapshot manifest says extraction was incomplete; loaded %d rows "
                    "anyway", table.name, day.day, loaded)
    return int(loaded)


def load_raw(con: duckdb.DuckDBPyConnection, tables: Sequence[RawTable], first: date | None,
             last: date | None) -> dict[date, dict[str, int]]:
    """:meth:`rank_pipeline.transform.primitives.ModelEngine.load_raw` on ``con`` (not inside a transaction):
    the days ``first .. last`` of each dated table deleted (both None: the table dropped and created again)
    and the days handed within them inserted, all in one transaction.

    Raises:
        RawLoadError: a day's files cannot be read or disagree with it; every table is rolled back.
    """
    whole = first is None and last is None
    lo, hi = first or date.min, last or date.max
    out: dict[date, dict[str, int]] = {}
    con.begin()
    try:
        con.execute(f"create schema if not exists {RAW_SCHEMA}")
        for table in tables:
            if whole and table.dated:
                con.execute(f"drop table if exists {_raw(table.name)}")
            have = _ensure(con, table)
            if not table.dated:
                continue
            if not whole:
                con.execute(f"delete from {_raw(table.name)} where snapshot_date between ? and ?", [lo, hi])
            for day in table.days:
                if lo <= day.day <= hi:
                    out.setdefault(day.day, {})[table.name] = _insert_day(con, table, day, have) if day.files else 0
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return dict(sorted(out.items()))


def replace_raw_rows(con: duckdb.DuckDBPyConnection, name: str, columns: Sequence[tuple[str, str]],
                     rows: Sequence[Mapping[str, Any]]) -> int:
    """Replace every row of ``raw.<name>`` (created from ``columns`` when missing) with ``rows``, in one
    transaction; the rows written."""
    _ensure(con, RawTable(name, tuple(columns)))
    names = [c for c, _ in columns]
    con.begin()
    try:
        con.execute(f"delete from {_raw(name)}")
        if rows:
            con.executemany(f"insert into {_raw(name)} ({', '.join(_qi(n) for n in names)}) "
                            f"values ({', '.join('?' for _ in names)})", [[row[n] for n in names] for row in rows])
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return len(rows)
