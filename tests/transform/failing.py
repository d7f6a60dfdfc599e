"""A models project with a blocking test that fails: for the doors that must stop downstream on it."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def failing_models(tmp: Path) -> Path:
    """A copy of ``dbt_like_sql/`` under ``tmp/models`` whose ``stg_domains`` has a blocking test,
    ``no_domain_may_exist``, failing on every row. Returns the copy's folder (``RANK_PIPELINE_MODELS_DIR``)."""
    models = tmp / "models"
    shutil.copytree(ROOT / "dbt_like_sql", models)
    yml = models / "staging" / "stg_domains.yml"
    doc = yaml.safe_load(yml.read_text())
    doc["models"][0].setdefault("tests", []).append(
        {"expression": "domain_id is null", "name": "no_domain_may_exist", "blocking": True})
    yml.write_text(yaml.safe_dump(doc, sort_keys=False))
    return models
