"""The day's extraction (rank_pipeline.extract.day) in-process against the sandbox, checked against its World."""

from __future__ import annotations

import asyncio
import json
from datetime import date

import httpx
import pytest

from rank_pipeline.api import AuthenticationError, BadRequestError, PermissionDeniedError
from rank_pipeline.extract.day import AccountSource, extract_day
from rank_pipeline.sandbox import World, create_app
from rank_pipeline.snapshots.reader import list_snapshot_dates, read_snapshot
from rank_pipeline.snapshots.schema import ENDPOINTS

DAY = date(2026, 11, 21)


@pytest.fixture
def world():
    return World(today=DAY)


def _sources(world):
    return [AccountSource(a.name, a.api_key) for a in world.accounts if a.api_enabled]


async def _extract(world, tmp_path, transport=None, accounts=None):
    transport = transport or httpx.ASGITransport(app=create_app(world))
    return await extract_day("http://127.0.0.1", accounts or _sources(world), DAY, tmp_path, transport=transport)


def test_every_record_of_every_account_arrives_once(world, tmp_path):
    report = asyncio.run(_extract(world, tmp_path))
    assert report.complete
    for account in (a for a in world.accounts if a.api_enabled):
        domains = world.domains(account.account_id)
        truth = {
            "domains": {d["id"] for d in domains},
            "keywords": {k["id"] for d in domains for k in world.keywords(d["id"])},
            "competitors": {c["id"] for d in domains for c in world.competitors(d["id"])},
            "tags": {t["id"] for t in world.tags(account.account_id)},
        }
        for resource, ids in truth.items():
            rows = [r for r in read_snapshot(tmp_path, resource, DAY).to_pylist() if r["account"] == account.name]
            assert sorted(r["id"] for r in rows) == sorted(ids), resource
            manifest = report.manifests[resource].accounts[account.name]
            assert manifest.expected == manifest.delivered == len(ids)
        keyword_rows = [r for r in read_snapshot(tmp_path, "keywords", DAY).to_pylist() if r["account"] == account.name]
        parents = {k["id"]: d["id"] for d in domains for k in world.keywords(d["id"])}
        assert all(r["parent_id"] == parents[r["id"]] for r in keyword_rows)
        usage = [r for r in read_snapshot(tmp_path, "usage", DAY).to_pylist() if r["account"] == account.name]
        truth_usage = world.usage(account.account_id)["attributes"]
        assert json.loads(usage[0]["attributes"]) == truth_usage


def test_reference_rows_cover_every_location_the_keywords_point_to(world, tmp_path):
    asyncio.run(_extract(world, tmp_path))
    keywords = read_snapshot(tmp_path, "keywords", DAY).to_pylist()
    locations = read_snapshot(tmp_path, "locations", DAY).to_pylist()
    referenced = {json.loads(r["attributes"])["location"]["code"] for r in keywords}
    assert referenced and referenced <= {json.loads(r["attributes"])["code"] for r in locations}
    assert read_snapshot(tmp_path, "languages", DAY).num_rows > 0


def test_deleted_domain_is_recorded_in_the_manifest_not_fatal(world, tmp_path):
    app_transport = httpx.ASGITransport(app=create_app(world))
    account = next(a for a in world.accounts if a.api_enabled)
    gone = world.domains(account.account_id)[0]["id"]

    class DeletedDuringRun(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request):
            if request.url.path.startswith(f"/v1/domains/{gone}/"):
                body = b'{"errors":[{"status":404,"code":"not_found","detail":"Domain not found"}]}'
                return httpx.Response(404, content=body, headers={"content-type": "application/json"})
            return await app_transport.handle_async_request(request)

    report = asyncio.run(_extract(world, tmp_path, transport=DeletedDuringRun(),
                            accounts=[AccountSource(account.name, account.api_key)]))
    manifest = report.manifests["keywords"].accounts[account.name]
    assert manifest.missing_parents == [gone]
    assert manifest.complete is True
    rows = read_snapshot(tmp_path, "keywords", DAY).to_pylist()
    assert rows and gone not in {r["parent_id"] for r in rows}


@pytest.mark.parametrize("which", ["wrong_key", "no_api_access"])
def test_fatal_error_commits_nothing(world, tmp_path, which):
    if which == "wrong_key":
        accounts, error = [AccountSource("acme", "wrong")], AuthenticationError
    else:
        plain = next(a for a in world.accounts if not a.api_enabled)
        accounts, error = [AccountSource(plain.name, plain.api_key)], PermissionDeniedError
    with pytest.raises(error):
        asyncio.run(_extract(world, tmp_path, accounts=accounts))
    assert all(list_snapshot_dates(tmp_path, r) == [] for r in ENDPOINTS)
    assert not list(tmp_path.rglob("*.parquet"))


def test_fatal_error_in_one_list_cancels_its_siblings_before_the_clients_close(world, tmp_path):
    """Structured concurrency: a fatal error (400) in one domain's keyword list cancels every sibling list
    still in flight; none completes after the failure, no task outlives the run, no request follows it."""
    app_transport = httpx.ASGITransport(app=create_app(world))
    account = next(a for a in world.accounts if a.api_enabled)
    domains = [d["id"] for d in world.domains(account.account_id)]
    assert len(domains) >= 2
    failing = f"/v1/domains/{domains[0]}/keywords"
    events: list[str] = []  # transport-side: "fail", "done", "cancelled", "started-after-raise"
    raised = asyncio.Event()

    class FailingOne(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request):
            if raised.is_set():
                events.append("started-after-raise")
            if request.url.path == failing:
                events.append("fail")
                body = b'{"errors":[{"status":400,"code":"bad_request","detail":"malformed"}]}'
                return httpx.Response(400, content=body, headers={"content-type": "application/json"})
            if request.url.path.startswith("/v1/domains/"):  # the siblings: slow enough to be in flight
                try:
                    await asyncio.sleep(1.0)
                except asyncio.CancelledError:
                    events.append("cancelled")
                    raise
                events.append("done")
            return await app_transport.handle_async_request(request)

    async def scenario():
        with pytest.raises(BadRequestError):
            await extract_day("http://127.0.0.1", [AccountSource(account.name, account.api_key)], DAY, tmp_path,
                              transport=FailingOne())
        raised.set()
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
        await asyncio.sleep(1.5)  # an orphaned sibling would finish its request now
        return left

    left = asyncio.run(scenario())
    assert left == []
    after = events[events.index("fail") + 1:]
    assert "cancelled" in after  # siblings were in flight ...
    assert "done" not in after and "started-after-raise" not in after  # ... and none ran on
    assert not list(tmp_path.rglob("*.parquet"))
