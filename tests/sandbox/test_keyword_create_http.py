"""Keyword create through the sandbox app, in-process (spec: "Keyword create: body", "Status codes",
"Limits" rule 2). Ground truth: the keyword list read back before and after."""

from __future__ import annotations

import asyncio
from datetime import date

import httpx
import pytest

from rank_pipeline.sandbox import AccountSpec, RateLimits, World, WorldConfig, create_app


@pytest.fixture()
def sandbox():
    config = WorldConfig(
        seed=4,
        accounts=(
            AccountSpec("a", domains=1, keywords_per_domain=(4, 4), keyword_limit=30, data_row_limit=100_000),
            AccountSpec("b", domains=1, keywords_per_domain=(4, 4)),
        ),
    )
    world = World(config, today=date(2026, 4, 1))
    app = create_app(world, limits=RateLimits(per_key=100_000, per_ip=100_000))
    account = world.account("a")
    domain_id = world.domains(account.account_id)[0]["id"]
    other_domain = world.domains(world.account("b").account_id)[0]["id"]

    def call(method, path, **kwargs):
        async def run():
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://sandbox") as client:
                return await client.request(method, path, headers={"Authorization": account.api_key}, **kwargs)

        return asyncio.run(run())

    def keyword_ids():
        response = call("GET", f"/v1/domains/{domain_id}/keywords", params={"per_page": 1000})
        assert response.status_code == 200
        return {r["id"] for r in response.json()["data"]}

    return world, call, domain_id, other_domain, keyword_ids


def create_body(words, location="2840"):
    return {"keyword": {"frequency": "Daily", "words": words,
                        "search_engines": [{"name": "google", "device": "desktop", "location": location, "language": "en"}]}}


def test_keyword_create_http__201_and_the_keywords_read_back(sandbox):
    _, call, domain_id, _, keyword_ids = sandbox
    before = keyword_ids()
    response = call("POST", f"/v1/domains/{domain_id}/keywords", json=create_body(["zz one", "zz two"], location="us"))
    assert response.status_code == 201
    records = response.json()["data"]
    assert [r["attributes"]["keyword"] for r in records] == ["zz one", "zz two"]
    assert {r["attributes"]["location"]["code"] for r in records} == {"2840"}
    assert keyword_ids() == before | {r["id"] for r in records}


def test_keyword_create_http__iso_and_id_forms_create_the_same_keyword(sandbox):
    _, call, domain_id, _, keyword_ids = sandbox
    first = call("POST", f"/v1/domains/{domain_id}/keywords", json=create_body(["zz same"], location="US"))
    ids_after_first = keyword_ids()
    second = call("POST", f"/v1/domains/{domain_id}/keywords", json=create_body(["zz same"], location="2840"))
    assert first.json()["data"][0]["id"] == second.json()["data"][0]["id"]
    assert keyword_ids() == ids_after_first


@pytest.mark.parametrize(
    "kwargs",
    [{"json": {"frequency": "daily", "words": ["x"]}}, {"content": b"not json"}, {"json": ["keyword"]}, {}],
)
def test_keyword_create_http__without_wrapping_resource_object_is_400(sandbox, kwargs):
    _, call, domain_id, _, keyword_ids = sandbox
    before = keyword_ids()
    response = call("POST", f"/v1/domains/{domain_id}/keywords", **kwargs)
    assert response.status_code == 400
    (error,) = response.json()["errors"]
    assert (error["status"], error["code"]) == (400, "bad_request")
    assert keyword_ids() == before


def test_keyword_create_http__another_accounts_domain_is_404(sandbox):
    world, call, _, other_domain, _ = sandbox
    before = world.keywords(other_domain)
    response = call("POST", f"/v1/domains/{other_domain}/keywords", json=create_body(["zz x"]))
    assert response.status_code == 404
    assert response.json() == {"errors": [{"status": 404, "code": "not_found", "detail": "Domain not found"}]}
    assert world.keywords(other_domain) == before


def test_keyword_create_http__422_lists_every_failure_and_creates_nothing(sandbox):
    _, call, domain_id, _, keyword_ids = sandbox
    before = keyword_ids()
    body = create_body(["zz x"], location="Paris, France")
    body["keyword"]["frequency"] = "hourly"
    response = call("POST", f"/v1/domains/{domain_id}/keywords", json=body)
    assert response.status_code == 422
    assert [e["source"]["pointer"] for e in response.json()["errors"]] == ["/frequency", "/search_engines/0/location"]
    assert keyword_ids() == before


def test_keyword_create_http__over_quota_is_402_and_creates_nothing(sandbox):
    world, call, domain_id, _, keyword_ids = sandbox
    usage = call("GET", "/v1/account/usage").json()["data"]["attributes"]
    before = keyword_ids()
    words = [f"zz w{i}" for i in range(usage["keywords"]["remaining"] + 1)]
    response = call("POST", f"/v1/domains/{domain_id}/keywords", json=create_body(words))
    assert response.status_code == 402
    assert response.json()["errors"][0]["code"] == "over_quota"
    assert keyword_ids() == before
    assert call("GET", "/v1/account/usage").json()["data"]["attributes"] == usage
