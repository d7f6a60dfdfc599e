"""DuckDB SQL as Spark SQL (:func:`to_spark_sql`): sqlglot's transpilation plus the rewrites it lacks, and
``raw.<resource>`` as the session's temporary view (:func:`raw_view`).
"""

from __future__ import annotations

import json
from typing import Any

import sqlglot
from sqlglot import exp

from rank_pipeline.transform.dependencies import RAW_SCHEMA
from rank_pipeline.transform.errors import BuildError

__all__ = ["quote", "raw_view", "short_error", "spark_type_of", "to_spark_sql"]

_SPARK_TYPES = {
    "VARCHAR": "string", "TEXT": "string", "STRING": "string", "INTEGER": "int", "INT": "int",
    "BIGINT": "bigint", "SMALLINT": "smallint", "TINYINT": "tinyint", "DOUBLE": "double",
    "FLOAT": "float", "BOOLEAN": "boolean", "DATE": "date", "TIMESTAMP": "timestamp",
    "TIMESTAMP WITH TIME ZONE": "timestamp", "TIMESTAMPTZ": "timestamp", "JSON": "string",
}
"""DuckDB type names and their Spark DDL types: ``json_transform`` structures and the raw tables' declared
columns (Spark keeps JSON as text, and a time zone's instant as its ``timestamp``)."""


def _spark_type(structure: Any) -> str:
    """A DuckDB ``json_transform`` structure (``"VARCHAR"``, ``{...}``, ``[...]``) as a Spark DDL type."""
    if isinstance(structure, dict):
        return "struct<" + ", ".join(f"`{k}`: {_spark_type(v)}" for k, v in structure.items()) + ">"
    if isinstance(structure, list) and len(structure) == 1:
        return f"array<{_spark_type(structure[0])}>"
    if isinstance(structure, str) and structure.upper() in _SPARK_TYPES:
        return _SPARK_TYPES[structure.upper()]
    raise BuildError(f"json_transform structure {structure!r} has no Spark equivalent in spark_dialect._SPARK_TYPES")


def _json_transform_to_from_json(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Anonymous) and node.name.lower() == "json_transform" and len(node.expressions) == 2:
        source, structure = node.expressions
        if isinstance(structure, exp.Literal) and structure.is_string:
            schema = _spark_type(json.loads(structure.this))
            return exp.Anonymous(this="from_json", expressions=[source.copy(), exp.Literal.string(schema)])
    return node


def _distinct_window_count(node: exp.Expression) -> exp.Expression:
    """``count(distinct x) over (...)`` (DuckDB has it, Spark refuses it) -> ``size(collect_set(x) over (...))``:
    both count the distinct non-null values of the window frame."""
    if isinstance(node, exp.Window) and isinstance(node.this, exp.Count) and isinstance(node.this.this, exp.Distinct):
        values = node.this.this.expressions
        if len(values) == 1:
            window = node.copy()
            window.set("this", exp.Anonymous(this="collect_set", expressions=[values[0].copy()]))
            return exp.Anonymous(this="size", expressions=[window])
    if isinstance(node, exp.Window) and isinstance(node.this, exp.Median):
        # Spark refuses a frame on median(); percentile(x, 0.5) interpolates like DuckDB's median
        window = node.copy()
        window.set("this", exp.Anonymous(this="percentile",
                                         expressions=[node.this.this.copy(), exp.Literal.number("0.5")]))
        return window
    return node


def _array_element_and_epoch(node: exp.Expression) -> exp.Expression:
    """An array's element by a literal index (``x[1]`` in DuckDB, 1-based) -> ``try_element_at(x, 1)``: null past
    the end as in DuckDB (Spark's ANSI mode refuses ``x[0]`` of an empty array); ``to_timestamp(seconds)`` ->
    ``timestamp_seconds(seconds)``, the instant with its fraction (``from_unixtime`` formats whole seconds)."""
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
        index = node.expressions[0]
        if isinstance(index, exp.Literal) and not index.is_string and not isinstance(node.this, exp.Struct):
            position = int(index.this) + 1  # sqlglot keeps the index 0-based
            return exp.Anonymous(this="try_element_at", expressions=[node.this.copy(), exp.Literal.number(position)])
    if isinstance(node, exp.UnixToTime) and node.args.get("scale") is None and node.args.get("format") is None:
        return exp.Anonymous(this="timestamp_seconds", expressions=[node.this.copy()])
    return node


_SPARK_SQL: dict[str, str] = {}


def raw_view(resource: str) -> str:
    """The temporary view holding ``raw.<resource>`` in a Spark session (``__raw_<resource>``)."""
    return f"__raw_{resource}"


def to_spark_sql(duckdb_sql: str) -> str:
    """One DuckDB SELECT as Spark SQL: sqlglot's transpilation plus ``json_transform`` -> ``from_json``,
    ``count(distinct) over`` and ``median over`` rewrites, array elements and epochs, a CTE's ``[NOT]
    MATERIALIZED`` dropped, and ``raw.<resource>`` -> the session's view :func:`raw_view`.

    Raises:
        BuildError: sqlglot cannot parse the SQL or cannot express a construct in Spark SQL.
    """
    cached = _SPARK_SQL.get(duckdb_sql)
    if cached is not None:
        return cached
    try:
        tree = sqlglot.parse_one(duckdb_sql, read="duckdb").transform(_json_transform_to_from_json)
        tree = tree.transform(_distinct_window_count).transform(_array_element_and_epoch)
        for cte in tree.find_all(exp.CTE):  # DuckDB's [NOT] MATERIALIZED hint: Spark SQL has no such syntax
            cte.set("materialized", None)
        for table in list(tree.find_all(exp.Table)):
            if table.db == RAW_SCHEMA and isinstance(table.this, exp.Identifier):
                alias = table.alias or table.name
                table.replace(exp.Table(this=exp.to_identifier(raw_view(table.name))).as_(alias))
        text = tree.sql(dialect="spark", pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
    except sqlglot.errors.SqlglotError as exc:
        raise BuildError(f"cannot transpile to Spark SQL: {exc}") from exc
    _SPARK_SQL[duckdb_sql] = text
    return text



def spark_type_of(duckdb_type: str, table: str) -> str:
    """A raw column's DuckDB type (as ``sources:`` or DuckDB's catalog name it; ``X[]`` a list) as a Spark
    DDL type (:data:`_SPARK_TYPES`)."""
    name = duckdb_type.strip().upper()
    if name.endswith("[]"):
        return f"array<{spark_type_of(name[:-2], table)}>"
    if name not in _SPARK_TYPES:
        raise BuildError(f"raw.{table}: no Spark type for the DuckDB type {duckdb_type!r} "
                         f"(known: {', '.join(sorted(_SPARK_TYPES))}, and lists of them)")
    return _SPARK_TYPES[name]


def short_error(exc: BaseException) -> str:
    """The first line of a Spark/py4j error (their messages carry a JVM stack trace)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def quote(name: str) -> str:
    """A Spark SQL identifier, quoted."""
    return "`" + name.replace("`", "``") + "`"
