"""The SQL both engines run, in DuckDB's dialect: a model's SELECT as a full build, a range of days or a fold,
given the relations that carry the date column (docs/concepts/any-order.md).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import cast

import sqlglot
from sqlglot import exp

from rank_pipeline.transform.dependencies import REFERENCE_SCHEMAS
from rank_pipeline.transform.errors import BuildError
from rank_pipeline.transform.nodes import Model
from rank_pipeline.transform.sql import qualified as _rel
from rank_pipeline.transform.sql import quote_ident as _qi

__all__ = ["fold_start", "full_build_sql", "strip_sql", "windowed_sql"]


def strip_sql(sql: str) -> str:
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return text + "\n"


def _self_relation(model: Model, start: date | None) -> str:
    """What a self-reference reads: own rows dated before ``start``, or (full build) an empty typed relation."""
    assert model.incremental is not None
    if start is not None:
        return (f"select * from {_rel(model.schema, model.name)} "
                f"where {_qi(model.incremental.date_column)} < date '{start.isoformat()}'")
    cols = ", ".join(f"cast(null as {c.data_type}) as {_qi(c.name)}" for c in model.columns)
    return f"select {cols} where false"


_FIRST, _START, _END = "'__rp_first__'", "'__rp_start__'", "'__rp_end__'"
"""Placeholders in a cached rewritten SQL text, replaced by quoted ISO dates for each build."""

_TEMPLATES: dict[tuple[str, str, str, frozenset[tuple[str, str]]], str] = {}
"""(qualified name, SQL, mode, upstream relations filtered) -> rewritten SQL with placeholders:
parsing and generating with sqlglot costs more than a small day's build, so it is done once per shape."""


def _template(model: Model, mode: str, dated: frozenset[tuple[str, str]]) -> str:
    """The rewritten SQL of ``model`` with date placeholders; ``mode``: ``full`` (only a self-reference
    replaced, by an empty relation), ``range`` (upstream windowed, own rows before the range, output kept
    to the range), ``first`` (as ``range`` with no own rows: the first days of a full build) or ``fold``
    (upstream windowed, own rows whole, output whole)."""
    assert model.incremental is not None
    key = (model.qualified_name, model.sql, mode, dated)
    cached = _TEMPLATES.get(key)
    if cached is not None:
        return cached
    tree = sqlglot.parse_one(strip_sql(model.sql), read="duckdb")
    column = _qi(model.incremental.date_column)
    window = sqlglot.parse_one(f"{column} between cast({_FIRST} as date) and cast({_END} as date)", read="duckdb")
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    for table in list(tree.find_all(exp.Table)):
        if not isinstance(table.this, exp.Identifier) or table.db not in REFERENCE_SCHEMAS:
            continue
        if not table.db and table.name in ctes:
            continue
        alias = table.alias or table.name
        if (table.db, table.name) == (model.schema, model.name):
            if mode == "fold":
                own_sql = f"select * from {_rel(model.schema, model.name)}"
            else:
                own = sqlglot.parse_one(_self_relation(model, date(1900, 1, 1) if mode == "range" else None),
                                        read="duckdb")
                own_sql = own.sql(dialect="duckdb").replace("'1900-01-01'", _START)
            own_query = cast(exp.Query, sqlglot.parse_one(own_sql, read="duckdb"))  # own_sql is a SELECT
            table.replace(own_query.subquery(alias))
            continue
        if mode == "full" or (table.db, table.name) not in dated:
            continue
        bare = exp.Table(this=exp.to_identifier(table.name), db=exp.to_identifier(table.db))
        table.replace(exp.select("*").from_(bare).where(window.copy()).subquery(alias))
    text = tree.sql(dialect="duckdb", pretty=True)
    if mode in ("range", "first"):
        text = (f"select * from (\n{text}\n) as __model\n"
                f"where {column} between cast({_START} as date) and cast({_END} as date)")
    _TEMPLATES[key] = text = text + "\n"
    return text


def full_build_sql(model: Model) -> str:
    """The SELECT a full build of ``model`` runs (DuckDB dialect): its SQL, with a self-reference
    (``Model.reads_itself``) replaced by an empty relation typed by its ``.yml`` columns. Another engine
    transpiles this text (:mod:`rank_pipeline.transform.spark_engine`)."""
    if model.incremental is not None and (model.reads_itself or model.incremental.strategy == "fold"):
        return _template(model, "full", frozenset())
    return strip_sql(model.sql)


def windowed_sql(model: Model, start: date | None, end: date | None, dated: frozenset[tuple[str, str]],
                 mode: str = "range") -> str:
    """The SELECT (DuckDB dialect) an incremental build of ``model`` runs, for any engine: ``start .. end``
    inclusive (both None: a full build, a self-reference made empty), windowing only the ``dated`` relations
    (``(schema, name)`` with the date column) to ``[start - lookback_days, end]``; ``mode`` ``range`` (output
    kept to the days), ``first`` (the same, reading no own rows: a full build's first days) or ``fold``.
    Raises BuildError: not incremental, or ``end`` before ``start``.
    """
    if model.incremental is None:
        raise BuildError(f"{model.path}: {model.qualified_name} is not incremental")
    if start is None or end is None:  # full build: only a self-reference is replaced
        return _template(model, "full", frozenset())
    if end < start:
        raise BuildError(f"{model.path}: empty build range {start} .. {end}")
    first = start - timedelta(days=model.incremental.lookback_days)
    text = _template(model, mode, dated)
    return (text.replace(_FIRST, f"'{first.isoformat()}'").replace(_START, f"'{start.isoformat()}'")
            .replace(_END, f"'{end.isoformat()}'"))


def fold_start(watermark: date | None, partition_date: date | None) -> date | None:
    """The first upstream day a ``strategy: fold`` build folds in (the day after ``watermark``, the
    relation's last folded day), or None when it must rebuild whole: no relation or watermark yet, a full
    build (``partition_date`` None), or a build of a day at or before the watermark (a backfill)."""
    if watermark is None or partition_date is None or partition_date <= watermark:
        return None
    return watermark + timedelta(days=1)
