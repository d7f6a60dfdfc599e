"""Column lineage (:mod:`rank_pipeline.transform.lineage`) on a small project written for the rules:
``select *`` expanded, a JSON field's path kept, a looked-up value deriving from its join key, a filter
not being a dependency, transitive sources through a model, and the cache file; and the analysis equal to
the previous one (:func:`reference_lineage`, kept here only) on that project and on the shipped models."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.lineage import Node, lineage
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import build_scope
from support import declare_raw_sources

from rank_pipeline.transform import load_project
from rank_pipeline.transform.lineage import (
    ColumnRef,
    ProjectLineage,
    _analyse,
    _json_path,
    _schema,
    _with_join_keys,
    project_lineage,
)
from rank_pipeline.transform.project import Project

SHIPPED = Path(__file__).resolve().parents[2] / "dbt_like_sql"

STAGING = """
with source as (select * from raw.keywords),
parsed as (
    select *, json_transform(attributes, '{"results": {"organic": {"position": "INTEGER"}}, "tagIds": ["VARCHAR"]}')
        as attrs
    from source
)
select id as keyword_id, snapshot_date, attrs.results.organic.position as position, attrs.tagIds as tag_ids,
       attributes ->> '$.keyword' as keyword
from parsed
"""

MART = """
with k as (select * from staging.stg_kw)
select k.keyword_id, k.snapshot_date, coalesce(c.ctr, 0) as ctr, upper(k.keyword) as keyword, 1 as one
from k
left join seeds.ctr_curve as c on c.position = k.position
where k.snapshot_date > date '2026-01-01'
"""


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    for folder in ("staging", "marts", "seeds"):
        (root / folder).mkdir(parents=True)
    (root / "staging" / "stg_kw.sql").write_text(STAGING)
    (root / "staging" / "stg_kw.yml").write_text("models:\n  - name: stg_kw\n    description: k\n")
    (root / "marts" / "fct_kw.sql").write_text(MART)
    (root / "marts" / "fct_kw.yml").write_text("models:\n  - name: fct_kw\n    description: k\n")
    (root / "seeds" / "ctr_curve.csv").write_text("position,ctr\n1,0.3\n2,0.2\n")
    declare_raw_sources(root)
    return root


def test_lineage_rules(tmp_path):
    lineage = project_lineage(load_project(_project(tmp_path)), tmp_path / "cache")
    assert not lineage.errors
    assert lineage.direct[("staging.stg_kw", "position")] == {
        ColumnRef("raw.keywords", "attributes", "results.organic.position")}
    assert lineage.direct[("staging.stg_kw", "tag_ids")] == {ColumnRef("raw.keywords", "attributes", "tagIds")}
    assert lineage.direct[("staging.stg_kw", "keyword")] == {ColumnRef("raw.keywords", "attributes", "keyword")}
    assert lineage.direct[("staging.stg_kw", "keyword_id")] == {ColumnRef("raw.keywords", "id")}
    # the CTR looked up by position derives from the position; the filter on the date is no dependency
    assert lineage.direct[("marts.fct_kw", "ctr")] == {ColumnRef("seeds.ctr_curve", "ctr"),
                                                      ColumnRef("staging.stg_kw", "position")}
    assert lineage.sources("marts.fct_kw", "ctr") == {
        ColumnRef("seeds.ctr_curve", "ctr"), ColumnRef("raw.keywords", "attributes", "results.organic.position")}
    assert lineage.sources("marts.fct_kw", "keyword_id") == {ColumnRef("raw.keywords", "id")}
    assert lineage.direct[("marts.fct_kw", "one")] == frozenset()
    assert lineage.downstream("staging.stg_kw", "position") == [("marts.fct_kw", "ctr")]
    assert [p.name for p in (tmp_path / "cache").iterdir()][0].startswith("lineage-")


def test_the_shipped_models_have_lineage_for_every_column():
    project = load_project(SHIPPED)
    lineage = project_lineage(project)
    assert not lineage.errors
    assert set(lineage.columns) == {m.qualified_name for m in project.models.values()}
    labels = {r.label for r in lineage.sources("marts.agg_domain_daily", "visibility")}
    assert {"raw.keywords.attributes.results.organic.position", "seeds.ctr_curve.ctr"} <= labels


# The previous analysis, kept only as the reference the one above must equal: per model, sqlglot's
# lineage with its default trimmed selects (a copy of the SELECT for every lineage node), the schema
# rebuilt from the dict on every sqlglot call, and each column's lineage graph walked on its own, its
# struct and JSON reads looked up again for every edge. Slow (seconds for the shipped models), exact.


def _reference_child_path(parent: Node, child: Node, names: Mapping[str, str]) -> str:
    inner = parent.expression.this if isinstance(parent.expression, exp.Alias) else parent.expression
    if not isinstance(inner, exp.Expr):
        return ""
    child_name = child.name
    for dot in inner.find_all(exp.Dot):
        text = dot.sql(dialect="duckdb")
        if text.lower().startswith(child_name.lower() + "."):
            return ".".join(names.get(p, p) for p in text[len(child_name) + 1:].replace('"', "").split("."))
    for extract in inner.find_all(exp.JSONExtract, exp.JSONExtractScalar):
        col = extract.this
        if isinstance(col, exp.Column) and col.sql(dialect="duckdb").replace('"', "") == child_name:
            return _json_path(extract.expression) or ""
    return ""


def _reference_leaves(node: Node, path: str, out: set[ColumnRef], seen: set[tuple[int, str]],
                      names: Mapping[str, str]) -> None:
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
        step = _reference_child_path(node, child, names)
        _reference_leaves(child, ".".join(p for p in (step, path) if p), out, seen, names)


def _reference_model_lineage(sql: str, schema: dict) -> dict[str, frozenset[ColumnRef]]:
    parsed = sqlglot.parse_one(sql, read="duckdb")
    names = {i.name.lower(): i.name for i in parsed.find_all(exp.Identifier)}
    tree = qualify(parsed.copy(), dialect="duckdb", schema=schema, validate_qualify_columns=False, identify=False)
    tree = _with_join_keys(tree)
    nodes = lineage(None, tree, schema=schema, dialect="duckdb", scope=build_scope(tree), copy=False)
    out = {}
    for column, node in nodes.items():
        refs: set[ColumnRef] = set()
        _reference_leaves(node, "", refs, set(), names)
        out[column] = frozenset(refs)
    return out


def reference_lineage(project: Project) -> ProjectLineage:
    """The column lineage of every model of ``project`` by the previous analysis (no memo, no cache)."""
    from rank_pipeline.transform.unit_tests import relation_types

    result = ProjectLineage()
    models = project.topological_order()
    try:
        schema = _schema(relation_types(project))
    except Exception as exc:
        for model in models:
            result.errors[model.qualified_name] = f"the project does not build on empty inputs: {exc}"
        return result
    for model in models:
        try:
            per_column = _reference_model_lineage(model.sql, schema)
        except Exception as exc:  # noqa: BLE001 - as the analysis does
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            result.errors[model.qualified_name] = f"sqlglot could not analyse it: {first}"
            continue
        result.columns[model.qualified_name] = tuple(per_column)
        for column, refs in per_column.items():
            result.direct[(model.qualified_name, column)] = refs
    return result


def _assert_same_as_reference(project: Project) -> None:
    new = _analyse(project, project.topological_order())  # computed here: no memo, no cache file
    old = reference_lineage(project)
    assert set(old.columns) == {m.qualified_name for m in project.models.values()}
    assert sum(len(c) for c in old.columns.values()) == len(old.direct) > 0
    # per model first, so that a difference names its model and columns
    for model, columns in old.columns.items():
        assert new.columns.get(model) == columns, model
        assert {c: new.direct[(model, c)] for c in columns} == {c: old.direct[(model, c)] for c in columns}, model
    assert new.to_json() == old.to_json()
    for relation, column in old.direct:
        assert new.sources(relation, column) == old.sources(relation, column), (relation, column)


def test_lineage_equals_the_reference_on_the_rules_project(tmp_path):
    _assert_same_as_reference(load_project(_project(tmp_path)))


def test_lineage_equals_the_reference_on_every_shipped_model():
    _assert_same_as_reference(load_project(SHIPPED))
