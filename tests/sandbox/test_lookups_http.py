"""Lookup endpoints through the sandbox app, in-process (spec: "GET /v1/locations: query",
"GET /v1/languages: query", "Limits" rule 4, "Authentication")."""

from __future__ import annotations

import asyncio
from datetime import date

import httpx
import pycountry
import pytest

from rank_pipeline.sandbox import AccountSpec, RateLimits, World, WorldConfig, create_app

CONFIG = WorldConfig(
    seed=2,
    accounts=(
        AccountSpec("api", domains=1, keywords_per_domain=(3, 3)),
        AccountSpec("noapi", api_enabled=False, domains=1, keywords_per_domain=(3, 3)),
    ),
)


@pytest.fixture(scope="module")
def client_get():
    world = World(CONFIG, today=date(2026, 2, 1))
    app = create_app(world, limits=RateLimits(per_key=100_000, per_ip=100_000))

    def get(path, key="api", **params):
        headers = {"Authorization": world.account(key).api_key} if key else {}

        async def run():
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://sandbox") as client:
                return await client.get(path, params=params, headers=headers)

        return asyncio.run(run())

    return get


def test_locations_http__country_rows_with_the_four_pagination_headers(client_get):
    response = client_get("/v1/locations", per_page=50, page=2)
    assert response.status_code == 200
    total = len(pycountry.countries)
    assert response.headers["X-Total-Count"] == str(total)
    assert response.headers["X-Total-Pages"] == str(-(-total // 50))
    assert response.headers["X-Per-Page"] == "50"
    assert response.headers["X-Current-Page"] == "2"
    data = response.json()["data"]
    assert len(data) == 50
    for record in data:
        assert record["type"] == "location"
        assert record["id"] == record["attributes"]["code"]
        assert record["attributes"]["variant"] == "Country"


def test_locations_http__per_page_is_capped_and_page_beyond_last_is_empty(client_get):
    capped = client_get("/v1/locations", per_page=5000)
    assert capped.headers["X-Per-Page"] == "1000"
    beyond = client_get("/v1/locations", page=99)
    assert beyond.status_code == 200 and beyond.json()["data"] == []


def test_locations_http__query_errors_are_422_envelopes(client_get):
    response = client_get("/v1/locations", search_engine="altavista", q="a")
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/json"
    errors = response.json()["errors"]
    assert [(e["code"], e["source"]["pointer"]) for e in errors] == [
        ("invalid_reference_value", "/search_engine"),
        ("validation_failed", "/q"),
    ]
    assert all(e["status"] == 422 for e in errors)


def test_locations_http__q_given_twice_is_not_a_string(client_get):
    response = client_get("/v1/locations", q=["Par", "Ber"])
    assert response.status_code == 422
    assert response.json()["errors"][0]["detail"] == "q must be a string"


def test_locations_http__code_filter_returns_the_row(client_get):
    response = client_get("/v1/locations", search_engine="bing", code="2826")
    assert response.json()["data"] == [
        {"id": "2826", "type": "location",
         "attributes": {"code": "2826", "name": "United Kingdom", "variant": "Country", "countryCode": "GB"}}
    ]


def test_languages_http__rows_headers_and_no_global(client_get):
    response = client_get("/v1/languages", search_engine="yahoo")
    assert response.status_code == 200
    assert response.headers["X-Total-Count"] == "6"
    codes = [r["id"] for r in response.json()["data"]]
    assert sorted(codes) == ["de", "en", "es", "fr", "ja", "zh"]
    assert client_get("/v1/languages", q="0000").json()["data"] == []


@pytest.mark.parametrize("path", ["/v1/locations", "/v1/languages"])
def test_lookups_http__need_a_key_with_api_access(client_get, path):
    missing = client_get(path, key=None)
    assert (missing.status_code, missing.content) == (401, b"")
    forbidden = client_get(path, key="noapi")
    assert (forbidden.status_code, forbidden.content) == (403, b"")
