"""Models projects for the door tests: a subset of the shipped models (the Spark doors), and a copy with a
blocking test that fails (the doors that must stop downstream on it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

DOOR_MODELS = ("staging.stg_domains", "staging.stg_keywords", "marts.dim_domains", "marts.dim_keywords",
               "marts.fct_keyword_best_position_daily", "marts.fct_keyword_rankings_daily")
"""The models a Spark door test builds (:func:`door_models`): one of each kind the Spark engine builds
differently, closed under their parents. A view stored by day (``stg_domains``), an incremental model
reading raw JSON (``stg_keywords``), a table (``dim_domains``), a fold over its own rows (``dim_keywords``),
an incremental model reading itself (``fct_keyword_best_position_daily``) and the widest mart, reading seeds
(``fct_keyword_rankings_daily``); every seed. Spark's cost is per relation, not per row, so a door test
spends its time on the door, not on 21 more models. Every shipped model is compared with DuckDB on Spark
by ``test_spark_equality.py`` (on the standalone cluster) and ``test_any_order_spark.py`` (``local[2]``);
``test_model_folders.py`` holds this subset to its kinds."""


def door_models(tmp: Path, name: str = "door_models") -> Path:
    """A copy of ``dbt_like_sql/`` under ``tmp/<name>`` holding only :data:`DOOR_MODELS` (and every seed and
    source). Returns its folder (``RANK_PIPELINE_MODELS_DIR``)."""
    models = tmp / name
    shutil.copytree(ROOT / "dbt_like_sql", models)
    keep = {q.split(".", 1)[1] for q in DOOR_MODELS}
    for layer in ("staging", "marts"):
        for path in (models / layer).iterdir():
            if path.stem not in keep:
                path.unlink()
    return models


def failing_models(tmp: Path, base: Path | None = None) -> Path:
    """A copy of ``base`` (default ``dbt_like_sql/``) under ``tmp/models`` whose ``stg_domains`` has a
    blocking test, ``no_domain_may_exist``, failing on every row. Returns the copy's folder
    (``RANK_PIPELINE_MODELS_DIR``)."""
    models = tmp / "models"
    shutil.copytree(base or ROOT / "dbt_like_sql", models)
    yml = models / "staging" / "stg_domains.yml"
    doc = yaml.safe_load(yml.read_text())
    doc["models"][0].setdefault("tests", []).append(
        {"expression": "domain_id is null", "name": "no_domain_may_exist", "blocking": True}
    )
    yml.write_text(yaml.safe_dump(doc, sort_keys=False))
    return models
