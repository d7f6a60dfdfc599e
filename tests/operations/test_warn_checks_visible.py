"""A WARN check that fails blocks nothing, and is named wherever people look: the command line's closing
lines, the alert digest, ``ops.run_history`` and the Data health dashboard's dataset."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from support import rank_pipeline

from rank_pipeline.settings import models_dir

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e_warn_checks_visible"), pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]


def test_a_failed_warn_check_is_named_on_the_command_line_in_the_digest_history_and_dashboard(
        tmp_path, http_receiver):
    bodies, url = http_receiver
    models = tmp_path / "dbt_like_sql"
    shutil.copytree(models_dir(), models)
    yml = models / "marts" / "dim_domains.yml"
    yml.write_text(yml.read_text().replace(
        '      - expression: "first_seen_date <= last_seen_date"\n        blocking: true\n',
        '      - expression: "first_seen_date <= last_seen_date"\n        blocking: true\n'
        '      - expression: "tracked_keywords < 0"\n        name: never_true_warn\n        blocking: false\n', 1))
    # no DAGSTER_HOME of this process (a test before may have set one in-process): the run's own instance
    env = {"RANK_PIPELINE_MODELS_DIR": str(models), "RANK_PIPELINE_ALERT_URLS": url}
    result = rank_pipeline("run", data_dir=tmp_path / "data", env=env, timeout=500)
    assert result.returncode == 0, result.stderr  # a WARN check blocks nothing
    line = next(x for x in result.stderr.splitlines() if x.startswith("failed check: "))
    assert "marts/dim_domains never_true_warn [WARN]:" in line and line.endswith("failing")
    failing = int(line.rsplit(": ", 1)[1].split()[0])
    assert failing > 0
    assert "checks " in result.stdout and "/ 1 failed" in result.stdout

    digest = "\n".join(json.dumps(b) for b in bodies)
    assert "Failed WARN asset checks" in digest and "never_true_warn on marts/dim_domains" in digest

    published = tmp_path / "data" / "warehouse.duckdb"
    dataset = (ROOT / "dashboards" / "datasets" / "pipeline_runs.sql").read_text()
    with duckdb.connect(str(published), read_only=True) as con:
        rows = con.execute("select failed_checks from ops.run_history").fetchall()
        assert len(rows) == 1, rows  # this folder's one run and partition, no other run caught up
        ((history,),) = rows
        (shown,) = con.execute(f"select failed_checks from ({dataset})").fetchone()
    assert history == shown == "marts/dim_domains:never_true_warn [WARN]"


def test_new_vendor_fields_are_told_once_in_the_digest(tmp_path, http_receiver):
    bodies, url = http_receiver
    # no DAGSTER_HOME of this process (a test before may have set one in-process): the run's own instance
    env = {"RANK_PIPELINE_ALERT_URLS": url, "RANK_SANDBOX_SHAPE": "vendor-b"}
    for _ in range(2):
        result = rank_pipeline("run", data_dir=tmp_path / "data", env=env, timeout=500)
        assert result.returncode == 1, result.stderr  # the contract does not read vendor-b: blocked
    digests = [json.dumps(b) for b in bodies]
    assert len(digests) == 2
    assert "new fields in the vendor's keywords records: " in digests[0]
    for path in ("serp.rank (integer", "serp.landingPage (string", "phrase (string", "engine.name (string"):
        assert path in digests[0], path
    assert "new fields" not in digests[1]  # told once, not every day
    assert "matches_contract on raw/keywords" in digests[0]
    assert "run FAILED" in digests[1]  # each failed run is told; the same day's failed check once
    recorded = json.loads((tmp_path / "data" / "vendor_fields.json").read_text())
    assert "serp.rank" in recorded["keywords"]
