"""The sandbox's other shapes carry the default shape's information: each ``vendor-d`` and ``vendor-e`` record,
decoded back by hand, equals the default record of the same world (every account, domain and day, keywords
created at runtime included), and the app serves them, the usage object included."""

from __future__ import annotations

import copy
from datetime import UTC, date, datetime, timedelta

import pytest

from rank_pipeline.sandbox import AccountSpec, KeywordSpec, World, WorldConfig, create_app
from rank_pipeline.sandbox.shapes import SHAPES, parse_shape

TODAY = date(2026, 3, 10)
DAYS = (TODAY - timedelta(days=40), TODAY)


def _iso(moment: datetime) -> str:
    """The default shape's timestamp text of an aware datetime."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def decode_vendor_d(endpoint: str, record: dict) -> dict:
    """A vendor-d record in the default shape."""
    a = dict(record["attributes"])
    if endpoint == "keywords":
        assert isinstance(a["created"], int) and isinstance(a["labels"], list)
        assert a["searchVolume"] is None or isinstance(a["searchVolume"], str)
        a["createdAt"] = _iso(datetime.fromtimestamp(a.pop("created"), UTC))
        a["tagIds"] = [label["uuid"] for label in a.pop("labels")]
        a["searchVolume"] = None if a["searchVolume"] is None else int(a["searchVolume"])
        organic = dict(a["results"]["organic"])
        checked = datetime.strptime(organic.pop("checked"), "%d/%m/%Y %H:%M:%S").replace(tzinfo=UTC)
        organic["capturedAt"] = _iso(checked)
        a["results"] = {"organic": organic}
    elif endpoint == "tags":
        assert isinstance(a["createdMs"], int)
        a["createdAt"] = _iso(datetime.fromtimestamp(a.pop("createdMs") / 1000, UTC))
    elif endpoint == "usage":
        a["dataRows"] = a.pop("rowQuota")
    return {**record, "attributes": a}


def decode_vendor_e(endpoint: str, record: dict) -> dict:
    """A vendor-e record in the default shape."""
    a = dict(record["attributes"])
    if endpoint == "keywords":
        serp = a.pop("results")["serp"]
        assert len(serp) <= 1
        checked = datetime.strptime(a.pop("checkedAt"), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
        a["results"] = {"organic": {"position": serp[0]["rank"] if serp else None,
                                    "url": serp[0]["landingPage"] if serp else None,
                                    "capturedAt": _iso(checked)}}
        a["device"] = {"yes": "mobile", "no": "desktop"}[a.pop("mobile")]
    return {**record, "attributes": a}


def _records(world: World, day: date) -> dict[str, list[dict]]:
    """Every record the world serves on ``day``, by endpoint, in the default shape."""
    out: dict[str, list[dict]] = {"keywords": [], "competitors": [], "tags": [], "usage": [], "domains": []}
    for account in world.accounts:
        out["tags"] += world.tags(account.account_id, day)
        out["usage"].append(world.usage(account.account_id, day))
        for domain in world.domains(account.account_id, day):
            out["domains"].append(domain)
            out["keywords"] += world.keywords(domain["id"], day)
            out["competitors"] += world.competitors(domain["id"], day)
    return out


@pytest.fixture(scope="module")
def world() -> World:
    """The demo world, with keywords created at runtime (a creation time that is not midnight)."""
    w = World(WorldConfig(), today=TODAY)
    acme = w.account("acme")
    domain_id = w.domains(acme.account_id)[0]["id"]
    w.create_keywords(acme.account_id, domain_id, [KeywordSpec("quokka hats", "google", "mobile", "2840", "en")])
    return w


@pytest.mark.parametrize(("shape", "decode"), [("vendor-d", decode_vendor_d), ("vendor-e", decode_vendor_e)])
@pytest.mark.parametrize("day", DAYS)
def test_every_record_decoded_back_by_hand_equals_the_default_record(world, shape, decode, day):
    setting = parse_shape(shape)
    records = _records(world, day)
    assert records["keywords"] and records["tags"] and records["usage"]
    positions = [k["attributes"]["results"]["organic"]["position"] for k in records["keywords"]]
    assert None in positions and any(p is not None for p in positions)  # ranking and not ranking
    assert any(not k["attributes"]["tagIds"] for k in records["keywords"])  # keywords without tags
    created_today = [k for k in records["keywords"] if not k["attributes"]["createdAt"].endswith("T00:00:00Z")]
    assert bool(created_today) == (day == TODAY)  # the runtime keyword, created at a time of day
    for endpoint, default_records in records.items():
        for record in default_records:
            served = setting.record(endpoint, record, day)
            assert decode(endpoint, served) == record, (endpoint, served)


def test_vendor_d_sends_what_its_docstring_says(world):
    keyword = next(k for k in world.keywords(world.domains(world.account("acme").account_id)[0]["id"])
                   if k["attributes"]["tagIds"])
    a = SHAPES["vendor-d"]["keywords"](keyword)["attributes"]
    assert "createdAt" not in a and "tagIds" not in a and "capturedAt" not in a["results"]["organic"]
    created = datetime.fromisoformat(keyword["attributes"]["createdAt"])
    assert a["created"] == (created - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(seconds=1)
    assert a["labels"] == [{"uuid": t} for t in keyword["attributes"]["tagIds"]]
    assert a["searchVolume"] == str(keyword["attributes"]["searchVolume"])
    assert a["results"]["organic"]["checked"] == TODAY.strftime("%d/%m/%Y") + " 06:00:00"
    tag = world.tags(world.account("acme").account_id)[0]
    tagged = SHAPES["vendor-d"]["tags"](tag)["attributes"]
    assert tagged["createdMs"] % 1000 == 0 and "createdAt" not in tagged
    usage = SHAPES["vendor-d"]["usage"](world.usage(world.account("acme").account_id))["attributes"]
    assert set(usage["rowQuota"]) == {"usage", "limit", "remaining"} and "dataRows" not in usage


def test_vendor_e_sends_an_empty_array_when_not_ranking_and_the_device_as_a_flag(world):
    records = world.keywords(world.domains(world.account("acme").account_id)[0]["id"])
    served = [SHAPES["vendor-e"]["keywords"](k)["attributes"] for k in records]
    for default, a in zip(records, served, strict=True):
        organic = default["attributes"]["results"]["organic"]
        assert "device" not in a and set(a["results"]) == {"serp"}
        expected = [] if organic["position"] is None else [{"rank": organic["position"], "landingPage": organic["url"]}]
        assert a["results"]["serp"] == expected
        assert a["mobile"] == ("yes" if default["attributes"]["device"] == "mobile" else "no")
        assert a["checkedAt"] == f"{TODAY} 06:00:00"
    assert {a["mobile"] for a in served} == {"yes", "no"}


@pytest.mark.parametrize("shape", ["vendor-d", "vendor-e"])
def test_a_shape_from_a_day_serves_the_default_before_it(world, shape):
    setting = parse_shape(f"{shape}@{TODAY}")
    keyword = world.keywords(world.domains(world.account("acme").account_id)[0]["id"])[0]
    assert setting.keyword(keyword, TODAY - timedelta(days=1)) == keyword
    assert setting.keyword(keyword, TODAY) == SHAPES[shape]["keywords"](keyword)
    assert str(setting) == f"{shape}@{TODAY}"


def test_the_app_serves_vendor_d_usage_and_tags(make_client):
    config = WorldConfig(accounts=(AccountSpec("small", domains=1, keywords_per_domain=(5, 5)),))
    world = World(config, today=TODAY)
    account = world.account("small")
    client = make_client(create_app(world, shape=parse_shape("vendor-d")))
    usage = client.get("/v1/account/usage", key=account.api_key).json()["data"]
    assert decode_vendor_d("usage", usage) == world.usage(account.account_id)
    assert "rowQuota" in usage["attributes"]
    tags = client.get("/v1/tags", key=account.api_key).json()["data"]
    assert [decode_vendor_d("tags", t) for t in tags] == world.tags(account.account_id)
    domain_id = world.domains(account.account_id)[0]["id"]
    keywords = client.get(f"/v1/domains/{domain_id}/keywords", key=account.api_key).json()["data"]
    assert [decode_vendor_d("keywords", k) for k in keywords] == world.keywords(domain_id)


def test_serving_keywords_in_every_shape_leaves_the_world_s_shared_records_unchanged(make_client):
    """The app reads a domain's cached keyword records without copying them (``shared=True``): no shape's
    conversion, no filter and no page may change them, or the next request would serve another world."""
    config = WorldConfig(accounts=(AccountSpec("small", domains=1, keywords_per_domain=(30, 30)),))
    world = World(config, today=TODAY)
    account = world.account("small")
    domain_id = world.domains(account.account_id)[0]["id"]
    shared = world.keywords(domain_id, shared=True)
    before = copy.deepcopy(shared)
    assert world.keywords(domain_id, shared=True) is shared  # the cache's own list, not a copy
    url = next(k["attributes"]["results"]["organic"]["url"] for k in before
               if k["attributes"]["results"]["organic"]["url"])
    ranking_there = [k for k in before if k["attributes"]["results"]["organic"]["url"] == url]
    expected = {"?per_page=7&page=2": before[7:14], "?per_page=1000": before,
                f"?results_organic_url={url}": ranking_there}
    for shape in SHAPES:
        client = make_client(create_app(world, shape=parse_shape(shape)))
        for query, records in expected.items():
            served = client.get(f"/v1/domains/{domain_id}/keywords{query}", key=account.api_key).json()["data"]
            assert [k["id"] for k in served] == [k["id"] for k in records]
            if shape == "default":
                assert served == records
    assert shared == before and world.keywords(domain_id) == before
