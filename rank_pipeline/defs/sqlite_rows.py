"""Rows written to a SQLite file through the DB-API cursor, as SQLAlchemy would write them: the helpers of
:class:`rank_pipeline.defs.sqlite_storage.PooledSqliteEventLogStorage` that need nothing of Dagster."""

from __future__ import annotations

import functools
import sqlite3
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.dialects.sqlite import pysqlite

__all__ = ["dbapi", "insert_statement", "row_values", "set_pragmas"]

_SQLITE = pysqlite.dialect()


@functools.cache
def insert_statement(table: sa.Table, columns: tuple[str, ...]) -> tuple[str, tuple]:
    """``INSERT INTO <table> (<columns>) VALUES (?, ...)`` and each column's SQLAlchemy bind processor
    on SQLite (dates are stored as SQLAlchemy stores them), for the DB-API cursor."""
    processors = tuple(table.c[name].type.dialect_impl(_SQLITE).bind_processor(_SQLITE) for name in columns)
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    return sql, processors


def row_values(row: dict[str, Any], processors: tuple) -> tuple:
    """``row``'s values in its order, each through its column's processor of :func:`insert_statement`."""
    return tuple(value if process is None or value is None else process(value)
                 for value, process in zip(row.values(), processors, strict=True))


def dbapi(conn: sa.Connection) -> sqlite3.Connection:
    """The sqlite3 connection under ``conn`` (SQLAlchemy types it as any driver's, or None once closed; a
    checked-out pysqlite connection always holds one)."""
    return cast(sqlite3.Connection, conn.connection.dbapi_connection)


def set_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """SQLAlchemy's ``connect`` listener: ``PRAGMA synchronous=NORMAL`` on each new connection."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
