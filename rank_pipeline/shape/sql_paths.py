"""The JSON paths a staging model reads, found by parsing its SQL (sqlglot), with the line of each:
``attributes ->> '$.a.b'``, ``->``, ``json_extract`` and every leaf of a ``json_transform`` structure.

The contract's test holds that no staging model reads a path by hand (docs/concepts/shape-check.md).
"""

from __future__ import annotations

import json
import re

import sqlglot
from sqlglot import exp

from rank_pipeline.api.endpoints import endpoint_names

__all__ = ["paths_read"]


def _leaves(structure: object, prefix: str = "") -> list[str]:
    if isinstance(structure, dict):
        out = []
        for key, value in structure.items():
            out += _leaves(value, f"{prefix}.{key}" if prefix else key)
        return out
    return [prefix] if prefix else []


def _line(sql: str, needles: list[str]) -> int:
    """The first line (1-based) of ``sql``, comments aside, holding any of ``needles``; 1 when none does."""
    for number, text in enumerate(sql.splitlines(), start=1):
        code = text.split("--", 1)[0]
        if any(n in code for n in needles):
            return number
    return 1


def paths_read(sql: str) -> dict[str, dict[str, int]]:
    """``{endpoint: {path: line}}`` of the raw ``attributes`` paths ``sql`` reads.
    Raises sqlglot.errors.ParseError: ``sql`` does not parse as DuckDB SQL.
    """
    tree = sqlglot.parse_one(sql, read="duckdb")
    endpoints = sorted({t.name for t in tree.find_all(exp.Table) if t.db == "raw" and t.name in endpoint_names()})
    found: dict[str, int] = {}
    for node in tree.find_all(exp.JSONExtract, exp.JSONExtractScalar):
        if isinstance(node.this, exp.Column) and node.this.name == "attributes":
            keys = [k.name for k in node.expression.find_all(exp.JSONPathKey)]
            if keys:
                path = ".".join(keys)
                found.setdefault(path, _line(sql, [f"$.{path}'"]))
    for call in tree.find_all(exp.Anonymous):
        if call.name.lower() == "json_transform" and len(call.expressions) == 2:
            literal = call.expressions[1]
            if isinstance(literal, exp.Literal) and literal.is_string:
                start = _line(sql, ["json_transform("])
                lines = sql.splitlines()
                for path in _leaves(json.loads(literal.this)):
                    last = path.rsplit(".", 1)[-1]
                    offset = next((i for i, text in enumerate(lines[start - 1:]) if re.search(rf'"{re.escape(last)}"\s*:', text)), 0)
                    found.setdefault(path, start + offset)
    return {endpoint: dict(found) for endpoint in endpoints}
