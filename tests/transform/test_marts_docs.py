"""The .yml beside each model documents exactly what the model outputs, and marks dashboard-critical
tests as blocking (DESIGN.md, "SQL models"; each test becomes a Dagster asset check)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rank_pipeline.transform import load_project

pytestmark = pytest.mark.xdist_group(name="sql_models_world")

SQL_DIR = Path(__file__).resolve().parents[2] / "dbt_like_sql"
PROJECT = load_project(SQL_DIR)
MODELS = {m.qualified_name: m for m in PROJECT.topological_order()}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_yml_documents_exactly_the_output_columns(warehouse, name):
    model = MODELS[name]
    cur = warehouse.execute(f"select * from {name} limit 0")
    built = [d[0] for d in cur.description]
    documented = [c.name for c in model.columns]
    assert documented == built, f"{model.path.with_suffix('.yml').name}: document {built}"
    assert all(len(c.description) > 5 for c in model.columns), "every column needs a description"


@pytest.mark.parametrize("name", sorted(n for n in MODELS if n.startswith("marts.")))
def test_every_mart_has_a_grain_test_and_blocking_tests(name):
    model = MODELS[name]
    kinds = {t.kind for t in model.tests}
    assert kinds & {"unique", "unique_combination"}, "the grain must be tested"
    assert any(t.blocking for t in model.tests), "a wrong number on a dashboard must block: mark tests blocking"
    assert len(model.description) > 200, "the description must define the row and every metric"
    if model.materialized == "incremental":
        assert model.incremental.date_column == "snapshot_date"


def test_ctr_curve_seed_is_versioned_and_says_where_it_comes_from():
    (seed,) = [s for s in PROJECT.seeds.values() if s.name == "ctr_curve"]
    assert seed.version is not None
    assert "illustrative" in seed.description.lower()
