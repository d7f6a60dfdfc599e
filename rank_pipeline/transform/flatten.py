"""The relations ``vendor.<endpoint>``: ``attributes`` flattened into the contract's typed columns, compiled
into a first CTE of the staging models that read them (:func:`compile_vendor_relations`;
docs/concepts/models.md, "The vendor's relations").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.tokens import TokenType

from rank_pipeline.transform.contract import Contract, ContractField
from rank_pipeline.transform.errors import ModelSqlError
from rank_pipeline.transform.timestamps import EPOCH_MILLISECONDS, EPOCH_SECONDS, ISO8601

__all__ = ["VENDOR_SCHEMA", "compile_vendor_relations", "flattening_sql"]

VENDOR_SCHEMA = "vendor"
"""The schema of the flattened relations a staging model reads."""

_SQL_TYPES = {"string": "VARCHAR", "integer": "BIGINT", "number": "DOUBLE", "boolean": "BOOLEAN", "object": "JSON",
              "timestamp": "TIMESTAMPTZ"}
_STRUCT = "vendor_fields"


def _leaf_type(f: ContractField) -> object:
    """The ``json_transform`` type of the value at the end of ``f``'s path (an array's: a list)."""
    if f.type == "array":
        item = _SQL_TYPES.get(f.items or "string", "VARCHAR")
        return item if any(s.every for s in f.steps) else [item]
    return _SQL_TYPES[f.sent_as]


def _place(structure: dict, f: ContractField) -> None:
    """Add ``f``'s path to the ``json_transform`` structure: objects as dicts, arrays as one-element lists."""
    node = structure
    steps = f.steps
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        if not step.selects:
            if last:
                node[step.key] = _leaf_type(f)
            else:
                node = node.setdefault(step.key, {})
        elif last:
            node[step.key] = [_leaf_type(f)] if not step.every else _leaf_type(f)
        else:
            node = node.setdefault(step.key, [{}])[0]
            if step.match is not None:
                node.setdefault(step.match[0], "VARCHAR")


def _located(f: ContractField) -> str:
    """The SQL of ``f``'s value as sent, read from the ``json_transform`` struct: ``[N]`` is a 1-based list
    index, ``[?k=v]`` a ``list_filter``'s first element, ``[*]`` a ``list_transform`` (an empty list or no
    match: null, as :meth:`ContractField.locate`)."""
    expr = _STRUCT
    for i, step in enumerate(f.steps):
        expr += f'."{step.key}"'
        element = f"e{i}"
        if step.index is not None:
            expr = f"({expr})[{step.index + 1}]"
        elif step.match is not None:
            key, value = step.match
            expr = f'list_filter({expr}, lambda {element}: {element}."{key}" = {_literal(value)})[1]'
        elif step.every:
            rest = "".join(f'."{s.key}"' for s in f.steps[i + 1:])
            return f"list_transform({expr}, lambda {element}: {element}{rest})" if rest else expr
    return expr


def _literal(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def _iso_text(parsed: str) -> str:
    """:data:`~rank_pipeline.transform.timestamps.ISO_TIMESTAMP` of a parsed timestamp, in two parts each a
    format Spark's DATE_FORMAT reads once transpiled."""
    return f"strftime({parsed}, '%Y-%m-%d') || 'T' || strftime({parsed}, '%H:%M:%S') || 'Z'"


def _timestamp(f: ContractField, column: str) -> str:
    fmt = f.timestamp_format
    if fmt == ISO8601:
        return f"cast({column} as timestamp with time zone)"
    if fmt == EPOCH_SECONDS:
        return f"to_timestamp({column})"
    if fmt == EPOCH_MILLISECONDS:
        return f"to_timestamp({column} / 1000.0)"
    text = _iso_text(f"strptime({column}, {_literal(fmt)})")
    return text if f.type != "timestamp" else f"cast({text} as timestamp with time zone)"


def _decoded(f: ContractField) -> str:
    """The SQL of ``f``'s decoded value (:meth:`ContractField.decode`)."""
    column = _located(f)
    if not f.decoded:
        return column
    e = f.encoding
    value = column
    mapping = f.value_map
    if mapping is not None:
        if isinstance(f.values, dict) or f.fold_case:
            read = f"lower({column})" if f.fold_case and f.sent_as == "string" else column
            value = f"case {read} " + " ".join(f"when {_literal(k)} then {_literal(v)}" for k, v in mapping.items()) + " end"
    elif f.timestamp_format is not None:
        value = _timestamp(f, column)
    elif e is not None and f.sent_as != f.type:
        if f.type == "boolean":
            value = (f"case when {column} in ({', '.join(map(_literal, e.true_values))}) then true "
                     f"when {column} in ({', '.join(map(_literal, e.false_values))}) then false end")
        else:
            value = f"try_cast(trim({column}) as {_SQL_TYPES[f.type]})"
    if e is not None and e.null_values:
        value = f"case when {column} in ({', '.join(_literal(v) for v in e.null_values)}) then null else {value} end"
    return value


def flattening_sql(endpoint: str, fields: Sequence[ContractField], raw_columns: Sequence[str]) -> str:
    """One SELECT over ``raw.<endpoint>``: its columns (``raw_columns``, but ``attributes`` and those a
    field's name replaces), then each field decoded under its name."""
    structure: dict = {}
    for f in fields:
        _place(structure, f)
    names = {f.name for f in fields}
    kept = [c for c in raw_columns if c != "attributes" and c not in names]
    select = [*kept, *(f"{_decoded(f)} as {f.name}" for f in fields)]
    return ("select\n        " + ",\n        ".join(select) + "\n"
            f"    from (select *, json_transform(attributes, '{json.dumps(structure)}') as {_STRUCT} "
            f"from raw.{endpoint}) as records")


def compile_vendor_relations(sql: str, contract: Contract | None, raw_columns: Mapping[str, Sequence[str]],
                             where: Path | str) -> str:
    """``sql`` with each ``vendor.<endpoint>`` it reads compiled into a first CTE ``vendor_<endpoint>``; ``sql``
    itself when it reads none. References are found on sqlglot's tree (literals and comments untouched) and
    rewritten in place; the CTEs join the statement's ``WITH`` (after ``RECURSIVE``) or open one.

    Raises:
        ModelSqlError: ``sql`` does not parse; a ``vendor.<name>`` the ``contract`` does not declare, or whose
            raw table is not in ``raw_columns``.
    """
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError as exc:
        raise ModelSqlError(f"{where}: not valid SQL: {str(exc).splitlines()[0]}") from None
    tables = [t for t in tree.find_all(exp.Table) if t.db.lower() == VENDOR_SCHEMA]
    if not tables:
        return sql
    found = list(dict.fromkeys(t.name.lower() for t in tables))
    ctes = []
    for endpoint in found:
        if contract is None or endpoint not in contract.fields:
            declared = ", ".join(f"{VENDOR_SCHEMA}.{e}" for e in (contract.fields if contract else ())) or "none"
            raise ModelSqlError(f"{where}: reads {VENDOR_SCHEMA}.{endpoint}, which the vendor's contract does not "
                                f"declare (sources/vendor_contract.yml; declared: {declared})")
        if endpoint not in raw_columns:
            raise ModelSqlError(f"{where}: reads {VENDOR_SCHEMA}.{endpoint}, but raw.{endpoint} is not declared "
                                "under `sources:`")
        body = flattening_sql(endpoint, contract.fields[endpoint], raw_columns[endpoint])
        ctes.append(f"{VENDOR_SCHEMA}_{endpoint} as (\n    -- generated from the vendor's contract\n    {body}\n)")
    edits = []
    for t in tables:
        first, last = t.args["db"].meta, t.this.meta
        edits.append((first["start"], last["end"] + 1, f"{VENDOR_SCHEMA}_{t.name.lower()}"))
    tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(sql)
    if tree.args.get("with_") is not None and tokens[0].token_type == TokenType.WITH:
        opener = tokens[1] if tokens[1].token_type == TokenType.RECURSIVE else tokens[0]
        edits.append((opener.end + 1, opener.end + 1, "\n" + ",\n".join(ctes) + ","))
    else:
        edits.append((tokens[0].start, tokens[0].start, "with\n" + ",\n".join(ctes) + "\n"))
    for begin, end, text in sorted(edits, reverse=True):
        sql = sql[:begin] + text + sql[end:]
    return sql
