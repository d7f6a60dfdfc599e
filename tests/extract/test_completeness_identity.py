"""Completeness by identity: records inserted and deleted between pages in equal
numbers, so X-Total-Count stays put while ids come and go, on 80 % of keyword-list requests plus 5xx.

Over real HTTP against the sandbox (``SandboxServer``), once through the client's ``list_records``
and once through the day's extraction (``extract_day``). The referee is the sandbox's ``World`` and
its log of outside writes: every list is either flagged incomplete, or holds exactly the ids that
existed at one instant of its final pass (none missing, none extra). Undo the writes logged after the
final pass began, one at a time from the end state, and the list's ids must be one of those states;
before this fix lists claimed complete held ids deleted long before and lacked ids that existed
before and after the run. Only a write landing during the final pass (both of its records on pages
that pass had already read) separates the proven set from the end state: no reader can see it.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, date, datetime

import httpx
import pytest

from rank_pipeline.api import ClientConfig, PermissionDeniedError, RankTrackerClient
from rank_pipeline.extract.day import AccountSource, extract_day
from rank_pipeline.extract.resume import ResumeArea, resume_dir
from rank_pipeline.sandbox import (
    AccountSpec,
    Faults,
    RateLimits,
    SandboxServer,
    World,
    WorldConfig,
    create_app,
)
from rank_pipeline.snapshots.reader import read_snapshot

pytestmark = pytest.mark.xdist_group("completeness_identity")

DAY = date(2026, 11, 21)
PER_PAGE = 50  # lists of 110-140 keywords: 3 pages each


def _world(seed: int) -> World:
    accounts = (AccountSpec("acme", domains=3, keywords_per_domain=(110, 140)),)
    return World(WorldConfig(seed=seed, accounts=accounts), today=DAY)


def _app(world: World, seed: int, shift_rate: float = 0.8):
    faults = Faults(seed=seed, shift_rate=shift_rate, shift_inserts=2, shift_deletes=2, error_rate=0.05)
    # a short window keeps the test fast; the client paces to the same ceilings
    return create_app(world, limits=RateLimits(per_key=400, per_ip=800, window_s=1.0), faults=faults)


def _states_since(world: World, domain_id: str, since: float) -> list[frozenset[str]]:
    """The domain's keyword id sets from ``since`` to now: the end state, then each write undone."""
    state = set(world.keyword_ids(domain_id))
    states = [frozenset(state)]
    for write in reversed([w for w in world.writes if w.domain_id == domain_id and w.at >= since]):
        if write.op == "insert":
            state.discard(write.keyword_id)
        else:
            state.add(write.keyword_id)
        states.append(frozenset(state))
    return states


def _check_list(world: World, domain_id: str, kept: set[str], result) -> bool:
    """Assert the list is flagged or exact at an instant of its final pass; True when complete."""
    if not result.complete:
        assert result.total_count is not None and result.passes >= 2 and not result.excluded
        return False
    states = _states_since(world, domain_id, result.proven_at)
    end = states[0]
    assert kept in states, f"silent loss: missing {sorted(end - kept)}, extra {sorted(kept - end)}"
    # the ids the run began with and that still exist are never missing (the measured defect)
    before = states[-1] if len(states) > 1 else end
    assert (before & end) <= kept
    return True


def _config(**overrides) -> ClientConfig:
    base = dict(per_key_limit=400, per_ip_limit=800, window_s=1.0, max_retry_s=5.0, per_page=PER_PAGE,
                backoff_base_s=0.01, backoff_max_s=0.05, max_attempts=8, settle_budget_requests=45)
    return ClientConfig(**(base | overrides))


@pytest.mark.parametrize("seed", [1, 2])
def test_list_records_over_http_never_claims_complete_with_ids_missing_or_extra(seed):
    world = _world(seed)
    app = _app(world, seed)
    account = world.account("acme")
    domains = [d["id"] for d in world.domains(account.account_id)]

    async def main(base_url):
        out = {}
        async with RankTrackerClient(base_url, account.api_key, config=_config()) as client:
            for domain_id in domains:
                ids: list[str] = []
                result = await client.list_records(f"/v1/domains/{domain_id}/keywords", None,
                                                   lambda rows, ids=ids: ids.extend(r["id"] for r in rows))
                out[domain_id] = (ids, result)
        return out

    with SandboxServer(app) as server:
        results = asyncio.run(main(server.base_url))
    assert app.state.stats.snapshot()["faults"]["shift"] > 0
    for domain_id, (ids, result) in results.items():
        assert len(ids) == len(set(ids))  # each id delivered once
        _check_list(world, domain_id, set(ids) - set(result.excluded), result)


@pytest.mark.parametrize("seed", [4, 5])
def test_extraction_snapshot_equals_ground_truth_or_is_flagged_incomplete(tmp_path, seed):
    world = _world(seed)
    app = _app(world, seed)
    account = world.account("acme")
    with SandboxServer(app) as server:
        report = asyncio.run(extract_day(server.base_url, [AccountSource("acme", account.api_key)], DAY,
                                         tmp_path, config=_config()))
    assert app.state.stats.snapshot()["faults"]["shift"] > 0
    rows = read_snapshot(tmp_path, "keywords", DAY).to_pylist()
    manifest = report.manifests["keywords"]
    flagged = set(manifest.accounts["acme"].incomplete_lists)
    results = {r.path.split("/")[3]: r for r in report.lists["acme"] if r.path.endswith("/keywords")}
    for domain in world.domains(account.account_id):
        got = [r["id"] for r in rows if r["parent_id"] == domain["id"]]
        assert len(got) == len(set(got))
        complete = _check_list(world, domain["id"], set(got), results[domain["id"]])
        assert complete is (domain["id"] not in flagged)
    assert manifest.complete is (not flagged)
    assert manifest.accounts["acme"].rows == len(rows)


def test_moderate_balanced_shifting_settles_to_the_exact_ground_truth(tmp_path):
    """At 30 % shifting the passes settle within the budget: complete, and exactly the world's ids."""
    world = _world(9)
    app = _app(world, 9, shift_rate=0.3)
    account = world.account("acme")
    with SandboxServer(app) as server:
        report = asyncio.run(extract_day(server.base_url, [AccountSource("acme", account.api_key)], DAY,
                                         tmp_path, config=_config(settle_budget_requests=150)))
    rows = read_snapshot(tmp_path, "keywords", DAY).to_pylist()
    assert report.manifests["keywords"].complete is True
    results = {r.path.split("/")[3]: r for r in report.lists["acme"] if r.path.endswith("/keywords")}
    assert any(r.excluded for r in results.values())  # deleted ids were delivered, then dropped
    for domain in world.domains(account.account_id):
        got = [r["id"] for r in rows if r["parent_id"] == domain["id"]]
        assert len(got) == len(set(got))
        assert _check_list(world, domain["id"], set(got), results[domain["id"]])


class _NoLookups(httpx.AsyncHTTPTransport):
    """The network, but the keywords' lookups answer 403 (fatal): the run dies after its keyword lists."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path in ("/v1/locations", "/v1/languages"):
            return httpx.Response(403, json={"errors": [{"status": "403", "title": "Forbidden"}]})
        return await super().handle_async_request(request)


def test_a_retry_replays_checkpointed_lists_as_proven_without_the_ids_they_excluded(tmp_path):
    """A run that dies after its shifting keyword lists were proven (some with ids delivered, then excluded) is
    retried: each list taken from its checkpoint holds each id once, the excluded ones not, and equals the world's
    ids at an instant since the first run began; its rows keep the time their page arrived."""
    world = _world(9)
    app = _app(world, 9, shift_rate=0.3)
    account = world.account("acme")
    sources = [AccountSource("acme", account.api_key)]
    began = time.monotonic()
    with SandboxServer(app) as server:
        with pytest.raises(PermissionDeniedError):
            asyncio.run(extract_day(server.base_url, sources, DAY, tmp_path, transport=_NoLookups(),
                                    config=_config(settle_budget_requests=150)))
        entries = [e for e in ResumeArea(tmp_path, DAY, server.base_url).finished.values() if "/keywords" in e["key"]]
        for path in resume_dir(tmp_path, DAY).rglob("*"):  # the checkpoints outlive the run, and hold no key
            assert account.api_key.encode() not in path.read_bytes(), path
        retried_at = datetime.now(UTC)
        report = asyncio.run(extract_day(server.base_url, sources, DAY, tmp_path,
                                         config=_config(settle_budget_requests=150)))
    assert any(e["excluded"] for e in entries)  # deleted ids were delivered, then left out of the proven set
    resumed = [r for r in report.lists["acme"] if r.path.endswith("/keywords")]
    assert len(entries) == len(resumed) == len(world.domains(account.account_id))
    assert all(r.pages == 0 for r in resumed)  # every keyword list came from its checkpoint
    assert report.manifests["keywords"].complete is True
    rows = read_snapshot(tmp_path, "keywords", DAY).to_pylist()
    for domain in world.domains(account.account_id):
        got = [r["id"] for r in rows if r["parent_id"] == domain["id"]]
        assert len(got) == len(set(got))
        assert set(got) in _states_since(world, domain["id"], began)
    assert all(r["extracted_at"] < retried_at for r in rows)
