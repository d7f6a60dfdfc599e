"""Read endpoints of the sandbox app (spec, "Endpoints", "Errors", "Authentication")."""

from __future__ import annotations

import email.utils
import uuid
from datetime import date

import pytest

from rank_pipeline.sandbox import World, WorldConfig, create_app

TODAY = date(2026, 3, 10)  # the day of the `world` fixture (conftest.py)


def _domain_ids(world, account):
    return [d["id"] for d in world.domains(account.account_id)]


def test_endpoints__domains_list_envelope(client, world, acme):
    r = client.get("/v1/domains", key=acme.api_key)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == {"data": world.domains(acme.account_id)}
    assert all(d["type"] == "domain" for d in r.json()["data"])


def test_endpoints__single_domain_is_one_object(client, world, acme):
    domain_id = _domain_ids(world, acme)[1]
    r = client.get(f"/v1/domains/{domain_id}", key=acme.api_key)
    assert r.status_code == 200
    assert r.json() == {"data": world.domain(acme.account_id, domain_id)}


@pytest.mark.parametrize("suffix", ["", "/keywords", "/competitors"])
def test_errors__other_accounts_domain_is_404_domain_not_found(client, world, acme, suffix):
    globex_domain = _domain_ids(world, world.account("globex"))[0]
    for domain_id in (globex_domain, str(uuid.uuid4()), "not-a-uuid"):
        r = client.get(f"/v1/domains/{domain_id}{suffix}", key=acme.api_key)
        assert r.status_code == 404
        assert r.headers["content-type"] == "application/json"
        assert r.json() == {"errors": [{"status": 404, "code": "not_found", "detail": "Domain not found"}]}


def test_endpoints__keywords_are_the_worlds_records_of_today(client, world, acme):
    domain_id = _domain_ids(world, acme)[0]
    r = client.get(f"/v1/domains/{domain_id}/keywords", params={"per_page": 1000}, key=acme.api_key)
    assert r.status_code == 200
    data = r.json()["data"]
    assert data == world.keywords(domain_id, TODAY)
    for k in data:
        assert k["type"] == "keyword"
        assert k["attributes"]["results"]["organic"]["position"] == world.position(k["id"], TODAY)


def test_endpoints__keywords_filter_results_organic_url_is_exact_match(client, world, acme):
    domain_id = _domain_ids(world, acme)[0]
    records = world.keywords(domain_id)
    urls = [k["attributes"]["results"]["organic"]["url"] for k in records]
    shared = max((u for u in urls if u), key=urls.count)  # the URL most keywords rank with
    r = client.get(f"/v1/domains/{domain_id}/keywords", params={"results_organic_url": shared}, key=acme.api_key)
    expected = [k for k in records if k["attributes"]["results"]["organic"]["url"] == shared]
    assert r.json()["data"] == expected and len(expected) == urls.count(shared)
    assert r.headers["X-Total-Count"] == str(len(expected))
    r = client.get(f"/v1/domains/{domain_id}/keywords", params={"results_organic_url": shared.rstrip("/")},
                   key=acme.api_key)
    assert r.json()["data"] == []  # no prefix or normalised match


def test_endpoints__competitors_tags_usage(client, world, acme):
    domain_id = _domain_ids(world, acme)[2]
    r = client.get(f"/v1/domains/{domain_id}/competitors", key=acme.api_key)
    assert r.status_code == 200 and r.json() == {"data": world.competitors(domain_id)}
    r = client.get("/v1/tags", key=acme.api_key)
    assert r.status_code == 200 and r.json() == {"data": world.tags(acme.account_id)}
    r = client.get("/v1/account/usage", key=acme.api_key)
    assert r.status_code == 200 and r.json() == {"data": world.usage(acme.account_id)}
    assert r.json()["data"]["type"] == "usage" and r.json()["data"]["attributes"]["apiEnabled"] is True
    assert "X-Total-Count" not in r.headers  # not a list


def test_endpoints__unknown_v1_path_is_404_not_found(client, acme):
    for path in ("/v1/nothing", "/v1/domains/x/serps", "/v1"):
        r = client.get(path, key=acme.api_key)
        assert r.status_code == 404
        assert r.json()["errors"][0]["code"] == "not_found" and r.json()["errors"][0]["status"] == 404


def test_endpoints__date_header_carries_the_simulated_day(client, world, acme):
    for day in (TODAY, date(2027, 7, 4)):
        world.set_today(day)
        r = client.get("/v1/tags", key=acme.api_key)
        assert len(r.headers.get_list("date")) == 1
        assert email.utils.parsedate_to_datetime(r.headers["date"]).date() == day
    r = client.get("/v1/tags")  # also on 401
    assert email.utils.parsedate_to_datetime(r.headers["date"]).date() == date(2027, 7, 4)


def test_endpoints__records_follow_the_simulated_day(client, world, acme):
    domain_id = _domain_ids(world, acme)[0]
    world.set_today(date(2026, 4, 2))
    data = client.get(f"/v1/domains/{domain_id}/keywords", params={"per_page": 1000}, key=acme.api_key).json()["data"]
    assert data == world.keywords(domain_id, date(2026, 4, 2))
    assert data[0]["attributes"]["results"]["organic"]["capturedAt"].startswith("2026-04-02")


def test_endpoints__colleague_routes_are_mounted_when_present(client, acme):
    r = client.get("/v1/locations", params={"country": "FR"}, key=acme.api_key)
    assert r.status_code == 200 and "X-Total-Count" in r.headers
    assert client.get("/v1/locations").status_code == 401  # behind the same authentication


def test_endpoints__create_then_list(make_client):
    world = World(WorldConfig(), today=TODAY)
    c = make_client(create_app(world))
    acme = world.account("acme")
    domain_id = world.domains(acme.account_id)[0]["id"]
    body = {"keyword": {"frequency": "daily", "words": ["quokka hats"],
                        "search_engines": [{"name": "google", "device": "desktop", "location": "US", "language": "en"}]}}
    r = c.request("POST", f"/v1/domains/{domain_id}/keywords", json=body, key=acme.api_key)
    assert r.status_code == 201, r.text
    listed = c.get(f"/v1/domains/{domain_id}/keywords", params={"per_page": 1000}, key=acme.api_key).json()["data"]
    assert [k for k in listed if k["attributes"]["keyword"] == "quokka hats"][0]["attributes"]["location"]["code"] == "2840"
