"""Column lineage (:mod:`rank_pipeline.models.lineage`) on a small project written for the rules:
``select *`` expanded, a JSON field's path kept, a looked-up value deriving from its join key, a filter
not being a dependency, transitive sources through a model, and the cache file."""

from __future__ import annotations

from pathlib import Path

from rank_pipeline.models import load_project
from rank_pipeline.models.lineage import ColumnRef, project_lineage

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
    root = Path(__file__).resolve().parents[2] / "dbt_like_sql"
    project = load_project(root)
    lineage = project_lineage(project)
    assert not lineage.errors
    assert set(lineage.columns) == {m.qualified_name for m in project.models.values()}
    labels = {r.label for r in lineage.sources("marts.agg_domain_daily", "visibility")}
    assert {"raw.keywords.attributes.results.organic.position", "seeds.ctr_curve.ctr"} <= labels
