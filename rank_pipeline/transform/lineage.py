"""Column-level lineage of a SQL project with sqlglot, per model column its ``direct`` upstream columns and
its raw and seed ``sources`` down to the JSON path (:func:`project_lineage`; docs/concepts/models.md,
"Column lineage").
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.lineage import Node, lineage
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import build_scope
from sqlglot.schema import MappingSchema, Schema

from rank_pipeline.transform import shared_cache
from rank_pipeline.transform.dependencies import SEED_SCHEMA
from rank_pipeline.transform.project import Project

__all__ = ["LINEAGE_FORMAT", "ColumnRef", "ProjectLineage", "project_lineage"]

LINEAGE_FORMAT = 1
"""Version of the analysis and of its cache file; bump it when the rules above change."""


@dataclass(frozen=True, order=True)
class ColumnRef:
    """One column of one relation: ``relation`` (``raw.keywords``), ``column`` (``attributes``) and ``path``, a
    dotted field inside a JSON column (``results.organic.position``; ``""`` for the whole column).
    """

    relation: str
    column: str
    path: str = ""

    @property
    def field_name(self) -> str:
        """The column, or ``column.path`` for a JSON field (``attributes.results.organic.position``)."""
        return f"{self.column}.{self.path}" if self.path else self.column

    @property
    def label(self) -> str:
        """``raw.keywords.attributes.results.organic.position``: the relation, then :attr:`field_name`."""
        return f"{self.relation}.{self.field_name}"

    def is_source(self) -> bool:
        """A raw or seed column: where lineage ends."""
        return self.relation.split(".", 1)[0] in ("raw", SEED_SCHEMA)


@dataclass
class ProjectLineage:
    """Column lineage of every model of a project: ``columns`` (``{model: output columns}``), ``direct``
    (``{(model, column): {ColumnRef}}``) and ``errors`` (``{model: why sqlglot could not analyse it}``).
    """

    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    direct: dict[tuple[str, str], frozenset[ColumnRef]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    _sources: dict[tuple[str, str], frozenset[ColumnRef]] = field(default_factory=dict, repr=False)

    def sources(self, relation: str, column: str) -> frozenset[ColumnRef]:
        """The raw and seed columns ``relation.column`` derives from, through every model between
        (empty for an unknown column or one computed from none)."""
        key = (relation, column)
        done = self._sources.get(key)
        if done is not None:
            return done
        self._sources[key] = frozenset()  # a model reading its own earlier rows: stop the loop
        out: set[ColumnRef] = set()
        for ref in self.direct.get(key, ()):
            if ref.is_source() or (ref.relation, ref.column) not in self.direct:
                out.add(ref)
                continue
            for src in self.sources(ref.relation, ref.column):
                path = ".".join(p for p in (src.path, ref.path) if p)
                out.add(ColumnRef(src.relation, src.column, path))
        result = frozenset(out)
        self._sources[key] = result
        return result

    def upstream(self, relation: str, column: str) -> list[ColumnRef]:
        """The direct dependencies then the sources of ``relation.column``, each once, sorted within each
        group (what Dagster's ``dagster/column_lineage`` lists for the column)."""
        direct = sorted(self.direct.get((relation, column), ()))
        return direct + sorted(self.sources(relation, column) - set(direct))

    def downstream(self, relation: str, column: str) -> list[tuple[str, str]]:
        """``(model, column)`` of every model column that reads ``relation.column`` directly."""
        return sorted(key for key, refs in self.direct.items()
                      if any(r.relation == relation and r.column == column for r in refs))

    def to_json(self) -> dict:
        return {"format": LINEAGE_FORMAT, "errors": self.errors,
                "columns": {m: list(c) for m, c in self.columns.items()},
                "direct": [[m, c, [[r.relation, r.column, r.path] for r in sorted(refs)]]
                           for (m, c), refs in sorted(self.direct.items())]}

    @classmethod
    def from_json(cls, data: Mapping) -> ProjectLineage:
        return cls(columns={m: tuple(c) for m, c in data["columns"].items()},
                   direct={(m, c): frozenset(ColumnRef(*r) for r in refs) for m, c, refs in data["direct"]},
                   errors=dict(data["errors"]))


def _json_path(node: exp.Expr) -> str | None:
    """``'$.results.organic.position'`` (a JSONPath literal or node) -> ``results.organic.position``."""
    text = node.sql(dialect="duckdb") if isinstance(node, exp.Expr) else str(node)
    text = text.strip().strip("'\"")
    if not text.startswith("$"):
        return None
    return text[1:].lstrip(".").replace("['", ".").replace("']", "").strip(".") or None


def _chain(node: exp.Expr) -> str | None:
    """A struct access through lists as the contract writes it (:mod:`rank_pipeline.transform.flatten`
    generates these): ``(s.results.serp)[1].rank`` -> ``s.results.serp[0].rank``, ``list_filter(s.engines,
    lambda e: e.name = 'google')[1].rank`` -> ``s.engines[?name=google].rank``, ``list_transform(s.labels,
    lambda e: e.uuid)`` -> ``s.labels[*].uuid``; None for anything else."""
    if isinstance(node, exp.Paren):
        return _chain(node.this)
    if isinstance(node, exp.Column):
        return node.sql(dialect="duckdb")
    if isinstance(node, exp.Dot):
        left = _chain(node.this)
        return f"{left}.{node.expression.name}" if left else None
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1 and isinstance(node.expressions[0], exp.Literal):
        index = int(node.expressions[0].this)
        source = node.this
        if isinstance(source, exp.ArrayFilter) and index == 0:
            condition = source.expression.this if isinstance(source.expression, exp.Lambda) else None
            if isinstance(condition, exp.EQ) and isinstance(condition.expression, exp.Literal):
                left = _chain(source.this)
                key = condition.this.expression.name if isinstance(condition.this, exp.Dot) else condition.this.name
                return f"{left}[?{key}={condition.expression.this}]" if left else None
            return None
        left = _chain(source)
        return f"{left}[{index}]" if left else None
    if isinstance(node, exp.Transform) and isinstance(node.expression, exp.Lambda):
        left = _chain(node.this)
        body = node.expression.this
        rest: list[str] = []
        while isinstance(body, exp.Dot):
            rest.insert(0, body.expression.name)
            body = body.this
        if isinstance(body, exp.Column) and body.table:
            rest.insert(0, body.name)
        return f"{left}[*]" + "".join(f".{r}" for r in rest) if left else None
    return None


def _reads(node: Node, memo: dict[int, tuple]) -> tuple[list[str], list[tuple[str, exp.Expr]]]:
    """What ``node``'s expression reads by field, computed once per node (a node is shared by every
    column whose lineage passes through it): the text of each struct access (``parsed.attrs.tagIds``),
    and ``(column text, path expression)`` of each JSON extract, in the tree's order."""
    done = memo.get(id(node))
    if done is not None:
        return done
    inner = node.expression.this if isinstance(node.expression, exp.Alias) else node.expression
    dots: list[str] = []
    extracts: list[tuple[str, exp.Expr]] = []
    if isinstance(inner, exp.Expr):
        chains = [_chain(node) for node in inner.find_all(exp.Dot, exp.Bracket, exp.Transform)]
        dots = [c for c in chains if c and "[" in c] + [dot.sql(dialect="duckdb") for dot in inner.find_all(exp.Dot)]
        extracts = [(e.this.sql(dialect="duckdb").replace('"', ""), e.expression)
                    for e in inner.find_all(exp.JSONExtract, exp.JSONExtractScalar) if isinstance(e.this, exp.Column)]
    memo[id(node)] = (dots, extracts)
    return dots, extracts


def _child_path(parent: Node, child: Node, names: Mapping[str, str], memo: dict[int, tuple]) -> str:
    """The JSON/struct field ``parent``'s expression reads from ``child``'s column, if any."""
    dots, extracts = _reads(parent, memo)
    child_name = child.name
    for text in dots:  # struct access: parsed.attrs.results.organic.position
        if text.lower().startswith(child_name.lower() + "."):
            # the qualified tree is lower-cased: give struct fields their case as written (tagIds)
            return ".".join(_cased(p, names) for p in text[len(child_name) + 1:].replace('"', "").split("."))
    for column, path in extracts:
        if column == child_name:
            return _json_path(path) or ""
    return ""


def _cased(part: str, names: Mapping[str, str]) -> str:
    """One key of a struct path (with its selector, ``serp[0]``, ``engines[?name=google]``) in its case as
    written."""
    key, bracket, selector = part.partition("[")
    if selector.startswith("?") and "=" in selector:
        inner, _, value = selector[1:].partition("=")
        selector = f"?{names.get(inner, inner)}={value}"
    return names.get(key, key) + bracket + selector


def _leaves(node: Node, path: str, out: set[ColumnRef], seen: set[tuple[int, str]], names: Mapping[str, str],
            memo: dict[int, tuple]) -> None:
    key = (id(node), path)
    if key in seen:
        return
    seen.add(key)
    if isinstance(node.expression, exp.Table):
        table = node.expression
        if table.db:
            out.add(ColumnRef(f"{table.db}.{table.name}", node.name.rsplit(".", 1)[-1], path))
        return
    for child in node.downstream:
        step = _child_path(node, child, names, memo)
        _leaves(child, ".".join(p for p in (step, path) if p), out, seen, names, memo)


def _schema(types: Mapping[str, list[tuple[str, str]]]) -> dict:
    schema: dict[str, dict[str, dict[str, str]]] = {}
    for qualified, cols in types.items():
        db, name = qualified.split(".", 1)
        schema.setdefault(db, {})[name] = dict(cols)
    return schema


def _with_join_keys(tree: exp.Expr) -> exp.Expr:
    """Make every projection reading a joined relation also read that join's keys on the other side(s), wrapped in
    an opaque ``__lineage(value, key, ...)`` on the qualified tree (docs/concepts/models.md, "Column lineage").
    """
    for select in list(tree.find_all(exp.Select)):
        keys: dict[str, list[exp.Column]] = {}
        for join in select.args.get("joins") or ():
            on = join.args.get("on")
            alias = join.this.alias_or_name
            if on is None or not alias:
                continue
            keys[alias] = [c for c in on.find_all(exp.Column) if c.table and c.table != alias]
        if not any(keys.values()):
            continue
        for projection in list(select.expressions):
            read = {c.table for c in projection.find_all(exp.Column)}
            extra: dict[str, exp.Column] = {}
            for alias in sorted(read & keys.keys()):
                for column in keys[alias]:
                    extra.setdefault(column.sql(), column)
            if not extra:
                continue
            inner = projection.this if isinstance(projection, exp.Alias) else projection
            wrapped = exp.Anonymous(this="__lineage", expressions=[inner.copy(), *(c.copy() for c in extra.values())])
            projection.replace(wrapped.as_(projection.alias_or_name))
    return tree


def _model_lineage(sql: str, schema: Schema) -> dict[str, frozenset[ColumnRef]]:
    parsed = sqlglot.parse_one(sql, read="duckdb")
    names = {i.name.lower(): i.name for i in parsed.find_all(exp.Identifier)}
    tree = qualify(parsed, dialect="duckdb", schema=schema, validate_qualify_columns=False, identify=False)
    tree = _with_join_keys(tree)
    nodes = lineage(None, tree, schema=schema, dialect="duckdb", scope=build_scope(tree), copy=False,
                    trim_selects=False)  # no copy of the whole SELECT per lineage node: nothing here reads it
    out = {}
    memo: dict[int, tuple] = {}
    for column, node in nodes.items():
        refs: set[ColumnRef] = set()
        _leaves(node, "", refs, set(), names, memo)
        out[column] = frozenset(refs)
    return out


def _cache_key(project: Project) -> str:
    h = hashlib.sha256(f"lineage {LINEAGE_FORMAT} sqlglot {sqlglot.__version__}\n".encode())
    for name in sorted(project.models):
        m = project.models[name]
        h.update(f"{m.qualified_name}\n{m.sql}\n".encode())
    for name in sorted(project.seeds):
        s = project.seeds[name]
        h.update(f"{s.qualified_name} {s.checksum} {sorted(dict(s.column_types).items())}\n".encode())
    for source, columns in sorted(project.raw_columns.items()):
        h.update(f"{source} {columns}\n".encode())
    return h.hexdigest()[:24]


def _analyse(project: Project, models: Iterable) -> ProjectLineage:
    from rank_pipeline.transform.unit_tests import relation_types

    result = ProjectLineage()
    try:
        schema = _schema(relation_types(project))
    except Exception as exc:  # the skeleton does not build: no lineage for anyone, say why
        for model in models:
            result.errors[model.qualified_name] = f"the project does not build on empty inputs: {exc}"
        return result
    mapping: Schema | None = None
    for model in models:
        try:
            # one normalised schema for every model (sqlglot would otherwise rebuild it from the dict on
            # each qualify and lineage call); built under the model's ``try`` as sqlglot's would be
            if mapping is None:
                mapping = MappingSchema(schema, dialect="duckdb")
            per_column = _model_lineage(model.sql, mapping)
        except Exception as exc:  # noqa: BLE001 - sqlglot's own errors and its bugs alike: no lineage, say why
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            result.errors[model.qualified_name] = f"sqlglot could not analyse it: {first}"
            continue
        result.columns[model.qualified_name] = tuple(per_column)
        for column, refs in per_column.items():
            result.direct[(model.qualified_name, column)] = refs
    return result


_MEMO: dict[str, ProjectLineage] = {}


def project_lineage(project: Project, cache_dir: Path | str | None = None) -> ProjectLineage:
    """The column lineage of every model of ``project`` (docs/concepts/models.md, "Column lineage"), kept as
    ``lineage-<hash>.json`` in ``cache_dir`` (written atomically; unreadable ignored; None: once per process)
    and, when every model was analysed, in the user's cache (:mod:`rank_pipeline.transform.shared_cache`).
    """
    key = _cache_key(project)
    if key in _MEMO:
        return _MEMO[key]
    cache = Path(cache_dir) / f"lineage-{key}.json" if cache_dir is not None else None
    result = _kept(cache)
    if result is None:
        result = _kept(None, key)
        if result is None:
            result = _analyse(project, project.topological_order())
            if not result.errors:  # an error's text may name this project's folder
                shared_cache.write("lineage", key, result.to_json())
        if cache is not None:
            _write(cache, result)
    _MEMO[key] = result
    return result


def _kept(cache: Path | None, shared_key: str | None = None) -> ProjectLineage | None:
    """The lineage kept in the file ``cache``, or in the user's cache under ``shared_key``; None if absent."""
    try:
        if cache is not None:
            data = json.loads(cache.read_text()) if cache.is_file() else None
        else:
            data = shared_cache.read("lineage", shared_key or "")
        return None if data is None else ProjectLineage.from_json(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(cache: Path, result: ProjectLineage) -> None:
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".lineage-", dir=cache.parent)
        with os.fdopen(fd, "w") as fh:
            json.dump(result.to_json(), fh)
        os.replace(tmp, cache)
    except OSError:
        pass
