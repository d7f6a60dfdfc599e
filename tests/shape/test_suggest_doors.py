"""The suggested remap through the command line, on fresh data folders: a run against another shape fails and
says to run the suggestion, ``profile --suggest`` writes a patch of the contract alone, applied unedited it
makes ``rebuild`` pass and a fresh ``run`` on a new data folder pass, and the marts of both equal, row by row,
the marts of the default shape of the same world (vendor-b: renames and nesting in keywords; vendor-c: renames
in keywords, tags and competitors, the position and the search volume sent as text with sentinels). After it,
``keywords plan`` of the tracked keywords shows 0 changes and the lookups ask one engine per keyword (the run's
requests and its lookup lists equal the default shape's). ``profile --suggest --live N`` writes the same patch
from a sample of the API, writing nothing under the data folder."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from support import assert_same_marts
from test_vendor_shape_doors import PATCH, cli

from rank_pipeline.settings import models_dir

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("vendor_shape"), pytest.mark.timeout(1200)]

DAY = datetime.now(UTC).date().isoformat()
"""The day every run of the embedded sandbox here plays: their marts are compared, and the module can cross
midnight, UTC."""


def tracked_keywords_file(warehouse: Path, path: Path) -> int:
    """Write at ``path`` a keywords file of every keyword tracked in ``warehouse`` (one group each, the
    location as its geo-target id); return how many combinations it names."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(
            "select distinct d.domain, k.account, k.keyword, k.search_engine, k.device, k.location_code, "
            "k.language_code, k.frequency from staging.stg_keywords k join staging.stg_domains d "
            "using (domain_id, account, snapshot_date) order by all").fetchall()
    domains: dict[tuple[str, str], list[dict]] = {}
    for domain, account, word, engine, device, location, language, frequency in rows:
        domains.setdefault((domain, account), []).append(
            {"words": [word], "engines": [engine], "devices": [device], "locations": [location],
             "languages": [language], "frequency": frequency})
    doc = {"version": 1, "domains": [{"domain": d, "account": a, "groups": g} for (d, a), g in domains.items()]}
    path.write_text(json.dumps(doc, indent=1))  # JSON is YAML
    return len(rows)


@pytest.fixture(scope="module")
def default_run(tmp_path_factory, published_marts):
    """The default shape's day: ``(data folder, marts)``."""
    folder = tmp_path_factory.mktemp("default")
    result = cli("run", "--date", DAY, data_dir=folder)
    assert result.returncode == 0, result.stderr
    return folder, published_marts(folder / "warehouse.duckdb")


def _project(root: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the shipped models folder in a git work tree, and the setting that points at it."""
    shutil.copytree(models_dir(), root / "dbt_like_sql")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root, {"RANK_PIPELINE_MODELS_DIR": str(root / "dbt_like_sql")}


@pytest.mark.parametrize("shape", ["vendor-b", "vendor-c", "vendor-d", "vendor-e"])
def test_the_suggested_patch_applied_unedited_gives_the_default_marts(tmp_path, shape, default_run, published_marts):
    default, default_marts = default_run
    data, fresh = tmp_path / "data", tmp_path / "fresh"
    project, models = _project(tmp_path / "project")
    vendor = {"RANK_SANDBOX_SHAPE": shape}

    first = cli("run", "--date", DAY, data_dir=data, env={**vendor, **models}, cwd=project)
    out = first.stdout + first.stderr
    assert first.returncode == 1, out
    lines = [x for x in out.splitlines() if x.startswith("vendor shape: ")]
    assert lines and all("`rank-pipeline profile --suggest` writes the edit" in x for x in lines)
    assert not (data / "warehouse.duckdb").exists()

    suggested = cli("profile", "--suggest", data_dir=data, env=models, cwd=project)
    assert suggested.returncode == 0, suggested.stderr
    assert "TIE" not in suggested.stdout
    patch = project / "remap.patch"
    patch.write_text(suggested.stdout)
    touched = [x[6:] for x in suggested.stdout.splitlines() if x.startswith("+++ b/")]
    assert touched == ["dbt_like_sql/sources/vendor_contract.yml"]  # the contract alone
    subprocess.run(["git", "apply", str(patch)], cwd=project, check=True)

    rebuild = cli("rebuild", data_dir=data, env=models, cwd=project)
    assert rebuild.returncode == 0, rebuild.stdout + rebuild.stderr
    assert_same_marts(published_marts(data / "warehouse.duckdb"), default_marts)

    # a fresh data folder: the daily run against the vendor's shape passes with the remapped contract
    run = cli("run", "--date", DAY, data_dir=fresh, env={**vendor, **models}, cwd=project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert_same_marts(published_marts(fresh / "warehouse.duckdb"), default_marts)

    # keywords plan reads the tracked keywords through the remapped contract: the file of them is 0 changes
    wanted = tmp_path / "tracked.yml"
    n = tracked_keywords_file(default / "warehouse.duckdb", wanted)
    plan = cli("keywords", "plan", "--offline", str(wanted), data_dir=fresh, env=models, cwd=project)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert plan.stdout.strip().splitlines()[-1].startswith(f"Plan: 0 to create, {n} already tracked, 0 tracked")
    # one keyword more: the plan weighs it against the quota the usage record holds, read through the contract
    doc = json.loads(wanted.read_text())
    doc["domains"][0]["groups"].append({**doc["domains"][0]["groups"][0], "words": ["rank pipeline quota probe"]})
    wanted.write_text(json.dumps(doc))
    plan = cli("keywords", "plan", "--offline", str(wanted), data_dir=fresh, env=models, cwd=project)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    quota = [x for x in plan.stdout.splitlines() if "remaining" in x]
    assert quota and all(re.search(r"remaining [\d,]+ keyword\(s\), [\d,]+ data row\(s\)", x) for x in quota), plan.stdout


def test_profile_suggest_live_writes_the_documented_remap_and_nothing_else(tmp_path):
    """``profile --suggest --live 20`` against the embedded sandbox serving vendor-b: a patch that applies to
    the contract alone and reads each renamed field where the documented edit does (examples/vendor-b)."""
    suggested_project, models = _project(tmp_path / "suggested")
    documented, _ = _project(tmp_path / "documented")
    data = tmp_path / "data"
    result = cli("profile", "--suggest", "--live", "20", data_dir=data, env={"RANK_SANDBOX_SHAPE": "vendor-b", **models},
                 cwd=suggested_project)
    assert result.returncode == 0, result.stderr
    assert "suggested from a live sample of up to 20 records per endpoint" in result.stdout
    assert "TIE" not in result.stdout
    for field, path in (("keyword", "phrase"), ("search_engine", "engine.name"), ("device", "engine.device"),
                        ("language_code", "language"), ("position", "serp.rank"),
                        ("ranking_url", "serp.landingPage"), ("captured_at", "serp.capturedAt")):
        assert f"+      - {{name: {field}, path: {path}," in result.stdout, field
    patch = tmp_path / "remap.patch"
    patch.write_text(result.stdout)
    subprocess.run(["git", "apply", str(patch)], cwd=suggested_project, check=True)
    subprocess.run(["git", "apply", str(PATCH)], cwd=documented, check=True)
    contract = Path("dbt_like_sql") / "sources" / "vendor_contract.yml"
    assert (suggested_project / contract).read_text() == (documented / contract).read_text()
    assert not data.exists()  # a sample writes nothing


class LookupRecorder:
    """An ASGI wrapper in front of the sandbox app keeping ``(path, query)`` of every lookup request."""

    def __init__(self, app):
        self.app, self.lookups = app, []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] in ("/v1/locations", "/v1/languages"):
            query = dict(pair.split("=", 1) for pair in scope["query_string"].decode().split("&") if "=" in pair)
            self.lookups.append((scope["path"], query.get("code"), query.get("search_engine")))
        await self.app(scope, receive, send)

    def asked(self) -> tuple[set, set]:
        """``({(location code, engine)}, {engine})`` of the locations and languages lookups since the last call."""
        seen, self.lookups = self.lookups, []
        return ({(c, e) for p, c, e in seen if p == "/v1/locations"},
                {e for p, _, e in seen if p == "/v1/languages"})


def test_after_the_remap_keywords_plan_shows_0_changes_and_the_lookups_ask_one_engine(tmp_path):
    """A small world served over HTTP in vendor-b's shape, whose keywords do not cover every engine at their
    locations: with the shipped contract the run fails and its lookups ask every engine; with the documented
    remap a run on a fresh data folder passes, asks each keyword's location of its own engine only, and
    ``keywords plan`` (against the API) of the tracked keywords shows 0 changes."""
    from rank_pipeline.api.fields import SEARCH_ENGINES, keyword_combination
    from rank_pipeline.sandbox import AccountSpec, SandboxServer, World, WorldConfig, create_app
    from rank_pipeline.sandbox.shapes import parse_shape
    from rank_pipeline.transform.contract import load_contract

    # the world and the commands' clocks on one day: the keywords a world has change from day to day, and a served
    # API refuses a run whose day is not its own (the test can cross midnight, UTC)
    day = datetime.now(UTC).date()
    world = World(WorldConfig(seed=11, accounts=(AccountSpec("solo", domains=1, keywords_per_domain=(6, 6)),)),
                  today=day)
    account = world.account("solo")
    (domain,) = world.domains(account.account_id)
    shipped = load_contract(models_dir())
    tracked = {keyword_combination(r["attributes"], shipped) for r in world.keywords(domain["id"])}
    own = {(code, engine) for _, engine, _, code, _ in tracked}
    codes = {code for code, _ in own}
    assert own < {(c, e) for c in codes for e in SEARCH_ENGINES}  # the world tells one engine from all
    groups = [{"words": [w], "engines": [e], "devices": [d], "locations": [c], "languages": [lang],
               "frequency": "daily"} for w, e, d, c, lang in sorted(tracked)]
    wanted = tmp_path / "tracked.yml"
    wanted.write_text(json.dumps({"version": 1, "domains": [
        {"domain": domain["attributes"]["domain"], "account": "solo", "groups": groups}]}))
    project, models = _project(tmp_path / "project")

    recorder = LookupRecorder(create_app(world, shape=parse_shape("vendor-b")))
    with SandboxServer(recorder) as server:
        api = {"RANK_TRACKER_BASE_URL": server.base_url, "RANK_TRACKER_ACCOUNTS": "solo",
               "RANK_TRACKER_API_KEY_SOLO": account.api_key}
        before = cli("run", data_dir=tmp_path / "before", env={**api, **models}, cwd=project, day=day)
        assert before.returncode == 1, before.stdout + before.stderr
        assert recorder.asked() == ({(c, e) for c in codes for e in SEARCH_ENGINES}, set(SEARCH_ENGINES))

        subprocess.run(["git", "apply", str(PATCH)], cwd=project, check=True)
        after = cli("run", data_dir=tmp_path / "after", env={**api, **models}, cwd=project, day=day)
        assert after.returncode == 0, after.stdout + after.stderr
        assert recorder.asked() == (own, {e for _, e in own})  # one engine per keyword

        plan = cli("keywords", "plan", str(wanted), data_dir=tmp_path / "after", env={**api, **models}, cwd=project,
                   day=day)
        assert plan.returncode == 0, plan.stdout + plan.stderr
        assert plan.stdout.strip().splitlines()[-1].startswith(
            f"Plan: 0 to create, {len(tracked)} already tracked, 0 tracked")
