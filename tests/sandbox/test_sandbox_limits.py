"""Rate limits (spec, "Limits" and "429 response"), on a fake clock (no real waiting)."""

from __future__ import annotations

import pytest

from rank_pipeline.sandbox import Faults, RateLimits, create_app
from rank_pipeline.sandbox.limits import RateLimiter

RATE_HEADERS = ("Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")


@pytest.fixture
def clock(fake_clock):
    return fake_clock  # at 1003: window [1000, 1010) for window_s=10, offset 0


def _app(world, clock, **limits):
    faults = limits.pop("faults", Faults())
    return create_app(world, limits=RateLimits(**{"window_s": 10.0, **limits}), faults=faults, clock=clock)


def test_limits__per_key_429_body_and_headers_exactly(world, acme, clock, make_client):
    c = make_client(_app(world, clock, per_key=3, per_ip=100))
    for _ in range(3):
        assert c.get("/v1/tags", key=acme.api_key).status_code == 200
    r = c.get("/v1/tags", key=acme.api_key)
    assert r.status_code == 429
    assert r.headers["content-type"] == "application/json"
    assert {h: r.headers[h] for h in RATE_HEADERS} == {
        "Retry-After": "7", "RateLimit-Limit": "3", "RateLimit-Remaining": "0", "RateLimit-Reset": "7"}
    (entry,) = r.json()["errors"]
    assert entry["status"] == 429 and entry["code"] == "rate_limited"
    assert entry["detail"].endswith("retry in 7 seconds")


def test_limits__429_headers_only_on_429(world, acme, clock, make_client):
    c = make_client(_app(world, clock, per_key=2, per_ip=100))
    ok = [c.get("/v1/domains", key=acme.api_key) for _ in range(2)]
    for r in ok + [c.get("/v1/account/usage", key=world.account("globex").api_key)]:
        assert r.status_code == 200
        assert not any(h in r.headers for h in RATE_HEADERS)
    assert c.get("/v1/domains", key=acme.api_key).status_code == 429


def test_limits__fixed_window_opens_again_after_retry_after(world, acme, clock, make_client):
    c = make_client(_app(world, clock, per_key=2, per_ip=100))
    c.get("/v1/tags", key=acme.api_key), c.get("/v1/tags", key=acme.api_key)
    r = c.get("/v1/tags", key=acme.api_key)
    assert r.status_code == 429
    clock.advance(int(r.headers["Retry-After"]) - 0.5)  # still inside the window
    assert c.get("/v1/tags", key=acme.api_key).status_code == 429
    clock.advance(0.5)
    assert [c.get("/v1/tags", key=acme.api_key).status_code for _ in range(3)] == [200, 200, 429]


def test_limits__per_ip_is_counted_across_keys(world, clock, make_client):
    app = _app(world, clock, per_key=5, per_ip=6)
    c = make_client(app, ip="10.0.0.1")
    acme, globex = world.account("acme"), world.account("globex")
    statuses = [c.get("/v1/tags", key=acme.api_key).status_code for _ in range(4)]
    statuses += [c.get("/v1/tags", key=globex.api_key).status_code for _ in range(2)]
    assert statuses == [200] * 6
    r = c.get("/v1/tags", key=globex.api_key)  # globex used 2 of 5, but the IP used 6 of 6
    assert r.status_code == 429 and r.headers["RateLimit-Limit"] == "6"
    other_ip = make_client(app, ip="10.0.0.2")
    assert other_ip.get("/v1/tags", key=globex.api_key).status_code == 200


def test_limits__per_key_is_counted_across_ips(world, acme, clock, make_client):
    app = _app(world, clock, per_key=3, per_ip=100)
    a, b = make_client(app, ip="10.0.0.1"), make_client(app, ip="10.0.0.2")
    assert [a.get("/v1/tags", key=acme.api_key).status_code for _ in range(2)] == [200, 200]
    assert b.get("/v1/tags", key=acme.api_key).status_code == 200
    r = b.get("/v1/tags", key=acme.api_key)
    assert r.status_code == 429 and r.headers["RateLimit-Limit"] == "3"


def test_limits__unauthenticated_requests_count_against_the_ip(world, acme, clock, make_client):
    c = make_client(_app(world, clock, per_key=100, per_ip=3))
    assert [c.get("/v1/tags").status_code for _ in range(3)] == [401, 401, 401]
    assert c.get("/v1/tags", key=acme.api_key).status_code == 429


def test_limits__control_endpoints_are_not_limited(world, clock, make_client):
    c = make_client(_app(world, clock, per_key=1, per_ip=1))
    assert all(c.get("/_sandbox/today").status_code == 200 for _ in range(5))


def test_limits__outside_consumer_spends_part_of_each_key_window(world, acme, clock, make_client):
    c = make_client(_app(world, clock, per_key=5, per_ip=100, faults=Faults(outside_consumer=2)))
    assert [c.get("/v1/tags", key=acme.api_key).status_code for _ in range(4)] == [200, 200, 200, 429]
    clock.advance(10)
    assert [c.get("/v1/tags", key=acme.api_key).status_code for _ in range(4)] == [200, 200, 200, 429]
    stats = c.get("/_sandbox/stats").json()["keys"]["acme"]
    assert stats["outside_requests"] == 4 and stats["rate_limited"] == 2 and stats["requests"] == 8


@pytest.mark.parametrize(("now", "offset", "expected"), [(1_009.5, 0.0, 1), (1_009.999, 0.0, 1), (1_000.0, 0.0, 10),
                                                          (1_005.0, 3.0, 8), (1_002.5, 3.0, 1)])
def test_limits__retry_after_is_whole_seconds_to_window_end_at_least_1(now, offset, expected):
    limiter = RateLimiter(RateLimits(per_key=1, per_ip=10, window_s=10.0, offset_s=offset), clock=lambda: now)
    assert limiter.hit_key("k") is None
    rejection = limiter.hit_key("k")
    assert rejection.retry_after == expected and rejection.limit == 1 and rejection.scope == "key"


def test_limits__window_alignment_follows_offset(fake_clock):
    clock = fake_clock
    clock.now = 1_002.0
    limiter = RateLimiter(RateLimits(per_key=1, per_ip=10, window_s=10.0, offset_s=3.0), clock=clock)
    assert limiter.hit_key("k") is None  # window [993, 1003)
    clock.advance(1.0)  # 1003: a new window under offset 3, still the old one under offset 0
    assert limiter.hit_key("k") is None


def test_limits__settings_are_validated():
    with pytest.raises(ValueError, match="window_s"):
        RateLimits(window_s=0)
    with pytest.raises(ValueError, match="per_key"):
        RateLimits(per_key=0)
