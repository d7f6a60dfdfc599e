"""Fault switches (rank_pipeline.sandbox.faults): each shown acting; drop and hang over real HTTP."""

from __future__ import annotations

import json
import statistics
from datetime import date

import httpx
import pytest

from rank_pipeline.sandbox import Faults, SandboxServer, World, WorldConfig, create_app

TODAY = date(2026, 3, 10)  # the day of the `world` fixture (conftest.py)


def _client(make_client, world, faults, sleep=None):
    kwargs = {"sleep": sleep} if sleep is not None else {}
    return make_client(create_app(world, faults=faults, **kwargs))


def test_faults__all_off_by_default(world, acme, make_client, sleep_recorder):
    assert not Faults().any_on
    c = _client(make_client, world, Faults(), sleep_recorder)
    statuses = [c.get("/v1/tags", key=acme.api_key).status_code for _ in range(50)]
    assert statuses == [200] * 50 and sleep_recorder.calls == []
    assert c.get("/_sandbox/stats").json()["faults"] == {"drop": 0, "hang": 0, "error": 0, "invalid_json": 0, "shift": 0}


def test_faults__latency_is_lognormal_around_the_median_and_deterministic(world, acme, make_client, sleep_recorder):
    faults = Faults(seed=3, latency_median_ms=100, latency_p99_ms=400)
    runs = []
    for _ in range(2):
        recorder = type(sleep_recorder)()
        c = _client(make_client, world, faults, recorder)
        for _ in range(300):
            c.get("/v1/account/usage", key=acme.api_key)
        runs.append(recorder.calls)
    delays = runs[0]
    assert runs[0] == runs[1]  # same seed, same delays
    assert len(delays) == 300 and all(d > 0 for d in delays)
    assert 0.085 < statistics.median(delays) < 0.115
    assert sum(d > 0.4 for d in delays) <= 9  # about 1 % above p99
    assert max(delays) > 0.2  # a tail, not a constant


def test_faults__latency_scales_with_page_size(world, acme, make_client, sleep_recorder):
    c = _client(make_client, world, Faults(latency_per_1000_records_ms=500), sleep_recorder)
    c.get("/v1/tags", params={"per_page": 1000}, key=acme.api_key)
    c.get("/v1/tags", params={"per_page": 5000}, key=acme.api_key)  # capped at 1000
    c.get("/v1/tags", params={"per_page": 10}, key=acme.api_key)
    c.get("/v1/tags", key=acme.api_key)  # default 100
    c.get("/v1/account/usage", key=acme.api_key)  # not a list: one record
    assert sleep_recorder.calls == pytest.approx([0.5, 0.5, 0.005, 0.05, 0.0005])


def test_faults__error_rate_gives_5xx_bodies(world, acme, make_client):
    c = _client(make_client, world, Faults(seed=1, error_rate=1.0))
    responses = [c.get("/v1/domains", key=acme.api_key) for _ in range(30)]
    assert {r.status_code for r in responses} == {500, 502, 503}
    for r in responses:
        if r.status_code == 502:
            assert r.headers["content-type"].startswith("text/html")
        else:
            (entry,) = r.json()["errors"]
            assert entry["status"] == r.status_code and entry["code"] == "server_error"
    stats = c.get("/_sandbox/stats").json()
    assert stats["faults"]["error"] == 30
    assert sum(stats["keys"]["acme"]["statuses"].values()) == 30


def test_faults__error_rate_is_a_share_and_seeded(world, acme, make_client):
    sequences = []
    for _ in range(2):
        c = _client(make_client, world, Faults(seed=5, error_rate=0.3))
        sequences.append([c.get("/v1/tags", key=acme.api_key).status_code for _ in range(200)])
    assert sequences[0] == sequences[1]
    share = sum(s >= 500 for s in sequences[0]) / 200
    assert 0.2 < share < 0.4


def test_faults__do_not_touch_authentication(world, make_client):
    c = _client(make_client, world, Faults(error_rate=1.0, invalid_json_rate=1.0))
    r = c.get("/v1/domains")
    assert r.status_code == 401 and r.content == b""
    r = c.get("/v1/domains", key=world.account("initech").api_key)
    assert r.status_code == 403 and r.content == b""


def test_faults__invalid_json_is_200_with_a_broken_body(world, acme, make_client):
    c = _client(make_client, world, Faults(invalid_json_rate=1.0))
    r = c.get("/v1/domains", key=acme.api_key)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert int(r.headers["content-length"]) == len(r.content) > 0
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.content)
    assert r.headers["X-Total-Count"] == str(len(world.domains(acme.account_id)))


def test_faults__hang_waits_hang_s(world, acme, make_client, sleep_recorder):
    c = _client(make_client, world, Faults(hang_rate=1.0, hang_s=42.0), sleep_recorder)
    assert c.get("/v1/tags", key=acme.api_key).status_code == 200
    assert sleep_recorder.calls == [42.0]


def test_faults__shifting_records_move_between_pages(acme, make_client):
    world = World(WorldConfig(), today=TODAY)
    truth = World(WorldConfig(), today=TODAY)  # untouched copy: ground truth of positions
    domain_id = world.domains(acme.account_id)[0]["id"]
    before = {k["id"] for k in world.keywords(domain_id)}
    c = _client(make_client, world, Faults(seed=2, shift_rate=1.0, shift_inserts=3, shift_deletes=2))
    per_page = 10
    read, page = [], 1
    while True:
        r = c.get(f"/v1/domains/{domain_id}/keywords", params={"page": page, "per_page": per_page}, key=acme.api_key)
        read += r.json()["data"]
        if page >= int(r.headers["X-Total-Pages"]):
            break
        page += 1
    after = world.keywords(domain_id)
    after_ids = {k["id"] for k in after}
    assert len(after_ids) == len(before) + page * (3 - 2)  # every request wrote
    assert after_ids - before and before - after_ids  # inserted and deleted
    ids_read = [k["id"] for k in read]
    assert set(ids_read) != after_ids  # a naive page-by-page read is not the final list
    for k in after:  # positions of the keywords that were there before are untouched
        if k["id"] in before:
            assert k["attributes"]["results"]["organic"]["position"] == truth.position(k["id"], TODAY)
    assert c.get("/_sandbox/stats").json()["faults"]["shift"] == page


def test_faults__shift_applies_only_to_keyword_lists(world, acme, make_client):
    domain_id = world.domains(acme.account_id)[0]["id"]
    before = world.keyword_ids(domain_id)
    c = _client(make_client, world, Faults(shift_rate=1.0))
    c.get("/v1/domains", key=acme.api_key)
    c.get(f"/v1/domains/{domain_id}/competitors", key=acme.api_key)
    assert world.keyword_ids(domain_id) == before


def test_faults__changed_at_runtime_through_control_endpoint(world, acme, make_client):
    c = _client(make_client, world, Faults())
    assert c.get("/v1/tags", key=acme.api_key).status_code == 200
    r = c.request("PUT", "/_sandbox/faults", json={"error_rate": 1.0, "seed": 9})
    assert r.status_code == 200 and r.json()["error_rate"] == 1.0 and r.json()["seed"] == 9
    assert c.get("/v1/tags", key=acme.api_key).status_code >= 500
    c.request("PUT", "/_sandbox/faults", json={"error_rate": 0})
    assert c.get("/v1/tags", key=acme.api_key).status_code == 200
    for bad in ({"nope": 1}, {"error_rate": 2}, {"error_rate": "high"}):
        r = c.request("PUT", "/_sandbox/faults", json=bad)
        assert r.status_code == 400 and r.json()["errors"][0]["code"] == "bad_request"
    assert c.get("/_sandbox/faults").json() == Faults(seed=9).to_dict()


# ------------------------------------------------------------------------------------- over real HTTP


def test_faults__dropped_connection_is_a_transport_error_over_http(world, acme):
    app = create_app(world, faults=Faults(drop_rate=1.0))
    with SandboxServer(app) as server, httpx.Client(base_url=server.base_url, timeout=5) as http:
        with pytest.raises(httpx.TransportError):
            http.get("/v1/domains", headers={"Authorization": acme.api_key})
        http.put("/_sandbox/faults", json={"drop_rate": 0})
        r = http.get("/v1/domains", headers={"Authorization": acme.api_key})
        assert r.status_code == 200 and r.json()["data"] == world.domains(acme.account_id)
        assert http.get("/_sandbox/stats").json()["faults"]["drop"] == 1


def test_faults__hung_request_times_the_client_out_over_http(world, acme):
    app = create_app(world, faults=Faults(hang_rate=1.0, hang_s=3.0))
    with SandboxServer(app) as server, httpx.Client(base_url=server.base_url, timeout=0.3) as http:
        with pytest.raises(httpx.ReadTimeout):
            http.get("/v1/tags", headers={"Authorization": acme.api_key})
        assert http.get("/_sandbox/stats").json()["faults"]["hang"] == 1
