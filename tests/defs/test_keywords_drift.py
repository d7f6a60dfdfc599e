"""The keywords file's drift through Dagster: ``raw/keywords_file`` and its asset check
``matches_tracked_keywords`` materialized with ``dg.materialize`` over a day extracted from the sandbox
(served over HTTP), then the mart ``marts.keywords_file_vs_tracked`` built by ``rank-pipeline rebuild``.
Ground truth: the world's keywords of the domain on that day."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml
from support import rank_pipeline, run_on

from rank_pipeline.api.fields import keyword_combination
from rank_pipeline.defs.keywords_assets import DRIFT_CHECK, build_keywords_file_asset
from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource
from rank_pipeline.sandbox import SandboxServer, World, create_app
from rank_pipeline.settings import models_dir
from rank_pipeline.transform.contract import load_contract

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("keywords")]


def file_of(combos: list[tuple], frequency: dict[tuple, str]) -> dict:
    groups = [{"words": [w], "engines": [e], "devices": [d], "locations": [loc], "languages": [lang],
               "frequency": frequency[(w, e, d, loc, lang)]} for w, e, d, loc, lang in combos]
    return {"version": 1, "domains": [{"domain": "acme-shop.net", "account": "acme", "groups": groups}]}


def materialize(path: Path, data_dir: Path, day: str):
    result = dg.materialize([build_keywords_file_asset(path)], partition_key=day,
                            resources={"warehouse": WarehouseResource(data_dir=str(data_dir)),
                                       "model_engine": ModelEngineResource()})
    assert result.success
    (evaluation,) = result.get_asset_check_evaluations()
    assert evaluation.check_name == DRIFT_CHECK
    return evaluation


@pytest.mark.slow
def test_drift_check_and_mart_against_the_days_snapshot(tmp_path):
    today = datetime.now(UTC).date()
    world = World(today=today)
    acme = world.account("acme")
    domain_id = next(d["id"] for d in world.domains(acme.account_id) if d["attributes"]["domain"] == "acme-shop.net")
    records = world.keywords(domain_id)
    contract = load_contract(models_dir())
    tracked = {keyword_combination(r["attributes"], contract): r["id"] for r in records}
    frequency = {keyword_combination(r["attributes"], contract): r["attributes"]["frequency"] for r in records}
    data_dir = tmp_path / "data"
    with SandboxServer(create_app(world)) as server:
        env = {"RANK_TRACKER_BASE_URL": server.base_url, "RANK_TRACKER_ACCOUNTS": "acme",
               "RANK_TRACKER_API_KEY_ACME": acme.api_key, "RANK_PIPELINE_DATA_DIR": str(data_dir)}
        # the command's clock on the world's day: against a served API a past day is refused, so a run that
        # crosses midnight (UTC) between the two clock reads would fail
        done = run_on(today, "extract", env=env)
        assert done.returncode == 0, done.stderr

    # the file says exactly what is tracked: the check passes
    same = tmp_path / "same.yml"
    same.write_text(yaml.safe_dump(file_of(sorted(tracked), frequency)))
    evaluation = materialize(same, data_dir, today.isoformat())
    assert evaluation.passed
    assert evaluation.metadata["already_tracked"].value == len(tracked)

    # one tracked keyword left out, one new word added: the check fails and names both
    dropped = sorted(tracked)[0]
    extra = ("kw drift new", "google", "desktop", "2840", "en")
    frequency[extra] = "daily"
    drift = tmp_path / "drift.yml"
    drift.write_text(yaml.safe_dump(file_of([*sorted(tracked)[1:], extra], frequency)))
    evaluation = materialize(drift, data_dir, today.isoformat())
    assert not evaluation.passed
    meta = {k: v.value for k, v in evaluation.metadata.items()}
    assert (meta["to_create"], meta["not_in_file"], meta["already_tracked"]) == (1, 1, len(tracked) - 1)
    assert "kw drift new" in meta["to_create_sample"][0] and tracked[dropped] in meta["not_in_file_sample"][0]

    # the same plan from the command line, offline (the snapshot, no request): changes pending
    offline = rank_pipeline("keywords", "plan", str(drift), "--offline", "--detailed-exitcode", data_dir=data_dir,
                            env={"RANK_TRACKER_ACCOUNTS": "acme"}, timeout=600)
    assert offline.returncode == 4, offline.stdout + offline.stderr
    assert f"Plan: 1 to create, {len(tracked) - 1} already tracked, 1 tracked but not in the file" in offline.stdout

    # the mart, built from the snapshots and raw.keywords_file, lists the file against the tracked keywords
    # (the rebuild job plans the file of RANK_PIPELINE_KEYWORDS_FILE against the snapshot, as the daily job does)
    rebuilt = rank_pipeline("rebuild", data_dir=data_dir, env={"RANK_PIPELINE_KEYWORDS_FILE": str(drift)},
                            timeout=600)
    assert rebuilt.returncode == 0, rebuilt.stderr
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("select keyword, search_engine, device, location_code, language_code, status, keyword_id "
                           "from marts.keywords_file_vs_tracked").fetchall()
    by_status: dict[str, set] = {}
    for *combo, status, keyword_id in rows:
        by_status.setdefault(status, set()).add((tuple(combo), keyword_id))
    assert by_status["tracked"] == {(c, i) for c, i in tracked.items() if c != dropped}
    assert by_status["missing"] == {(extra, None)}
    assert by_status["not_in_file"] == {(dropped, tracked[dropped])}
