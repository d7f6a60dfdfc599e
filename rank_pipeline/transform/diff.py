"""What a models folder would change in the published warehouse (``rank-pipeline diff``).

:func:`diff_models` builds the project into a scratch DuckDB file and compares each relation with the
published one: by ``unique_key`` when it holds on both sides, else as a multiset of rows; floats within
:data:`REL_TOLERANCE`. How: docs/concepts/models.md, "What a change would do".
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from rank_pipeline.transform.dependencies import MODEL_SCHEMAS, SEED_SCHEMA
from rank_pipeline.transform.duckdb_engine import DuckDBEngine
from rank_pipeline.transform.materialize import build_all
from rank_pipeline.transform.nodes import Model, Seed
from rank_pipeline.transform.project import Project
from rank_pipeline.transform.sql import one_row
from rank_pipeline.transform.sql import quote_ident as _qi

__all__ = ["EXAMPLES", "REL_TOLERANCE", "RelationDiff", "WarehouseDiff", "diff_models"]

EXAMPLES = 5
"""Example rows kept per kind of difference (added, removed, changed, each changed column)."""
REL_TOLERANCE = 1e-9
"""Floating values closer than this (relative to the larger, at least 1) count as equal."""

_FLOATS = ("DOUBLE", "FLOAT", "REAL")
_PUB = "published"


@dataclass
class RelationDiff:
    """How one relation differs (row counts unless said).

    Attributes:
        relation: ``schema.name``; status: ``equal``, ``changed``, ``new`` (scratch only) or ``gone``.
        key: the columns rows were matched on (the ``unique_key``), empty for whole-row matching.
        rows_before, rows_after: published; in the scratch build.
        added, removed, changed: rows (``changed`` only with a key).
        changed_columns: ``{column: rows whose value changed}`` (only with a key).
        columns_added, columns_removed: columns on one side only.
        examples: ``{"added" | "removed" | "changed" | "<column>": [row dict, ...]}``, at most
            :data:`EXAMPLES` each; a changed row shows ``<col>`` and ``<col>__before``.
    """

    relation: str
    status: str
    key: tuple[str, ...] = ()
    rows_before: int = 0
    rows_after: int = 0
    added: int = 0
    removed: int = 0
    changed: int = 0
    changed_columns: dict[str, int] = field(default_factory=dict)
    columns_added: list[str] = field(default_factory=list)
    columns_removed: list[str] = field(default_factory=list)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The text ``rank-pipeline diff`` prints for this relation."""
        if self.status == "equal":
            return [f"= {self.relation}: equal ({self.rows_after} rows)"]
        if self.status == "new":
            return [f"+ {self.relation}: new model ({self.rows_after} rows), not in the published warehouse"]
        if self.status == "gone":
            return [f"- {self.relation}: not in the models folder ({self.rows_before} rows published)"]
        matched = f"matched on {', '.join(self.key)}" if self.key else "whole rows compared"
        out = [f"~ {self.relation}: {self.added} added, {self.removed} removed, {self.changed} changed "
               f"({self.rows_before} -> {self.rows_after} rows; {matched})"]
        if self.columns_added:
            out.append(f"    columns added: {', '.join(self.columns_added)}")
        if self.columns_removed:
            out.append(f"    columns removed: {', '.join(self.columns_removed)}")
        for column, n in self.changed_columns.items():
            out.append(f"    {column}: {n} value(s) changed")
            out += [f"      {_show(r)}" for r in self.examples.get(column, [])]
        for kind in ("added", "removed"):
            if self.examples.get(kind):
                out.append(f"    {kind}, e.g.:")
                out += [f"      {_show(r)}" for r in self.examples[kind]]
        return out


def _show(row: dict[str, Any]) -> str:
    return ", ".join(f"{k}={'null' if v is None else v}" for k, v in row.items())


@dataclass
class WarehouseDiff:
    """Every relation's :class:`RelationDiff`, in build order, and the seconds the diff took."""

    relations: list[RelationDiff]
    seconds: float = 0.0

    @property
    def equal(self) -> bool:
        return all(r.status == "equal" for r in self.relations)

    def report(self) -> str:
        lines = [line for r in self.relations for line in r.lines()]
        differing = sum(r.status != "equal" for r in self.relations)
        verdict = ("no difference" if self.equal
                   else f"changed: {differing} of {len(self.relations)} relation(s) differ")
        lines.append(f"{verdict} ({len(self.relations)} relations compared in {self.seconds:.1f} s)")
        return "\n".join(lines)


def _columns(con: duckdb.DuckDBPyConnection, catalog: str, schema: str, name: str) -> dict[str, str]:
    rows = con.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_catalog = ? and table_schema = ? and table_name = ? order by ordinal_position",
        [catalog, schema, name]).fetchall()
    return {str(c): str(t) for c, t in rows}


def _same(column: str, kind: str) -> str:
    a, b = f"a.{_qi(column)}", f"b.{_qi(column)}"
    if kind.upper() in _FLOATS:
        return (f"({a} is not distinct from {b} or abs({a} - {b}) <= {REL_TOLERANCE} * "
                f"greatest(1, abs({a}), abs({b})))")
    return f"{a} is not distinct from {b}"


def _dicts(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _unique(con: duckdb.DuckDBPyConnection, rel: str, key: tuple[str, ...]) -> bool:
    cols = ", ".join(_qi(c) for c in key)
    (dupes,) = one_row(con, f"select count(*) from (select {cols} from {rel} group by all "
                            "having count(*) > 1)")
    return dupes == 0


def _compare(con: duckdb.DuckDBPyConnection, relation: Model | Seed, published: set[str]) -> RelationDiff:
    schema, name, q = relation.schema, relation.name, relation.qualified_name
    after = _columns(con, one_row(con, "select current_database()")[0], schema, name)
    if q not in published:
        (n,) = one_row(con, f"select count(*) from {_qi(schema)}.{_qi(name)}")
        return RelationDiff(q, "new", rows_after=int(n))
    before = _columns(con, _PUB, schema, name)
    new, old = f"{_qi(schema)}.{_qi(name)}", f"{_PUB}.{_qi(schema)}.{_qi(name)}"
    (rows_after,) = one_row(con, f"select count(*) from {new}")
    (rows_before,) = one_row(con, f"select count(*) from {old}")
    common = [c for c in after if c in before]
    d = RelationDiff(q, "changed", rows_before=int(rows_before), rows_after=int(rows_after),
                     columns_added=[c for c in after if c not in before],
                     columns_removed=[c for c in before if c not in after])
    key = tuple(getattr(relation, "unique_key", ()) or ())
    if key and all(k in common for k in key) and _unique(con, new, key) and _unique(con, old, key):
        d.key = key
        on = " and ".join(f"a.{_qi(k)} is not distinct from b.{_qi(k)}" for k in key)
        keys = ", ".join(f"a.{_qi(k)}" for k in key)
        for kind, left, right in (("added", new, old), ("removed", old, new)):
            sql = f"from {left} as a anti join {right} as b on {on}"
            (n,) = one_row(con, f"select count(*) {sql}")
            setattr(d, kind, int(n))
            if n:
                d.examples[kind] = _dicts(con.execute(f"select a.* {sql} order by all limit {EXAMPLES}"))
        values = [c for c in common if c not in key]
        joined = f"from {new} as a join {old} as b on {on}"
        if values:
            counts = ", ".join(f"count(*) filter (where not {_same(c, after[c])})" for c in values)
            any_diff = " or ".join(f"not {_same(c, after[c])}" for c in values)
            row = one_row(con, f"select count(*) filter (where {any_diff}), {counts} {joined}")
            d.changed = int(row[0])
            for column, n in zip(values, row[1:], strict=True):
                if n:
                    d.changed_columns[column] = int(n)
                    d.examples[column] = _dicts(con.execute(
                        f"select {keys}, b.{_qi(column)} as {_qi(column + '__before')}, a.{_qi(column)} "
                        f"{joined} where not {_same(column, after[column])} order by {keys} limit {EXAMPLES}"))
    else:
        cols = ", ".join(_qi(c) for c in common)
        for kind, left, right in (("added", new, old), ("removed", old, new)):
            sql = f"select {cols} from {left} except all select {cols} from {right}"
            (n,) = one_row(con, f"select count(*) from ({sql})")
            setattr(d, kind, int(n))
            if n:
                d.examples[kind] = _dicts(con.execute(f"select * from ({sql}) order by all limit {EXAMPLES}"))
    if not (d.added or d.removed or d.changed or d.columns_added or d.columns_removed):
        d.status = "equal"
    return d


def _published_relations(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute(
        "select table_schema, table_name from information_schema.tables where table_catalog = ? "
        "and table_schema in (" + ", ".join("?" for _ in (SEED_SCHEMA, *MODEL_SCHEMAS)) + ")",
        [_PUB, SEED_SCHEMA, *MODEL_SCHEMAS]).fetchall()
    return {f"{s}.{n}" for s, n in rows}


def diff_models(project: Project, load_raw: Callable[[duckdb.DuckDBPyConnection], object], published_db: Path,
                scratch_dir: Path | None = None) -> WarehouseDiff:
    """Build ``project`` into a scratch file, on the raw tables ``load_raw`` loads, and compare it with
    ``published_db`` (read-only; absent: every relation is ``new``).

    Args:
        load_raw: loads the raw tables into the scratch connection (the command line: every committed snapshot).
        scratch_dir: where the scratch file is made (deleted afterwards); default the system temp folder.
    Returns:
        A :class:`WarehouseDiff`.
    Raises:
        BuildError: a model of ``project`` does not build (named); whatever ``load_raw`` raises.
    """
    started = time.perf_counter()
    if scratch_dir is not None:
        Path(scratch_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rank-pipeline-diff-", dir=scratch_dir) as tmp:
        with duckdb.connect(str(Path(tmp) / "scratch.duckdb")) as con:
            load_raw(con)
            build_all(DuckDBEngine(con), project)
            path = str(published_db).replace("'", "''")
            exists = Path(published_db).is_file()
            if exists:
                con.execute(f"attach '{path}' as {_PUB} (read_only)")
            published = _published_relations(con) if exists else set()
            relations: list[Model | Seed] = [*project.seeds.values(), *project.topological_order()]
            diffs = [_compare(con, r, published) for r in relations]
            ours = {r.qualified_name for r in relations}
            for q in sorted(published - ours):
                schema, _, name = q.partition(".")
                (n,) = one_row(con, f"select count(*) from {_PUB}.{_qi(schema)}.{_qi(name)}")
                diffs.append(RelationDiff(q, "gone", rows_before=int(n)))
            if exists:
                con.execute(f"detach {_PUB}")
    return WarehouseDiff(diffs, time.perf_counter() - started)
