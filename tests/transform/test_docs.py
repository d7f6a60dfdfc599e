"""The generated data dictionary (rank_pipeline.transform.docs)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support import declare_raw_sources

from rank_pipeline.transform import DependencyError, load_project
from rank_pipeline.transform.docs import render_data_dictionary, write_data_dictionary

FILES = {
    "staging/stg_kw.sql": "select id as keyword_id, snapshot_date from raw.keywords\n",
    "staging/stg_kw.yml": """
        models:
          - name: stg_kw
            description: One row per keyword per day.
            config: {materialized: view}
            columns:
              - name: keyword_id
                description: "The keyword's UUID | pipe"
                tests: [not_null, {accepted_values: {values: [a, b]}}]
              - name: snapshot_date
        """,
    "marts/fct_kw.sql": "select * from staging.stg_kw join seeds.ctr on true\n",
    "marts/fct_kw.yml": """
        models:
          - name: fct_kw
            description: Daily keyword facts.
            config:
              materialized: incremental
              unique_key: [keyword_id, snapshot_date]
              incremental: {lookback_days: 7}
              blocking_tests: true
            columns:
              - name: keyword_id
                description: Keyword.
                tests: [{relationships: {to: staging.stg_kw, field: keyword_id}}]
            tests:
              - expression: "keyword_id <> ''"
        """,
    "seeds/ctr.csv": "position,ctr\n1,0.3\n",
    "seeds/ctr.yml": """
        seeds:
          - name: ctr
            description: CTR curve.
            version: 3
            columns:
              - {name: position, description: Position., data_type: integer}
        """,
}


def _project(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    declare_raw_sources(root)
    return root


def test_dictionary_documents_every_model_seed_column_and_test(tmp_path):
    out = write_data_dictionary(_project(tmp_path / "proj"), tmp_path / "docs" / "dd.md")
    text = out.read_text()
    for heading in ("### seeds.ctr", "### staging.stg_kw", "### marts.fct_kw"):
        assert text.count(heading) == 1
    stg = text[text.index("### staging.stg_kw"):text.index("### marts.fct_kw")]
    assert "One row per keyword per day." in stg and "- Materialization: view" in stg
    assert "- Depends on: `raw.keywords`" in stg
    assert "- Used by: [`marts.fct_kw`](#martsfct_kw)" in stg
    assert "| `keyword_id` | The keyword's UUID \\| pipe | not_null; accepted_values: a, b |" in stg
    assert "| `snapshot_date` | — | — |" in stg
    fct = text[text.index("### marts.fct_kw"):]
    assert "- Materialization: incremental by `snapshot_date`, lookback 7 days" in fct
    assert "- Grain (unique key): `keyword_id`, `snapshot_date`" in fct
    assert "[`seeds.ctr`](#seedsctr)" in fct and "[`staging.stg_kw`](#stagingstg_kw)" in fct
    assert "relationships: staging.stg_kw.keyword_id (blocking)" in fct
    assert "- `keyword_id_ne` (blocking): expression: keyword_id <> ''" in fct
    seed = text[text.index("### seeds.ctr"):text.index("### staging.stg_kw")]
    assert "version 3" in seed and "| `position` (integer) | Position. | — |" in seed
    # deterministic
    assert render_data_dictionary(load_project(tmp_path / "proj")) == text


def test_invalid_project_writes_nothing(tmp_path):
    root = _project(tmp_path / "proj")
    (root / "marts" / "fct_kw.sql").write_text("select * from staging.nope\n")
    with pytest.raises(DependencyError):
        write_data_dictionary(root, tmp_path / "dd.md")
    assert not (tmp_path / "dd.md").exists()


def test_the_real_project_renders_every_model():
    root = Path(__file__).resolve().parents[2] / "dbt_like_sql"
    project = load_project(root)
    text = render_data_dictionary(project)
    for model in project.models.values():
        assert f"### {model.qualified_name}\n" in text
        for column in model.columns:
            assert f"| `{column.name}`" in text
