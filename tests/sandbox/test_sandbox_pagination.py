"""Pagination (spec, "Limits" rules 4-6 and the page/per_page rows)."""

from __future__ import annotations

import math

import pytest

from rank_pipeline.sandbox import AccountSpec, World, WorldConfig, create_app
from rank_pipeline.sandbox.pagination import PaginationError, parse_page_params


def _headers(r):
    return {h: int(r.headers[h]) for h in ("X-Total-Count", "X-Total-Pages", "X-Per-Page", "X-Current-Page")}


@pytest.fixture
def big(make_client):
    """One domain with 1,500 base keywords, so the per_page cap of 1000 shows."""
    world = World(WorldConfig(accounts=(AccountSpec("big", domains=1, keywords_per_domain=(1500, 1500),
                                                    keyword_limit=10**6, data_row_limit=10**8),)),
                  today=WorldConfig().start_date.replace(year=2028))
    account = world.account("big")
    domain_id = world.domains(account.account_id)[0]["id"]
    return make_client(create_app(world)), world, account, domain_id


def test_pagination__defaults_page_1_per_page_100(big):
    client, world, account, domain_id = big
    records = world.keywords(domain_id)
    r = client.get(f"/v1/domains/{domain_id}/keywords", key=account.api_key)
    assert _headers(r) == {"X-Total-Count": len(records), "X-Total-Pages": math.ceil(len(records) / 100),
                           "X-Per-Page": 100, "X-Current-Page": 1}
    assert r.json()["data"] == records[:100]


def test_pagination__per_page_is_capped_at_1000(big):
    client, world, account, domain_id = big
    records = world.keywords(domain_id)
    assert len(records) > 1000
    r = client.get(f"/v1/domains/{domain_id}/keywords", params={"per_page": 5000}, key=account.api_key)
    assert r.status_code == 200
    assert _headers(r)["X-Per-Page"] == 1000 and len(r.json()["data"]) == 1000
    assert _headers(r)["X-Total-Pages"] == 2


def test_pagination__pages_partition_the_list_and_last_page_is_total_pages(big):
    client, world, account, domain_id = big
    records = world.keywords(domain_id)
    per_page = 400
    pages = math.ceil(len(records) / per_page)
    seen = []
    for page in range(1, pages + 1):
        r = client.get(f"/v1/domains/{domain_id}/keywords", params={"page": page, "per_page": per_page},
                       key=account.api_key)
        h = _headers(r)
        assert h["X-Total-Pages"] == pages and h["X-Current-Page"] == page and h["X-Per-Page"] == per_page
        seen += r.json()["data"]
    assert h["X-Current-Page"] == h["X-Total-Pages"]
    assert len(r.json()["data"]) == len(records) - (pages - 1) * per_page
    assert seen == records


def test_pagination__page_beyond_last_is_200_empty(client, world, acme):
    n = len(world.tags(acme.account_id))
    r = client.get("/v1/tags", params={"page": 3, "per_page": n}, key=acme.api_key)
    assert r.status_code == 200 and r.json() == {"data": []}
    assert _headers(r) == {"X-Total-Count": n, "X-Total-Pages": 1, "X-Per-Page": n, "X-Current-Page": 3}


@pytest.mark.parametrize("path", ["/v1/domains", "/v1/tags"])
def test_pagination__headers_on_every_list(client, acme, path):
    r = client.get(path, key=acme.api_key)
    assert set(_headers(r)) == {"X-Total-Count", "X-Total-Pages", "X-Per-Page", "X-Current-Page"}


def test_pagination__empty_list_has_one_page(make_client):
    world = World(WorldConfig(accounts=(AccountSpec("empty", domains=1, keywords_per_domain=(1, 1)),)))
    account = world.account("empty")
    domain_id = world.domains(account.account_id)[0]["id"]
    c = make_client(create_app(world))
    r = c.get(f"/v1/domains/{domain_id}/keywords", params={"results_organic_url": "https://nowhere/"},
              key=account.api_key)
    assert r.json() == {"data": []}
    assert _headers(r) == {"X-Total-Count": 0, "X-Total-Pages": 1, "X-Per-Page": 100, "X-Current-Page": 1}


@pytest.mark.parametrize(
    ("params", "parameter"),
    [({"page": "0"}, "page"), ({"page": "-1"}, "page"), ({"page": "two"}, "page"), ({"page": "1.5"}, "page"),
     ({"per_page": "0"}, "per_page"), ({"per_page": "abc"}, "per_page"), ({"page": ""}, "page")],
)
def test_pagination__malformed_page_or_per_page_is_400(client, acme, params, parameter):
    r = client.get("/v1/domains", params=params, key=acme.api_key)
    assert r.status_code == 400
    (entry,) = r.json()["errors"]
    assert entry["status"] == 400 and entry["code"] == "bad_request"
    assert entry["source"] == {"parameter": parameter} and parameter in entry["detail"]


def test_pagination__parse_page_params():
    assert parse_page_params({}) == (1, 100)
    assert parse_page_params({"page": "7", "per_page": "1001"}) == (7, 1000)
    with pytest.raises(PaginationError, match="per_page"):
        parse_page_params({"per_page": "0"})
