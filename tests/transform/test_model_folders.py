"""The door subset of models (``model_folders.DOOR_MODELS``) keeps what its docstring claims: it loads as a
project of its own, closed under parents, with one model of each kind the Spark engine builds differently
and every seed, so the Spark door tests that build it cover each of those paths."""

from __future__ import annotations

from rank_pipeline.transform import load_project
from rank_pipeline.transform.dependencies import RAW_SCHEMA
from tests.transform.model_folders import DOOR_MODELS, ROOT, door_models


def test_the_door_subset_is_closed_and_holds_one_model_of_each_kind(tmp_path):
    shipped = load_project(ROOT / "dbt_like_sql")
    subset = load_project(door_models(tmp_path))
    names = {m.qualified_name for m in subset.models.values()}
    assert names == set(DOOR_MODELS)
    assert set(subset.seeds) == set(shipped.seeds)
    for model in subset.models.values():  # closed: every parent is raw, a seed or a kept model
        for parent in model.depends_on:
            schema = parent.split(".", 1)[0]
            assert schema in (RAW_SCHEMA, "seeds") or parent in names, (model.qualified_name, parent)
    kinds = {(m.materialized, m.incremental.strategy if m.incremental else None, m.reads_itself)
             for m in subset.models.values()}
    assert {("view", None, False), ("table", None, False), ("incremental", "fold", True),
            ("incremental", "delete+insert", True), ("incremental", "delete+insert", False)} <= kinds, kinds
    assert any(p.startswith("seeds.") for m in subset.models.values() for p in m.depends_on)
    assert any("json_transform" in m.sql for m in subset.models.values())  # Spark's from_json rewrite
