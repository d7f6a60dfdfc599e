"""End to end: the Dagster assets over real HTTP on loopback against the sandbox, for several days.

Ground truth is the sandbox's World: record counts per resource, positions and their day-to-day change.
"""

from __future__ import annotations

import hashlib
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from rank_pipeline.defs.extract_assets import extract_snapshots
from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource
from rank_pipeline.sandbox import SandboxServer, World, create_app

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

START = date(2026, 10, 30)  # spans a month boundary: usage resets on the 1st
DAYS = [START + timedelta(days=i) for i in range(4)]


def _assets():
    """Every asset of the daily job, as ``workspace.yaml`` loads them (run history and keywords file included)."""
    from rank_pipeline.defs.definitions import defs

    return list(defs.assets)



def _materialize(served_source, world: World, base_url: str, data_dir: Path, day: date, keys: dict[str, str] | None = None,
                 instance: dg.DagsterInstance | None = None):
    world.set_today(day)
    accounts = keys or {a.name: a.api_key for a in world.accounts if a.api_enabled}
    with served_source(base_url, accounts) as source:
        resources = {"source": source, "warehouse": WarehouseResource(data_dir=str(data_dir)),
                     "model_engine": ModelEngineResource()}
        return dg.materialize(_assets(), partition_key=day.isoformat(), resources=resources,
                              instance=instance, raise_on_error=False)


@pytest.fixture(scope="module")
def pipeline_run(tmp_path_factory, served_source):
    """Run every asset for 4 consecutive days; yields (world, data_dir, base_url, instance)."""
    data_dir = tmp_path_factory.mktemp("e2e")
    world = World(today=DAYS[0])
    instance = dg.DagsterInstance.ephemeral()
    with SandboxServer(create_app(world)) as server:
        for day in DAYS:
            result = _materialize(served_source, world, server.base_url, data_dir, day, instance=instance)
            assert result.success, f"daily run failed for {day}"
        yield world, data_dir, server.base_url, instance


def _served(base_url: str) -> int:
    """Requests the sandbox has answered so far (its own count, the referee)."""
    import httpx

    stats = httpx.get(f"{base_url}/_sandbox/stats").json()
    return sum(ip["requests"] for ip in stats["ips"].values())


def _api_accounts(world):
    return [a for a in world.accounts if a.api_enabled]


@pytest.mark.slow
def test_raw_row_counts_equal_the_sandbox_record_counts(pipeline_run):
    world, data_dir, _, _ = pipeline_run
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as con:
        for day in DAYS:
            expected = {"domains": 0, "keywords": 0, "competitors": 0, "tags": 0, "usage": 0}
            for account in _api_accounts(world):
                domains = world.domains(account.account_id, day=day)
                expected["domains"] += len(domains)
                expected["keywords"] += sum(len(world.keywords(d["id"], day=day)) for d in domains)
                expected["competitors"] += sum(len(world.competitors(d["id"], day=day)) for d in domains)
                expected["tags"] += len(world.tags(account.account_id, day=day))
                expected["usage"] += 1
            for resource, n in expected.items():
                got = con.execute(f"select count(*) from raw.{resource} where snapshot_date = ?", [day]).fetchone()[0]
                assert got == n, f"raw.{resource} on {day}: {got} rows, sandbox has {n}"
                distinct = con.execute(
                    f"select count(distinct (account, id)) from raw.{resource} where snapshot_date = ?", [day]
                ).fetchone()[0]
                assert distinct == n


@pytest.mark.slow
def test_positions_and_changes_equal_the_sandbox_ground_truth(pipeline_run):
    world, data_dir, _, _ = pipeline_run
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "select keyword_id, snapshot_date, position, position_change_1d from marts.fct_keyword_rankings_daily"
        ).fetchall()
    got = {(k, d): (p, c) for k, d, p, c in rows}
    checked = changed = 0
    for account in _api_accounts(world):
        for day in DAYS:
            for domain in world.domains(account.account_id, day=day):
                for kw in world.keywords(domain["id"], day=day):
                    kid = kw["id"]
                    truth = world.position(kid, day)
                    position, change = got[(kid, day)]
                    assert position == truth, f"{kid} {day}: position {position}, truth {truth}"
                    prev_day = day - timedelta(days=1)
                    if prev_day in DAYS and (kid, prev_day) in got:
                        prev = world.position(kid, prev_day)
                        expected = prev - truth if prev is not None and truth is not None else None
                        assert change == expected, f"{kid} {day}: change {change}, truth {expected}"
                        changed += expected not in (None, 0)
                    checked += 1
    assert checked > 100 and changed > 10


@pytest.mark.slow
def test_snapshot_manifests_are_complete_and_hold_no_key(pipeline_run):
    world, data_dir, _, _ = pipeline_run
    import json

    for manifest_path in (data_dir / "snapshots").rglob("_manifest.json"):
        manifest = json.loads(manifest_path.read_text())
        assert manifest["complete"] is True, manifest_path


@pytest.mark.slow
def test_api_key_never_reaches_snapshots_warehouse_or_run_metadata(pipeline_run):
    world, data_dir, _, instance = pipeline_run
    keys = [a.api_key.encode() for a in world.accounts]
    for path in data_dir.rglob("*"):
        if path.is_file():
            blob = path.read_bytes()
            for key in keys:
                assert key not in blob, f"API key found in {path}"
    for run in instance.get_runs():
        text = str(run.run_config) + str(run.tags)
        for record in instance.all_logs(run.run_id):
            text += str(record.user_message) + str(record.dagster_event)
        for key in keys:
            assert key.decode() not in text


@pytest.mark.slow
def test_wrong_key_fails_fast_and_leaves_earlier_days_intact(pipeline_run, served_source):
    world, data_dir, base_url, _ = pipeline_run

    def fingerprint():
        # the snapshots and the published warehouse byte for byte; the private build file by content
        # (a failed run may still reload the CTR seed there, with identical rows)
        files = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(data_dir.rglob("*"))
                 if p.is_file() and p.name != "warehouse.build.duckdb"}
        with duckdb.connect(str(data_dir / "warehouse.build.duckdb"), read_only=True) as con:
            tables = con.execute("select schema_name, table_name, estimated_size from duckdb_tables() "
                                 "order by all").fetchall()
            raw = con.execute("select count(*), max(snapshot_date) from raw.keywords").fetchone()
        return files, tables, raw

    before = fingerprint()
    requests_before = _served(base_url)
    result = _materialize(served_source, world, base_url, data_dir, DAYS[-1], keys={"acme": "not-a-real-key"})
    assert not result.success
    # fails on the first answer: a 401 is never retried (no stack of retries, so within seconds)
    assert _served(base_url) - requests_before == 1
    failures = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    message = str(failures[0].event_specific_data.error)
    assert "the API key was rejected (missing, malformed, wrong or deleted)" in message
    assert "not-a-real-key" not in message
    assert fingerprint() == before


@pytest.mark.slow
def test_past_date_is_refused_by_a_source_whose_today_differs(pipeline_run, tmp_path):
    world, _, base_url, _ = pipeline_run
    world.set_today(DAYS[-1])
    from rank_pipeline.extract.day import AccountSource, PastDateError, run_extraction

    account = _api_accounts(world)[0]
    with pytest.raises(PastDateError, match="only tells the present"):
        run_extraction(base_url, [AccountSource(account.name, account.api_key)], DAYS[0], tmp_path)
    assert not any(tmp_path.rglob("*.parquet"))


def test_unknown_host_is_a_clear_connection_error(tmp_path):
    from rank_pipeline.api import TransportError
    from rank_pipeline.extract.day import AccountSource, run_extraction

    url = "https://rank-tracker.invalid"
    with pytest.raises(TransportError) as info:
        run_extraction(url, [AccountSource("default", "k")], date.today(), tmp_path)
    assert url in str(info.value) and "could not reach" in str(info.value)


@pytest.mark.slow
def test_readme_and_demo_queries_run_on_the_published_warehouse(pipeline_run):
    """The example SQL of the docs' "Querying the warehouse" page and the demo's two answers stay in step with
    the marts."""
    import re

    from rank_pipeline.cli.pipeline import QUOTA_BURN_QUERY, RANKING_TRENDS_QUERY

    _, data_dir, _, _ = pipeline_run
    readme = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "querying.md").read_text()
    queries = re.findall(r"```sql\n(.*?)```", readme, re.S)
    assert len(queries) >= 3
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as con:
        for sql in [*queries, RANKING_TRENDS_QUERY, QUOTA_BURN_QUERY]:
            con.execute(sql).fetchall()
        trends = con.execute(RANKING_TRENDS_QUERY).fetchall()
        assert [row[0] for row in trends] == DAYS


def test_the_account_identity_check_reads_the_warehouse_resources_snapshots_location(tmp_path, served_source):
    """The snapshots live where the ``warehouse`` resource says (``snapshots_uri``, set in the launchpad,
    not in the environment): a renamed account is refused against THOSE snapshots, and nothing is written."""
    world = World(today=DAYS[0])
    key = world.account("acme").api_key
    elsewhere = tmp_path / "lake"

    def extract(name: str):
        with served_source(base_url, {name: key}) as source:
            resources = {"source": source,
                         "warehouse": WarehouseResource(data_dir=str(tmp_path / "data"), snapshots_uri=str(elsewhere))}
            return dg.materialize([extract_snapshots], partition_key=DAYS[0].isoformat(), resources=resources,
                                  raise_on_error=False)

    with SandboxServer(create_app(world)) as server:
        base_url = server.base_url
        assert extract("acme").success
        written = sorted(p for p in elsewhere.rglob("*") if p.is_file())
        assert written and not (tmp_path / "data" / "snapshots").exists()
        renamed = extract("acme_renamed")
    assert not renamed.success
    failure = next(e for e in renamed.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE)
    assert "holds domains this data folder records under account 'acme'" in str(failure.event_specific_data.error)
    assert sorted(p for p in elsewhere.rglob("*") if p.is_file()) == written
