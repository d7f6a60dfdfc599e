"""Dependencies of a model: the qualified relations its one SELECT reads, parsed with sqlglot.

Used by :mod:`rank_pipeline.transform.loading` when reading the project's models; the schemas a model may read
are declared here once. Answers are kept across processes (:mod:`rank_pipeline.transform.shared_cache`).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from rank_pipeline.transform import shared_cache
from rank_pipeline.transform.errors import ModelSqlError

__all__ = ["MODEL_SCHEMAS", "RAW_SCHEMA", "REFERENCE_SCHEMAS", "SEED_SCHEMA", "condition_error", "sql_dependencies"]

MODEL_SCHEMAS: tuple[str, ...] = ("staging", "marts")
"""Folders (and schemas) that hold models."""
SEED_SCHEMA = "seeds"
RAW_SCHEMA = "raw"
"""The schema of the raw tables models read (declared as ``sources:`` under ``sources/``)."""
REFERENCE_SCHEMAS: tuple[str, ...] = (RAW_SCHEMA, SEED_SCHEMA, *MODEL_SCHEMAS)
"""Schemas a model may read."""


def sql_dependencies(sql: str, where: str = "<sql>") -> frozenset[str]:
    """Qualified relations (``schema.name``) one SELECT reads, found with sqlglot; CTEs and table functions aside.

    Raises:
        ModelSqlError: not exactly one SELECT (or UNION), unparsable, or a table unqualified without being a
            CTE, qualified with a database, or outside ``raw``, ``seeds``, ``staging``, ``marts``.
    """
    key = shared_cache.digest(sql)
    kept = shared_cache.read("dependencies", key)
    if isinstance(kept, list) and all(isinstance(name, str) for name in kept):
        return frozenset(kept)
    deps = _parse_dependencies(sql, where)
    shared_cache.write("dependencies", key, sorted(deps))
    return deps


def _parse_dependencies(sql: str, where: str) -> frozenset[str]:
    try:
        statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except ParseError as exc:
        raise ModelSqlError(f"{where}: cannot parse as DuckDB SQL: {exc}") from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise ModelSqlError(
            f"{where}: a model is exactly one SELECT statement (found {len(statements)} statement(s): "
            f"{', '.join(type(s).__name__ for s in statements)}); no DDL, no DML, no templating"
        )
    tree = statements[0]
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    deps: set[str] = set()
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue  # a table function such as range(...) or read_parquet(...)
        name, db, catalog = table.name, table.db, table.catalog
        if catalog:
            raise ModelSqlError(
                f"{where}: {catalog}.{db}.{name} names a database; write {db}.{name} so the model runs in "
                "both the build and the published warehouse"
            )
        if not db:
            if name in ctes:
                continue
            raise ModelSqlError(
                f"{where}: table {name!r} is neither a CTE nor qualified; reference relations as "
                f"{', '.join(s + '.' + name for s in REFERENCE_SCHEMAS)}"
            )
        if db not in REFERENCE_SCHEMAS:
            raise ModelSqlError(
                f"{where}: {db}.{name} is in schema {db!r}; models read only {', '.join(REFERENCE_SCHEMAS)}"
            )
        deps.add(f"{db}.{name}")
    return frozenset(deps)


def condition_error(expression: str) -> str | None:
    """None when ``expression`` parses as one DuckDB boolean condition (an ``expression`` test), else
    the parser's message."""
    key = shared_cache.digest(expression)
    kept = shared_cache.read("condition", key)
    if isinstance(kept, dict) and isinstance(kept.get("error"), str | None):
        return kept["error"]
    error = None
    try:
        sqlglot.parse_one(expression, read="duckdb", into=exp.Condition)
    except ParseError as exc:
        error = str(exc)
    shared_cache.write("condition", key, {"error": error})
    return error
