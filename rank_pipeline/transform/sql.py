"""DuckDB identifiers and catalog reads shared by the model runner and the warehouse (written once, used everywhere).

No Dagster and no project knowledge here: quoting identifiers, reading the catalog of the current
database, and the one row of a query that always returns one.
"""

from __future__ import annotations

from typing import Any

import duckdb

__all__ = ["one_row", "qualified", "quote_ident", "relation_kind", "table_columns"]


def quote_ident(name: str) -> str:
    """``name`` as a quoted SQL identifier (``"a""b"`` for ``a"b``)."""
    return '"' + name.replace('"', '""') + '"'


def qualified(schema: str, name: str) -> str:
    """``"schema"."name"``, both quoted."""
    return f"{quote_ident(schema)}.{quote_ident(name)}"


def table_columns(con: duckdb.DuckDBPyConnection, schema: str, name: str) -> dict[str, str]:
    """``{column: DuckDB type}`` of a table or view of the current database, in column order; empty when absent.

    Read by binding the relation (``con.table``), which equals ``information_schema.columns`` (held by
    ``tests/transform/test_sql.py``) at a fraction of its cost; an unbindable view falls back to it.
    """
    (database,) = one_row(con, "select current_database()")
    try:
        relation = con.table(f"{quote_ident(database)}.{qualified(schema, name)}")
        return dict(zip(relation.columns, map(str, relation.types), strict=True))
    except duckdb.Error:
        pass
    rows = con.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_catalog = current_database() and table_schema = ? and table_name = ? "
        "order by ordinal_position",
        [schema, name],
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def one_row(con: duckdb.DuckDBPyConnection, query: str, params: list[Any] | None = None) -> tuple[Any, ...]:
    """The one row of ``query`` with ``params`` (an aggregate without ``group by``, a connection function).
    Raises RuntimeError: it returned none.
    """
    # fetchall, not fetchone: duckdb 2 keeps a result half-read after fetchone, and the connection then refuses
    # register() and other work until it is finished
    rows = con.execute(query, params).fetchall() if params is not None else con.execute(query).fetchall()
    if not rows:
        raise RuntimeError(f"no row from {query}")
    return rows[0]


def relation_kind(con: duckdb.DuckDBPyConnection, schema: str, name: str) -> str | None:
    """``BASE TABLE``, ``VIEW`` or None (absent) for ``schema.name`` in the current database."""
    row = con.execute(
        "select table_type from information_schema.tables "
        "where table_catalog = current_database() and table_schema = ? and table_name = ?",
        [schema, name],
    ).fetchone()
    return row[0] if row else None
