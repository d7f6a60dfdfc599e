"""Meeting a vendor's shape through the doors a user takes, as subprocesses with settings in the environment:
a first run against a shape the contract does not read fails and publishes nothing, ``profile`` shows what
the vendor sends, the documented edit (``examples/vendor-b/vendor-b.patch``),
``diff`` and ``rebuild`` from the snapshots already taken fill the marts, equal row by row to the marts of
the default shape for the same world; a field renamed mid-way through the demo's one run over 7 days fails
that run, naming the day of the rename and none before it, and keeps every day's snapshots; one run a day,
the day of the rename fails and the published marts stay at the day before."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from support import assert_same_marts, extracted_keywords, rank_pipeline

from rank_pipeline.settings import models_dir

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("vendor_shape"), pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
PATCH = ROOT / "examples" / "vendor-b" / "vendor-b.patch"
cli = functools.partial(rank_pipeline, timeout=400)
"""``rank-pipeline *args`` on ``data_dir`` (:func:`support.rank_pipeline`; ``day``: with the command's clock on
that day, :func:`support.on_day`), killed past 400 s."""


def _position_range(day) -> tuple[int, int]:
    """The lowest and highest position the embedded sandbox's world gives on ``day`` to the keywords of the
    accounts a run extracts (ground truth: some days no keyword is at 100)."""
    from rank_pipeline.sandbox.world import World

    world = World(today=day)
    positions = [p for _, keyword_id in extracted_keywords(world, day)
                 if (p := world.position(keyword_id, day)) is not None]
    return min(positions), max(positions)


def test_first_contact_with_another_shape_then_the_documented_edit_and_a_rebuild(tmp_path, published_marts):
    vendor, default = tmp_path / "vendor", tmp_path / "default"
    shape = {"RANK_SANDBOX_SHAPE": "vendor-b"}
    day = datetime.now(UTC).date().isoformat()  # both runs play it, should the test cross midnight

    first = cli("run", "--date", day, data_dir=vendor, env=shape)
    out = first.stdout + first.stderr
    assert first.returncode == 1, out
    for path in ("keyword", "searchEngine", "device", "language.code", "results.organic.position",
                 "results.organic.url", "results.organic.capturedAt"):
        assert f"vendor shape: keywords: {path} " in out, path
    position = next(line for line in out.splitlines() if "results.organic.position " in line)
    low, high = _position_range(date.fromisoformat(day))
    assert f"seen instead: serp.rank (integer {low}..{high}," in position
    assert "failed check: " in out and "raw/keywords matches_contract [ERROR (blocking)]" in out
    assert not (vendor / "warehouse.duckdb").exists()  # nothing published
    assert (vendor / "snapshots" / "keywords").is_dir()  # the snapshots are kept

    profile = cli("profile", "--endpoint", "keywords", data_dir=vendor)
    assert profile.returncode == 0, profile.stderr
    rank = next(line for line in profile.stdout.splitlines() if line.startswith("serp.rank "))
    assert rank.split()[1:3] == ["integer", "100.0%"] and rank.split()[-1] == "NO"
    assert "contracted but not seen: keyword, searchEngine, device, language.code" in profile.stdout

    edited = tmp_path / "models"
    shutil.copytree(models_dir(), edited / "dbt_like_sql")
    subprocess.run(["git", "apply", str(PATCH)], cwd=edited, check=True)
    models = {"RANK_PIPELINE_MODELS_DIR": str(edited / "dbt_like_sql")}
    diff = cli("diff", data_dir=vendor, env=models)
    assert "match the contract" in diff.stdout, diff.stdout + diff.stderr
    assert "+ marts.fct_keyword_rankings_daily: new model" in diff.stdout

    rebuild = cli("rebuild", data_dir=vendor, env=models)
    assert rebuild.returncode == 0, rebuild.stderr
    assert "published" in rebuild.stdout

    baseline = cli("run", "--date", day, data_dir=default)
    assert baseline.returncode == 0, baseline.stderr
    assert_same_marts(published_marts(vendor / "warehouse.duckdb"), published_marts(default / "warehouse.duckdb"))
    with duckdb.connect(str(vendor / "warehouse.duckdb"), read_only=True) as con:
        filled = con.execute("select count(position), count(keyword) from marts.fct_keyword_rankings_daily").fetchone()
    assert filled[0] > 0 and filled[1] > 0


def test_a_field_renamed_on_day_5_of_7_fails_the_demos_one_run_naming_that_day(tmp_path):
    day5 = datetime.now(UTC).date() - timedelta(days=2)
    result = cli("demo", "--days", "7", data_dir=tmp_path, env={"RANK_SANDBOX_SHAPE": f"vendor-b@{day5}"})
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    # the demo is one run over the 7 partitions: it fails whole, and its lines name the day of the rename
    failed_for = re.search(r"the daily job failed for ([\d-]{10}) \.\. ([\d-]{10})", out)
    assert failed_for, out
    day1, today = (date.fromisoformat(d) for d in failed_for.groups())
    assert today - day1 == timedelta(days=6) and day1 < day5 <= today  # the demo's days (midnight can pass)
    assert f"failed check: {day1}..{today} raw/keywords matches_contract [ERROR (blocking)]" in out
    position = next(line for line in out.splitlines()
                    if line.startswith("vendor shape: keywords: results.organic.position "))
    assert f" on {day5};" in position
    shape_lines = [line for line in out.splitlines() if line.startswith("vendor shape: ")]
    before = [day1 + timedelta(days=i) for i in range((day5 - day1).days)]
    assert before and not any(f" on {d};" in line for line in shape_lines for d in before)
    assert not (tmp_path / "warehouse.duckdb").exists()  # nothing published
    snapshots = sorted(p.name for p in (tmp_path / "snapshots" / "keywords").glob("snapshot_date=*"))
    assert snapshots == [f"snapshot_date={day1 + timedelta(days=i)}" for i in range(7)]  # all kept


def test_a_daily_run_after_a_rename_fails_its_day_and_the_published_warehouse_stays_at_the_day_before(tmp_path,
                                                                                                   monkeypatch):
    """The schedule's door, one run a day: the day the vendor renames a field exits 1 naming the path, and the
    published marts keep the days before it."""
    today = datetime.now(UTC).date()
    day4, day5 = today - timedelta(days=3), today - timedelta(days=2)
    shape = {"RANK_SANDBOX_SHAPE": f"vendor-b@{day5}"}
    # the run's DuckDB writer is capped by RANK_PIPELINE_DUCKDB_MEMORY_LIMIT, named in the publish's metadata
    good = cli("run", "--date", day4.isoformat(), data_dir=tmp_path,
               env={**shape, "RANK_PIPELINE_DUCKDB_MEMORY_LIMIT": "700MB"})
    assert good.returncode == 0, good.stdout + good.stderr
    from rank_pipeline.defs.instance import open_instance
    from rank_pipeline.defs.warehouse_assets import PUBLISHED_KEY

    # the folder's own instance, as the command's: a DAGSTER_HOME left in this process by an earlier test would
    # be opened instead (CI once read another test's publish here, "DuckDB's default")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    with open_instance(tmp_path) as instance:
        published = instance.get_latest_materialization_event(PUBLISHED_KEY).asset_materialization
    assert published.metadata["duckdb_memory_limit"].value == "700MB"
    bad = cli("run", "--date", day5.isoformat(), data_dir=tmp_path, env=shape)
    out = bad.stdout + bad.stderr
    assert bad.returncode == 1, out
    assert f"the daily job failed for {day5}" in out
    assert "vendor shape: keywords: results.organic.position " in out
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        days = [d for (d,) in con.execute(
            "select distinct snapshot_date from marts.fct_keyword_rankings_daily order by 1").fetchall()]
    assert days == [day4]


def test_profile_live_samples_the_api_and_says_what_the_contract_reads(tmp_path):
    import json

    result = cli("profile", "--live", "20", "--format", "json", data_dir=tmp_path,
                 env={"RANK_SANDBOX_SHAPE": "vendor-b"})
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    endpoints = {e["endpoint"]: e for e in doc["endpoints"]}
    assert set(endpoints) == {"domains", "keywords", "competitors", "tags", "usage", "locations", "languages"}
    keywords = endpoints["keywords"]
    assert 0 < keywords["records"] <= 20
    paths = {p["path"]: p for p in keywords["paths"]}
    assert paths["serp.rank"]["read_by_contract"] is False and "integer" in paths["serp.rank"]["types"]
    assert paths["location.code"]["read_by_contract"] is True and paths["location.code"]["present_share"] == 1.0
    assert not (tmp_path / "snapshots").exists()  # a sample writes nothing


@pytest.mark.parametrize("shape", ["vendor-z", "vendor-b@tomorrow"])
def test_an_unknown_sandbox_shape_is_one_line_and_exit_2(tmp_path, shape):
    result = cli("run", data_dir=tmp_path, env={"RANK_SANDBOX_SHAPE": shape}, timeout=120)
    assert result.returncode == 2
    (line,) = [x for x in result.stderr.splitlines() if x.strip()]
    assert "sandbox shape" in line and "vendor-b" in line


@pytest.mark.parametrize(("variable", "why"), [("RANK_PIPELINE_DUCKDB_MEMORY_LIMIT", "is not an amount of memory"),
                                              ("RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS", "is not a number of days")])
def test_a_malformed_memory_setting_is_one_line_and_exit_2_before_anything_is_written(tmp_path, variable, why):
    result = cli("run", data_dir=tmp_path / "data", env={variable: "lots"}, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.strip()]
    assert f"{variable}='lots' {why}" in line
    assert not (tmp_path / "data").exists()


def test_keywords_plan_refuses_records_it_cannot_read_instead_of_planning_duplicates(tmp_path):
    ran = cli("run", data_dir=tmp_path, env={"RANK_SANDBOX_SHAPE": "vendor-b"})
    assert ran.returncode == 1
    wanted = ROOT / "examples" / "keywords.yml"
    plan = cli("keywords", "plan", "--offline", str(wanted), data_dir=tmp_path)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    (line,) = [x for x in plan.stderr.splitlines() if x.strip()]
    assert "rank-pipeline profile" in line and "created again" in line
