"""Keyword create against the seeded world: 404, 402 all-or-nothing, both location forms
(spec: "Keyword create: body" rules 3-4, "Keyword", "Limits" rule 2, "Status codes")."""

from __future__ import annotations

from datetime import date

import pytest

from rank_pipeline.sandbox import world as world_module
from rank_pipeline.sandbox.keyword_create import KeywordCreateError, create_keywords

AccountSpec, World, WorldConfig = world_module.AccountSpec, world_module.World, world_module.WorldConfig
TODAY = date(2026, 3, 1)


@pytest.fixture()
def world():
    config = WorldConfig(
        seed=11,
        accounts=(
            AccountSpec("small", domains=1, keywords_per_domain=(5, 5), keyword_limit=40, data_row_limit=100_000),
            AccountSpec("rows", domains=1, keywords_per_domain=(5, 5), keyword_limit=10_000, data_row_limit=40),
            AccountSpec("other", domains=1, keywords_per_domain=(5, 5)),
        ),
    )
    return World(config, today=TODAY)


def _ids(world, account_name):
    account = world.account(account_name)
    return account.account_id, world.domains(account.account_id)[0]["id"]


def body(words, **entry):
    search_engine = {"name": "google", "device": "desktop", "location": "2840", "language": "en", **entry}
    return {"keyword": {"frequency": "daily", "words": words, "search_engines": [search_engine]}}


def _remaining(world, account_id, resource):
    return world.usage(account_id)["attributes"][resource]["remaining"]


def test_keyword_create__creates_one_keyword_per_word_and_entry(world):
    account_id, domain_id = _ids(world, "small")
    before = {k["id"] for k in world.keywords(domain_id)}
    payload = body(["zz alpha", "zz beta"])
    payload["keyword"]["search_engines"].append({"name": "bing", "device": "mobile", "location": "gb", "language": "en"})
    records = create_keywords(world, account_id, domain_id, payload)
    assert len(records) == 4
    after = {k["id"]: k for k in world.keywords(domain_id)}
    assert set(after) - before == {r["id"] for r in records}
    got = {
        (a["keyword"], a["searchEngine"], a["device"], a["location"]["code"], a["language"]["code"])
        for a in (after[r["id"]]["attributes"] for r in records)
    }
    assert got == {
        ("zz alpha", "google", "desktop", "2840", "en"),
        ("zz beta", "google", "desktop", "2840", "en"),
        ("zz alpha", "bing", "mobile", "2826", "en"),
        ("zz beta", "bing", "mobile", "2826", "en"),
    }


@pytest.mark.parametrize(("first", "second"), [("US", "2840"), ("2840", "us"), (" us ", " 2840 ")])
def test_keyword_create__iso_and_id_forms_create_the_same_keyword(world, first, second):
    account_id, domain_id = _ids(world, "small")
    (created,) = create_keywords(world, account_id, domain_id, body(["zz shoes"], location=first))
    count = len(world.keywords(domain_id))
    (again,) = create_keywords(world, account_id, domain_id, body(["zz shoes"], location=second))
    assert again["id"] == created["id"]
    assert created["attributes"]["location"]["code"] == "2840"
    assert len(world.keywords(domain_id)) == count


@pytest.mark.parametrize(("account", "resource"), [("small", "keywords"), ("rows", "dataRows")])
def test_keyword_create__over_quota_is_402_and_creates_nothing(world, account, resource):
    account_id, domain_id = _ids(world, account)
    remaining = _remaining(world, account_id, resource)
    keywords_before = world.keywords(domain_id)
    usage_before = world.usage(account_id)
    words = [f"zz word {i}" for i in range(remaining + 1)]
    with pytest.raises(KeywordCreateError) as info:
        create_keywords(world, account_id, domain_id, body(words))
    assert info.value.status == 402
    (error,) = info.value.errors
    assert error["code"] == "over_quota" and error["status"] == 402
    assert "/v1/account/usage" in error["detail"]
    assert world.keywords(domain_id) == keywords_before
    assert world.usage(account_id) == usage_before


def test_keyword_create__exactly_the_remaining_quota_is_created(world):
    account_id, domain_id = _ids(world, "small")
    remaining = _remaining(world, account_id, "keywords")
    records = create_keywords(world, account_id, domain_id, body([f"zz w{i}" for i in range(remaining)]))
    assert len(records) == remaining
    assert _remaining(world, account_id, "keywords") == 0


@pytest.mark.parametrize(
    "domain_of",
    ["other", "random", "small-but-bad-body"],
)
def test_keyword_create__domain_of_another_account_is_404_not_found(world, domain_of):
    account_id, own_domain = _ids(world, "small")
    payload = body(["zz x"])
    if domain_of == "other":
        domain_id = _ids(world, "other")[1]
    elif domain_of == "random":
        domain_id = "00000000-0000-4000-8000-000000000000"
    else:  # an unknown domain is 404 even when the body would be a 400
        domain_id, payload = _ids(world, "other")[1], {"frequency": "daily"}
    with pytest.raises(KeywordCreateError) as info:
        create_keywords(world, account_id, domain_id, payload)
    assert info.value.status == 404
    assert info.value.errors == [{"status": 404, "code": "not_found", "detail": "Domain not found"}]


def test_keyword_create__422_creates_nothing(world):
    account_id, domain_id = _ids(world, "small")
    before = world.keywords(domain_id)
    payload = body(["zz ok"])
    payload["keyword"]["search_engines"].append({"name": "google", "device": "desktop", "location": "Paris", "language": "en"})
    with pytest.raises(KeywordCreateError) as info:
        create_keywords(world, account_id, domain_id, payload)
    assert info.value.status == 422
    assert world.keywords(domain_id) == before
