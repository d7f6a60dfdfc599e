"""Control endpoints (/_sandbox, sandbox-only) and SandboxServer (uvicorn on a free port)."""

from __future__ import annotations

import email.utils
import io
import socket
from datetime import date

import httpx
import pytest

from rank_pipeline.sandbox import SandboxServer, World, WorldConfig, create_app
from rank_pipeline.sandbox.server import _banner


def test_control__get_and_put_today_move_the_simulated_day(client, world, acme):
    assert client.get("/_sandbox/today").json() == {"today": "2026-03-10"}
    r = client.request("PUT", "/_sandbox/today", json={"today": "2026-05-01"})
    assert r.status_code == 200 and r.json() == {"today": "2026-05-01"}
    assert world.today == date(2026, 5, 1)
    r = client.get("/v1/account/usage", key=acme.api_key)
    assert email.utils.parsedate_to_datetime(r.headers["date"]).date() == date(2026, 5, 1)
    assert r.json()["data"] == world.usage(acme.account_id, date(2026, 5, 1))
    for bad in ({"today": "May 1st"}, {}, [1]):
        r = client.request("PUT", "/_sandbox/today", json=bad)
        assert r.status_code == 400 and r.json()["errors"][0]["code"] == "bad_request"
    assert world.today == date(2026, 5, 1)


def test_a_world_without_a_day_tells_the_real_one_at_each_request_past_midnight(monkeypatch):
    """``World()`` (what ``rank-pipeline sandbox`` serves): a served sandbox left running past 00:00 UTC tells
    the new day, in the records and the ``Date`` header, as the vendor would; a day set fixes it."""
    from datetime import UTC, datetime

    from rank_pipeline.sandbox.world import state

    clock = [datetime(2026, 11, 28, 23, 59, 59, tzinfo=UTC)]

    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):
            return clock[0]

    monkeypatch.setattr(state, "datetime", Clock)
    world = World()
    acme = world.account("acme")
    with SandboxServer(create_app(world)) as server, httpx.Client(base_url=server.base_url) as http:
        def usage_day() -> date:
            r = http.get("/v1/account/usage", headers={"Authorization": acme.api_key})
            assert r.status_code == 200, r.text
            return email.utils.parsedate_to_datetime(r.headers["date"]).date()

        assert usage_day() == date(2026, 11, 28) == world.today
        clock[0] = datetime(2026, 11, 29, 0, 0, 1, tzinfo=UTC)
        assert usage_day() == date(2026, 11, 29) == world.today
        world.set_today(date(2026, 3, 1))
        clock[0] = datetime(2026, 11, 30, tzinfo=UTC)
        assert usage_day() == date(2026, 3, 1)


def test_control__stats_per_key_and_reset(client, world, acme):
    globex = world.account("globex")
    client.get("/v1/domains", key=acme.api_key)
    client.get("/v1/nothing", key=acme.api_key)
    client.get("/v1/domains", key=globex.api_key)
    client.get("/v1/domains")
    client.get("/v1/domains", key=world.account("initech").api_key)
    stats = client.get("/_sandbox/stats").json()
    assert stats["keys"]["acme"] == {"requests": 2, "rate_limited": 0, "statuses": {"200": 1, "404": 1},
                                     "outside_requests": 0}
    assert stats["keys"]["globex"]["statuses"] == {"200": 1}
    assert stats["keys"]["unauthenticated"]["statuses"] == {"401": 1}
    assert stats["keys"]["initech"]["statuses"] == {"403": 1}
    assert stats["ips"]["127.0.0.1"]["requests"] == 5
    assert all(acme.api_key not in str(v) for v in stats.values())  # keys are named, never shown
    assert client.request("POST", "/_sandbox/stats/reset").json() == {"reset": True, "limits": False}
    assert client.get("/_sandbox/stats").json()["keys"] == {}


def test_control__stats_reset_can_open_fresh_rate_windows(world, acme, make_client, fake_clock):
    from rank_pipeline.sandbox import RateLimits

    c = make_client(create_app(world, limits=RateLimits(per_key=1, per_ip=10, window_s=10), clock=fake_clock))
    assert [c.get("/v1/tags", key=acme.api_key).status_code for _ in range(2)] == [200, 429]
    assert c.request("POST", "/_sandbox/stats/reset", params={"limits": "true"}).json()["limits"] is True
    assert c.get("/v1/tags", key=acme.api_key).status_code == 200


def test_server__starts_on_a_free_port_serves_and_stops():
    world = World(WorldConfig(), today=date(2026, 3, 10))
    acme = world.account("acme")
    server = SandboxServer(create_app(world))
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.base_url
    with server:
        assert server.port and server.port != 0
        assert server.base_url == f"http://127.0.0.1:{server.port}"
        r = httpx.get(server.base_url + "/v1/domains", headers={"Authorization": acme.api_key}, timeout=5)
        assert r.status_code == 200 and r.json()["data"] == world.domains(acme.account_id)
        assert len(r.headers.get_list("date")) == 1  # uvicorn's own Date header is off
        assert email.utils.parsedate_to_datetime(r.headers["date"]).date() == date(2026, 3, 10)
        assert "server" not in r.headers
        port = server.port
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


def test_server__two_servers_get_two_ports():
    world = World(WorldConfig(), today=date(2026, 3, 10))
    with SandboxServer(create_app(world)) as a, SandboxServer(create_app(world)) as b:
        assert a.port != b.port
        assert httpx.get(b.base_url + "/_sandbox/today", timeout=5).json() == {"today": "2026-03-10"}


def test_server__banner_prints_base_url_and_each_accounts_key():
    world = World(WorldConfig(), today=date(2026, 3, 10))
    out = io.StringIO()
    _banner(world, "127.0.0.1", 8765, out)
    text = out.getvalue()
    assert "http://127.0.0.1:8765" in text and "2026-03-10" in text
    for account in world.accounts:
        line = next(x for x in text.splitlines() if f"account {account.name} " in x)
        assert account.api_key in line
        assert ("no API access" in line) != account.api_enabled
