"""Tracked keywords as code, through its doors: ``rank-pipeline keywords plan|apply`` as a subprocess against
the sandbox served over HTTP on loopback, settings in the environment only. Ground truth is the sandbox's
``World``: its keyword set per domain before and after, and every request it answered (``/_sandbox/stats``
and a recorder of create calls)."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import httpx
import jsonschema
import pytest
import yaml
from support import command_env, rank_pipeline

from rank_pipeline.api.fields import keyword_combination
from rank_pipeline.sandbox import AccountSpec, Faults, SandboxServer, World, WorldConfig, create_app
from rank_pipeline.settings import models_dir
from rank_pipeline.transform.contract import load_contract

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("keywords")]

ROOT = Path(__file__).resolve().parents[2]
cli = functools.partial(rank_pipeline, cwd=ROOT, timeout=180, stdin=subprocess.DEVNULL)
"""``rank-pipeline *args`` in the clone with a clean environment plus ``env`` (:func:`support.rank_pipeline`),
stdin closed (not a terminal), killed past 180 s unless ``timeout`` says otherwise."""


class Recorder:
    """An ASGI wrapper in front of the sandbox app: for every keyword create it keeps the body, the
    domain's combinations just before the handler ran, and whether the connection was dropped."""

    def __init__(self, app, world: World):
        self.app, self.world, self.creates = app, world, []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].endswith("/keywords"):
            await self.app(scope, receive, send)
            return
        domain_id = scope["path"].split("/")[3]
        chunks: list[bytes] = []

        async def recording_receive():
            message = await receive()
            chunks.append(message.get("body", b""))
            return message

        entry = {"before": combos(self.world, domain_id), "dropped": False}
        self.creates.append(entry)
        try:
            await self.app(scope, recording_receive, send)
        except Exception:
            entry["dropped"] = True
            raise
        finally:
            entry["body"] = json.loads(b"".join(chunks) or b"null")


def combos(world: World, domain_id: str) -> set:
    return {keyword_combination(r["attributes"], load_contract(models_dir())) for r in world.keywords(domain_id)}


@pytest.fixture
def vendor():
    """A fresh sandbox world served over HTTP (its today is the real UTC today) and its recorder."""
    world = World(today=datetime.now(UTC).date())
    recorder = Recorder(create_app(world), world)
    with SandboxServer(recorder) as server:
        yield world, server.base_url, recorder


def env_for(world: World, base_url: str, tmp_path: Path, account: str = "acme") -> dict[str, str]:
    return {"RANK_TRACKER_BASE_URL": base_url, "RANK_TRACKER_ACCOUNTS": account,
            f"RANK_TRACKER_API_KEY_{account.upper()}": world.account(account).api_key,
            "RANK_PIPELINE_DATA_DIR": str(tmp_path / "data")}


def domain_of(world: World, name: str, account: str = "acme") -> str:
    return next(d["id"] for d in world.domains(world.account(account).account_id)
                if d["attributes"]["domain"] == name)


def write(tmp_path: Path, text: str, name: str = "keywords.yml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def statuses(base_url: str) -> dict[str, int]:
    stats = httpx.get(f"{base_url}/_sandbox/stats").json()
    out: dict[str, int] = {}
    for key in stats["keys"].values():
        for status, n in key["statuses"].items():
            out[status] = out.get(status, 0) + n
    return out


def no_secret(world: World, *texts: str) -> None:
    for account in world.accounts:
        assert all(account.api_key not in t for t in texts)


FILE = """
    version: 1
    domains:
      - domain: acme-shop.net
        account: acme
        groups:
          - words: [kw plan shoes, kw plan boots]
            engines: [google, bing]
            devices: [desktop]
            locations: [US, "2826"]
            languages: [en]
            frequency: daily
            tags: [t1]
"""


def expected_of(world: World, text: str) -> set:
    """The combinations a file means, resolved with the world's catalogue (US -> 2840)."""
    from rank_pipeline.sandbox import catalogues

    out = set()
    for domain in yaml.safe_load(textwrap.dedent(text))["domains"]:
        for g in domain["groups"]:
            for w in g["words"]:
                for e in g["engines"]:
                    for d in g["devices"]:
                        for loc in g["locations"]:
                            row = catalogues.location_by_code(e, loc) if str(loc).isdigit() else \
                                catalogues.country_location(e, loc)
                            for lang in g["languages"]:
                                out.add((w, e, d, row["code"], lang))
    return out


@pytest.mark.slow
def test_plan_apply_reapply_exit_codes_and_ground_truth(vendor, tmp_path):
    world, base_url, recorder = vendor
    env = env_for(world, base_url, tmp_path)
    domain = domain_of(world, "acme-shop.net")
    before = combos(world, domain)
    path = write(tmp_path, FILE)

    plan = cli("keywords", "plan", str(path), env=env)
    assert plan.returncode == 0, plan.stdout + plan.stderr  # the plan was made, changes pending or not
    assert "Plan: 8 to create, 0 already tracked" in plan.stdout
    detailed = cli("keywords", "plan", str(path), "--detailed-exitcode", env=env)
    assert detailed.returncode == 4, detailed.stdout + detailed.stderr  # changes pending (errors.EXIT_STATUSES)
    assert combos(world, domain) == before  # plan creates nothing

    refused = cli("keywords", "apply", str(path), env=env)  # stdin is not a terminal, no --yes
    assert refused.returncode == 2 and "pass --yes" in refused.stderr
    assert combos(world, domain) == before

    applied = cli("keywords", "apply", str(path), "--yes", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert combos(world, domain) == before | expected_of(world, FILE)
    assert len(combos(world, domain)) == len(before) + 8
    summary = applied.stdout.strip().splitlines()[-1]
    assert summary.startswith("Applied: 8 keyword(s) created in 1 create call(s)")
    log = Path(re.search(r"run log: (\S+)\)", summary).group(1))
    assert "Applied: 8 keyword(s) created" in log.read_text()

    creates_before = statuses(base_url).get("201", 0)
    assert cli("keywords", "plan", str(path), "--detailed-exitcode", env=env).returncode == 0  # nothing pending
    again = cli("keywords", "apply", str(path), "--yes", env=env)
    assert again.returncode == 0 and "Applied: nothing to create; 8 already tracked" in again.stdout
    assert statuses(base_url).get("201", 0) == creates_before  # no create sent the second time
    assert combos(world, domain) == before | expected_of(world, FILE)
    assert "400" not in statuses(base_url)  # a 400 is never sent (every body is wrapped)
    no_secret(world, plan.stdout, plan.stderr, applied.stdout, applied.stderr, log.read_text())


@pytest.mark.slow
def test_country_code_and_geo_id_create_the_same_keyword(vendor, tmp_path):
    world, base_url, _ = vendor
    env = env_for(world, base_url, tmp_path)
    domain = domain_of(world, "acme.de")
    before = combos(world, domain)
    path = write(tmp_path, """
        domains:
          - domain: acme.de
            groups:
              - words: [same place]
                engines: [google]
                devices: [mobile]
                locations: [us, "2840"]
                languages: [EN]
                frequency: Daily
    """)
    done = cli("keywords", "apply", str(path), "--yes", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert combos(world, domain) - before == {("same place", "google", "mobile", "2840", "en")}
    # the same keyword written with the other form is already tracked
    path2 = write(tmp_path, path.read_text().replace('[us, "2840"]', '["2840"]'), "again.yml")
    plan = cli("keywords", "plan", str(path2), env=env)
    assert plan.returncode == 0 and "0 to create, 1 already tracked" in plan.stdout


@pytest.mark.slow
def test_global_language_is_refused_with_its_line_and_nothing_is_sent(vendor, tmp_path):
    world, base_url, recorder = vendor
    env = env_for(world, base_url, tmp_path)
    domain = domain_of(world, "acme-shop.net")
    before = combos(world, domain)
    path = write(tmp_path, FILE.replace("languages: [en]", 'languages: [en, "0000"]'))
    plan = cli("keywords", "plan", str(path), env=env)
    assert plan.returncode == 2
    assert re.search(rf"{re.escape(str(path))}:10: domains\[0\]\.groups\[0\]\.languages\[1\]: the Global language "
                     r"'0000' cannot be tracked", plan.stdout)
    applied = cli("keywords", "apply", str(path), "--yes", env=env)
    assert applied.returncode == 2 and "nothing was sent" in applied.stderr
    assert combos(world, domain) == before
    sent = [c["body"]["keyword"]["frequency"] for c in recorder.creates]
    assert all(f == "" for f in sent)  # only catalogue probes (blank frequency: the API must refuse them)
    assert "201" not in statuses(base_url) and "400" not in statuses(base_url)


def test_unknown_engine_skips_its_location_and_language_checks(vendor, tmp_path):
    world, base_url, _ = vendor
    env = env_for(world, base_url, tmp_path)
    path = write(tmp_path, """
        domains:
          - domain: acme-shop.net
            account: acme
            groups:
              - words: [w]
                engines: [altavista]
                devices: [desktop]
                locations: [ZZ]
                languages: [xx]
                frequency: daily
              - words: [w]
                engines: [google]
                devices: [tablet]
                locations: [ZZ]
                languages: [xx]
                frequency: hourly
    """)
    plan = cli("keywords", "plan", str(path), env=env)
    assert plan.returncode == 2
    errors = [line for line in plan.stdout.splitlines() if line.startswith("error: ")]
    fields = [re.search(r"domains\[0\]\.groups\[\d\]\.\w+(\[\d\])?", e).group(0) for e in errors]
    assert fields == [
        "domains[0].groups[0].engines[0]",  # the unknown engine, and nothing else of its entry
        "domains[0].groups[1].devices[0]", "domains[0].groups[1].locations[0]",
        "domains[0].groups[1].languages[0]", "domains[0].groups[1].frequency",
    ]
    assert "use one of google, bing, yahoo" in errors[0]
    assert "use one of desktop, mobile" in errors[1]  # from meta.allowed of the probe
    assert "use one of daily, weekly, monthly" in errors[4]


@pytest.mark.slow
def test_over_quota_plan_is_refused_before_anything_is_created(tmp_path):
    day = datetime.now(UTC).date()  # one reading for both worlds: a day's keywords differ from the next day's
    config = WorldConfig(accounts=(AccountSpec("acme", domains=1, keywords_per_domain=(20, 20), keyword_limit=10_000),))
    world = World(config, today=day)
    remaining = world.usage(world.account("acme").account_id)["attributes"]["keywords"]["remaining"]
    world = World(WorldConfig(accounts=(AccountSpec("acme", domains=1, keywords_per_domain=(20, 20),
                                                    keyword_limit=10_000 - remaining + 5),)), today=day)
    domain = world.domains(world.account("acme").account_id)[0]
    before = combos(world, domain["id"])
    with SandboxServer(create_app(world)) as server:
        env = env_for(world, server.base_url, tmp_path)
        path = write(tmp_path, FILE.replace("acme-shop.net", domain["attributes"]["domain"]))  # 8 > 5 remaining
        plan = cli("keywords", "plan", str(path), env=env)
        assert plan.returncode == 2
        assert "remaining 5 keyword(s)" in plan.stdout and "would be refused (402)" in plan.stdout
        assert "the plan needs 8 keyword(s) but 5 remain" in plan.stderr
        applied = cli("keywords", "apply", str(path), "--yes", env=env)
        assert applied.returncode == 2 and "nothing was sent" in applied.stderr
        assert combos(world, domain["id"]) == before
        assert "201" not in statuses(server.base_url) and "402" not in statuses(server.base_url)


@pytest.mark.slow
def test_a_schema_error_names_file_line_and_field(tmp_path):
    path = write(tmp_path, FILE.replace("frequency: daily", "frequncy: daily").replace(
        'locations: [US, "2826"]', "locations: [US, Paris]"))
    done = cli("keywords", "plan", str(path), env={"RANK_PIPELINE_DATA_DIR": str(tmp_path / "data")})
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith(f"error: {path}:9: domains[0].groups[0].locations[1]: \"Paris\" is not a location")
    assert any(line.startswith(f"error: {path}:11: domains[0].groups[0].frequncy: is not a field") for line in lines)
    assert any(line.startswith(f"error: {path}:6: domains[0].groups[0].frequency: is required") for line in lines)


@pytest.mark.slow
def test_a_lost_create_response_is_read_back_never_resent(tmp_path):
    """The drop fault closes the connection after the create happened; apply must read the domain back
    and re-plan: no create call may carry a combination that already existed when it was sent."""
    world = World(today=datetime.now(UTC).date())
    recorder = Recorder(create_app(world, faults=Faults(seed=3, drop_rate=0.35)), world)
    domain = domain_of(world, "acme-shop.net")
    before = combos(world, domain)
    groups = "".join(f"""
          - words: [lost {i} a, lost {i} b]
            engines: [google]
            devices: [{"desktop" if i % 2 else "mobile"}]
            locations: ["{2840 + 0 * i}"]
            languages: [{"en" if i < 3 else "es"}]
            frequency: {"daily" if i % 3 else "weekly"}""" for i in range(6))
    text = f"""
    domains:
      - domain: acme-shop.net
        account: acme
        groups:{groups}
    """
    with SandboxServer(recorder) as server:
        env = env_for(world, server.base_url, tmp_path)
        path = write(tmp_path, text)
        done = cli("keywords", "apply", str(path), "--yes", env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    wanted = expected_of(world, text)
    assert combos(world, domain) == before | wanted  # everything created, once (a set per domain)
    creates = [c for c in recorder.creates if c["body"]["keyword"]["frequency"]]  # probes have none
    dropped = [c for c in creates if c["dropped"]]
    assert dropped, "the fault dropped no create response: the test proves nothing (pick another seed)"
    assert "read back" in done.stdout and "lost response(s)" in done.stdout
    sent: list = []
    for c in creates:
        k = c["body"]["keyword"]
        keys = {(w, e["name"], e["device"], e["location"], e["language"]) for w in k["words"] for e in k["search_engines"]}
        assert not keys & c["before"], "a create call resent combinations that already existed"
        sent += keys
    assert set(sent) == wanted - before


def test_a_422_is_mapped_back_to_the_file_lines(vendor, tmp_path):
    """A create the API refuses (here sent without the plan's checks) names the file's lines and meta.allowed."""
    from rank_pipeline.api import RankTrackerClient, ValidationError
    from rank_pipeline.keywords import group_calls, load_keywords_file, map_errors
    from rank_pipeline.keywords.plan import wanted_of

    world, base_url, _ = vendor
    path = write(tmp_path, FILE.replace("devices: [desktop]", "devices: [desktop, tablet]"))
    loaded = load_keywords_file(path)
    domain = domain_of(world, "acme-shop.net")
    calls = group_calls(domain, wanted_of(loaded)[0])

    async def send():
        async with RankTrackerClient(base_url, world.account("acme").api_key) as client:
            with pytest.raises(ValidationError) as caught:
                await client.post_once(f"/v1/domains/{domain}/keywords", calls[0].body())
            return caught.value

    before = combos(world, domain)
    error = asyncio.run(send())
    lines = map_errors(calls[0], error, loaded)
    assert lines and all(line.startswith(f"{path}:8: domains[0].groups[0].devices[1]: Unknown device") for line in lines)
    assert "(allowed: desktop, mobile)" in lines[0]
    assert combos(world, domain) == before  # all-or-nothing: the call created nothing


def test_the_published_json_schema_is_the_models_and_the_example_fits_it():
    from rank_pipeline.keywords import json_schema, load_keywords_file

    published = json.loads((ROOT / "examples" / "keywords.schema.json").read_text())
    assert published == json_schema(), "regenerate: python -m rank_pipeline.keywords.schema > examples/keywords.schema.json"
    example = yaml.safe_load((ROOT / "examples" / "keywords.yml").read_text())
    jsonschema.Draft202012Validator(published).validate(example)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(published).validate({**example, "domain": "typo"})
    load_keywords_file(ROOT / "examples" / "keywords.yml")


@pytest.mark.slow
def test_the_readme_example_runs_as_written(tmp_path):
    """The example of the docs' "Tracked keywords as code" page: `rank-pipeline sandbox` in one process, the second
    shell block run as written by bash (only the port is changed to a free one, and the data folder)."""
    import socket
    import time

    section = (ROOT / "docs" / "how-to" / "keywords-as-code.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert blocks[0].strip().startswith("rank-pipeline sandbox")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = command_env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["RANK_PIPELINE_DATA_DIR"] = str(tmp_path / "data")
    server = subprocess.Popen(["rank-pipeline", "sandbox", "--port", str(port)], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/_sandbox/today", timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and server.poll() is None, "the sandbox did not start"
                time.sleep(0.2)
        script = blocks[1].replace("127.0.0.1:8765", f"127.0.0.1:{port}")
        done = subprocess.run(["bash", "-c", script], env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    exits = re.findall(r"plan exit status (\d+)", done.stdout)
    assert exits == ["4", "0"]  # --detailed-exitcode: changes pending, then none
    assert re.search(r"^Applied: 17 keyword\(s\) created in 2 create call\(s\)", done.stdout, re.M)
    assert "3d9553a333a1f51cb42ceb4a369f0c36" not in done.stdout + done.stderr
