"""The client against the colleague's sandbox (rank_pipeline.sandbox), compared with World ground truth.

In process over httpx.ASGITransport (real event loop, real clock, short rate windows), and once over
real HTTP on loopback (SandboxServer, port 0) with transport faults on."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import date

import httpx
import pytest

from rank_pipeline.api import (
    AuthenticationError,
    ClientConfig,
    PermissionDeniedError,
    RankTrackerClient,
    SlidingWindowLimiter,
)

sandbox = pytest.importorskip("rank_pipeline.sandbox")
World, WorldConfig, AccountSpec = sandbox.World, sandbox.WorldConfig, sandbox.AccountSpec
create_app, RateLimits, Faults, SandboxServer = (
    sandbox.create_app, sandbox.RateLimits, sandbox.Faults, sandbox.SandboxServer)

TODAY = date(2026, 3, 2)
BASE = "http://127.0.0.1"  # loopback: plain http allowed


def small_world() -> World:
    accounts = (
        AccountSpec("acme", domains=3, keywords_per_domain=(60, 140)),
        AccountSpec("globex", domains=2, keywords_per_domain=(30, 90)),
        AccountSpec("noapi", api_enabled=False, domains=1),
    )
    return World(WorldConfig(seed=11, accounts=accounts), today=TODAY)


async def extract_account(client: RankTrackerClient) -> tuple[dict[str, list[str]], list]:
    """Every domain, keyword, competitor and tag of the client's account: ids delivered per list."""
    delivered: dict[str, list[str]] = {}
    results = []

    async def read(path, name):
        ids = delivered.setdefault(name, [])
        results.append(await client.list_records(path, None, lambda rows: ids.extend(r["id"] for r in rows)))

    await read("/v1/domains", "domains")
    await read("/v1/tags", "tags")
    await asyncio.gather(*(
        read(f"/v1/domains/{domain_id}/{what}", f"{what}:{domain_id}")
        for domain_id in list(delivered["domains"]) for what in ("keywords", "competitors")))
    return delivered, results


def assert_matches_world(world: World, account, delivered: dict[str, list[str]]) -> None:
    truth_domains = [d["id"] for d in world.domains(account.account_id)]
    assert Counter(delivered["domains"]) == Counter(truth_domains)
    assert Counter(delivered["tags"]) == Counter(t["id"] for t in world.tags(account.account_id))
    for domain_id in truth_domains:
        assert Counter(delivered[f"keywords:{domain_id}"]) == Counter(k["id"] for k in world.keywords(domain_id))
        assert Counter(delivered[f"competitors:{domain_id}"]) == Counter(
            c["id"] for c in world.competitors(domain_id))


def test_every_record_of_two_accounts_is_delivered_exactly_once_in_process():
    world = small_world()
    app = create_app(world, limits=RateLimits(window_s=60.0))
    config = ClientConfig(per_page=40)  # several pages per keyword list

    async def main():
        ip = SlidingWindowLimiter.for_ceiling(config.per_ip_limit, config.window_s, config.safety_margin)
        out = {}
        for name in ("acme", "globex"):
            async with RankTrackerClient(BASE, world.account(name).api_key, config=config, ip_limiter=ip,
                                         transport=httpx.ASGITransport(app=app)) as client:
                out[name] = (*await extract_account(client), client.server_date, client.stats)
        return out

    out = asyncio.run(main())
    for name, (delivered, results, server_date, stats) in out.items():
        assert_matches_world(world, world.account(name), delivered)
        # a one-page list is proven by its one response; a longer one by a second, agreeing pass
        assert all(r.complete and r.passes == (1 if r.pages == 1 else 2) for r in results)
        assert all(r.excluded == () for r in results)
        assert server_date == TODAY  # the sandbox's simulated day, from the Date header
        assert stats.rate_limited == 0 and stats.retries == 0
    assert max(len(v) for v in out["acme"][0].values()) > 40  # the page fan-out really happened


def test_wrong_key_and_plan_without_api_access_are_typed_errors():
    world = small_world()
    app = create_app(world)

    async def get(key):
        async with RankTrackerClient(BASE, key, transport=httpx.ASGITransport(app=app)) as client:
            await client.get("/v1/account/usage")

    with pytest.raises(AuthenticationError, match="RANK_TRACKER_API_KEY"):
        asyncio.run(get("not-a-key"))
    with pytest.raises(PermissionDeniedError, match="no API access"):
        asyncio.run(get(world.account("noapi").api_key))


@pytest.mark.parametrize("offset_fraction", [0.0, 0.37, 0.81])
def test_an_unshared_key_paced_to_the_sandbox_ceiling_gets_zero_429s(offset_fraction):
    """Real clock, 8 requests per 0.25 s window at an alignment the client does not know.

    margin 0.25 -> 6 per window and max_in_flight 2: a server window can then hold at most 6 + 2
    requests (those acquired before it and arriving in it are in flight), so this is free of timing
    luck on a loaded machine while still exercising the pacer against the server's fixed window."""
    window_s = 0.25
    world = small_world()
    limits = RateLimits(per_key=8, per_ip=100, window_s=window_s, offset_s=offset_fraction * window_s)
    app = create_app(world, limits=limits)
    config = ClientConfig(per_key_limit=8, per_ip_limit=100, window_s=window_s, safety_margin=0.25,
                          max_in_flight=2)

    async def main():
        async with RankTrackerClient(BASE, world.account("acme").api_key, config=config,
                                     transport=httpx.ASGITransport(app=app)) as client:
            await asyncio.gather(*(client.get("/v1/account/usage") for _ in range(24)))
            return client.stats

    stats = asyncio.run(main())
    server = app.state.stats.snapshot()["keys"]["acme"]
    assert stats.rate_limited == 0 and server["rate_limited"] == 0
    assert server["requests"] == stats.requests == 24


def test_shifting_keyword_lists_still_end_complete_and_equal_to_ground_truth():
    world = small_world()
    faults = Faults(seed=5, shift_rate=0.25, shift_inserts=3, shift_deletes=2)
    app = create_app(world, faults=faults)
    config = ClientConfig(per_page=25, max_passes=8)
    account = world.account("acme")

    async def main():
        async with RankTrackerClient(BASE, account.api_key, config=config,
                                     transport=httpx.ASGITransport(app=app)) as client:
            return await extract_account(client)

    delivered, results = asyncio.run(main())
    assert app.state.stats.snapshot()["faults"]["shift"] > 0
    keyword_results = [r for r in results if r.path.endswith("/keywords")]
    assert all(r.complete for r in keyword_results)
    assert any(r.passes > 1 for r in keyword_results)  # some list really needed a re-read
    for domain in world.domains(account.account_id):
        ids = delivered[f"keywords:{domain['id']}"]
        truth = set(world.keyword_ids(domain["id"]))
        assert len(ids) == len(set(ids))  # each id delivered once
        assert truth <= set(ids)  # nothing that exists now is missing
        for extra in set(ids) - truth:  # anything else was deleted during the run
            assert world.keyword(extra) is None


def test_over_real_http_with_transport_faults_everything_arrives_once():
    world = small_world()
    faults = Faults(seed=3, error_rate=0.08, drop_rate=0.05, invalid_json_rate=0.05)
    app = create_app(world, faults=faults)
    config = ClientConfig(per_page=40, backoff_base_s=0.01, backoff_max_s=0.05, max_attempts=8)
    account = world.account("acme")

    async def main(base_url):
        async with RankTrackerClient(base_url, account.api_key, config=config) as client:
            return (*await extract_account(client), client.stats)

    with SandboxServer(app) as server:
        delivered, results, stats = asyncio.run(main(server.base_url))
    assert_matches_world(world, account, delivered)
    assert all(r.complete for r in results)
    injected = app.state.stats.snapshot()["faults"]
    assert injected["error"] + injected["drop"] + injected["invalid_json"] > 0
    assert stats.retries == injected["error"] + injected["drop"] + injected["invalid_json"]
