"""Ground truth of the seeded world (rank_pipeline.sandbox.world): determinism, positions, URLs,
keyword lifecycle, usage (spec, "Usage", "Limits"), competitors, tags, keyword create."""

from __future__ import annotations

import random
from datetime import date, timedelta

import pytest

from rank_pipeline.sandbox import catalogues
from rank_pipeline.sandbox.world import (
    AccountSpec,
    KeywordSpec,
    LimitChange,
    QuotaExceeded,
    UnknownDomain,
    World,
    WorldConfig,
)

TODAY = date(2026, 3, 10)  # the day of the `world` fixture (conftest.py)

DAYS = [TODAY + timedelta(days=i) for i in range(-30, 31)]


def _all_domains(world):
    return [d["id"] for a in world.accounts for d in world.domains(a.account_id)]


def test_world__same_config_and_day_give_identical_records():
    a, b = World(WorldConfig(), today=TODAY), World(WorldConfig(), today=TODAY)
    for acc_a, acc_b in zip(a.accounts, b.accounts, strict=True):
        assert acc_a == acc_b
        assert a.domains(acc_a.account_id) == b.domains(acc_b.account_id)
        assert a.tags(acc_a.account_id) == b.tags(acc_b.account_id)
        assert a.usage(acc_a.account_id) == b.usage(acc_b.account_id)
        for d in a.domains(acc_a.account_id):
            assert a.keywords(d["id"]) == b.keywords(d["id"])
            assert a.competitors(d["id"]) == b.competitors(d["id"])


def test_world__another_seed_is_another_world_and_its_ids_name_nothing_here(world):
    other = World(WorldConfig(seed=8), today=TODAY)
    acme, other_acme = world.account("acme"), other.account("acme")
    assert acme.api_key != other_acme.api_key
    other_kw = other.keywords(other.domains(other_acme.account_id)[0]["id"])[0]
    assert world.position(other_kw["id"], TODAY) is None
    assert world.keyword(other_kw["id"]) is None
    assert world.domain(acme.account_id, other.domains(other_acme.account_id)[0]["id"]) is None


def test_world__demo_accounts_and_domains(world):
    names = {a.name: a for a in world.accounts}
    assert set(names) == {"acme", "globex", "initech"}
    assert names["acme"].api_enabled and names["globex"].api_enabled and not names["initech"].api_enabled
    assert len({a.api_key for a in world.accounts}) == 3
    for a in world.accounts:
        domains = world.domains(a.account_id)
        assert 3 <= len(domains) <= 6
        for d in domains:
            assert d["type"] == "domain"
            assert set(d["attributes"]) == {"domain", "host", "matchType", "projectName"}
            assert d["attributes"]["host"] == "www." + d["attributes"]["domain"]


def test_world__keywords_spread_over_engines_devices_locations_languages(world):
    records = [k for d in _all_domains(world) for k in world.keywords(d)]
    attrs = [k["attributes"] for k in records]
    assert {a["searchEngine"] for a in attrs} == {"google", "bing", "yahoo"}
    assert {a["device"] for a in attrs} == {"desktop", "mobile"}
    codes = {a["location"]["code"] for a in attrs}
    assert {"2840", "2826", "2276", "2250"} <= codes
    assert "City" in {a["location"]["variant"] for a in attrs}
    assert {"en", "de", "fr"} <= {a["language"]["code"] for a in attrs}
    for a in attrs:  # the location object is the engine's catalogue row
        row = catalogues.location_by_code(a["searchEngine"], a["location"]["code"])
        assert a["location"] == {"code": row["code"], "name": row["name"], "variant": row["variant"]}
        assert catalogues.language(a["searchEngine"], a["language"]["code"]) is not None
    for d in _all_domains(world):  # a combination is tracked once per domain
        combos = [
            (a["keyword"], a["searchEngine"], a["device"], a["location"]["code"], a["language"]["code"])
            for a in (k["attributes"] for k in world.keywords(d))
        ]
        assert len(combos) == len(set(combos))
        assert 20 <= len(combos) <= 160


def test_world__keyword_records_carry_ground_truth_position_and_url(world):
    for d in _all_domains(world)[:4]:
        for day in (TODAY, TODAY - timedelta(days=3)):
            for k in world.keywords(d, day):
                organic = k["attributes"]["results"]["organic"]
                assert organic["position"] == world.position(k["id"], day)
                assert organic["url"] == world.ranking_url(k["id"], day)
                assert organic["capturedAt"] == f"{day.isoformat()}T06:00:00Z"
                assert (organic["position"] is None) == (organic["url"] is None)
                if organic["position"] is not None:
                    assert 1 <= organic["position"] <= 100


def test_world__positions_walk_and_cross_the_top_100(world):
    entered = dropped = moved = 0
    for d in _all_domains(world):
        for kid in world.keyword_ids(d, TODAY):
            series = [world.position(kid, day) for day in DAYS]
            pairs = list(zip(series, series[1:], strict=False))
            entered += any(a is None and b is not None for a, b in pairs)
            dropped += any(a is not None and b is None for a, b in pairs)
            moved += len({p for p in series if p is not None}) > 1
    assert entered > 5 and dropped > 5
    assert moved > 100  # day-to-day movement, not a constant


def test_world__ranking_url_cannibalisation_and_one_time_change(world):
    flips = changes_once = 0
    for d in _all_domains(world):
        for kid in world.keyword_ids(d, TODAY):
            urls = [world.ranking_url(kid, day) for day in DAYS]
            urls = [u for u in urls if u is not None]
            switches = sum(a != b for a, b in zip(urls, urls[1:], strict=False))
            flips += len(set(urls)) == 2 and switches >= 3
            changes_once += len(set(urls)) == 2 and switches == 1
    assert flips >= 3
    assert changes_once >= 1


def test_world__keywords_exist_from_creation_and_counts_change_day_to_day(world):
    created_seen = deleted_seen = 0
    counts = []
    for d in _all_domains(world):
        for k in world.keywords(d, TODAY):
            assert date.fromisoformat(k["attributes"]["createdAt"][:10]) <= TODAY
        previous = set(world.keyword_ids(d, DAYS[0]))
        for day in DAYS[1:]:
            ids = set(world.keyword_ids(d, day))
            for new_id in ids - previous:
                assert world.keyword(new_id, day)["attributes"]["createdAt"][:10] == day.isoformat()
                assert world.keyword(new_id, day - timedelta(days=1)) is None
                created_seen += 1
            for gone in previous - ids:
                assert world.position(gone, day) is None and world.keyword(gone, day) is None
                deleted_seen += 1
            previous = ids
    for day in DAYS:
        counts.append(sum(len(world.keyword_ids(d, day)) for d in _all_domains(world)))
    assert created_seen > 10 and deleted_seen > 10
    assert sum(a != b for a, b in zip(counts, counts[1:], strict=False)) > len(DAYS) // 2


def test_world__usage_counts_keywords_and_data_rows_with_monthly_reset(world):
    acme = world.account("acme")
    domains = [d["id"] for d in world.domains(acme.account_id)]

    def count(day):
        return sum(len(world.keywords(d, day)) for d in domains)

    for day in (date(2026, 3, 1), date(2026, 3, 10), date(2026, 2, 28)):
        u = world.usage(acme.account_id, day)
        assert u["id"] == acme.account_id and u["type"] == "usage"
        attrs = u["attributes"]
        assert attrs["apiEnabled"] is True
        assert attrs["keywords"]["usage"] == count(day)
        month = [day.replace(day=i) for i in range(1, day.day + 1)]
        assert attrs["dataRows"]["usage"] == sum(count(x) for x in month)
        for part in ("keywords", "dataRows"):
            assert attrs[part]["remaining"] == max(0, attrs[part]["limit"] - attrs[part]["usage"])
    # usage reset: the first of the month holds one day of data rows
    assert world.usage(acme.account_id, date(2026, 3, 1))["attributes"]["dataRows"]["usage"] == count(date(2026, 3, 1))
    assert (
        world.usage(acme.account_id, date(2026, 2, 28))["attributes"]["dataRows"]["usage"]
        > world.usage(acme.account_id, date(2026, 3, 1))["attributes"]["dataRows"]["usage"]
    )
    assert world.usage(world.account("initech").account_id)["attributes"]["apiEnabled"] is False


def test_world__limit_change_switches_plan_limits_on_its_day():
    start = date(2026, 1, 1)
    change = LimitChange(date(2026, 1, 11), keyword_limit=2_500, data_row_limit=75_000)
    w = World(WorldConfig(), today=TODAY)
    globex = w.account("globex")
    before = w.usage(globex.account_id, change.day - timedelta(days=1))["attributes"]
    after = w.usage(globex.account_id, change.day)["attributes"]
    assert (before["keywords"]["limit"], before["dataRows"]["limit"]) == (1_200, 30_000)
    assert (after["keywords"]["limit"], after["dataRows"]["limit"]) == (2_500, 75_000)
    assert w.config.start_date == start


def test_world__remaining_never_below_zero():
    tiny = WorldConfig(accounts=(AccountSpec("tiny", domains=1, keywords_per_domain=(30, 30), keyword_limit=5,
                                             data_row_limit=10),))
    w = World(tiny, today=TODAY)
    attrs = w.usage(w.account("tiny").account_id)["attributes"]
    assert attrs["keywords"]["usage"] > 5 and attrs["keywords"]["remaining"] == 0
    assert attrs["dataRows"]["remaining"] == 0


def test_world__competitor_set_changes_over_time(world):
    changed = 0
    for d in _all_domains(world):
        sets = [frozenset(c["id"] for c in world.competitors(d, world.config.start_date + timedelta(days=t)))
                for t in range(0, 200, 5)]
        assert all(2 <= len(s) <= 5 for s in sets)
        changed += len(set(sets)) > 1
        for c in world.competitors(d):
            assert c["type"] == "competitor" and set(c["attributes"]) == {"domain", "name", "createdAt"}
    assert changed == len(_all_domains(world))  # every domain gains one competitor on some day


def test_world__keyword_tag_ids_are_account_tags(world):
    for a in world.accounts:
        tags = world.tags(a.account_id)
        assert 3 <= len(tags) <= 6
        tag_ids = {t["id"] for t in tags}
        used = set()
        for d in world.domains(a.account_id):
            for k in world.keywords(d["id"]):
                assert set(k["attributes"]["tagIds"]) <= tag_ids
                used |= set(k["attributes"]["tagIds"])
        assert used


def test_world__unknown_ids_give_nothing(world):
    assert world.position("00000000-0000-4000-8000-000000000000", TODAY) is None
    assert world.position("not-a-uuid", TODAY) is None
    assert world.keywords("00000000-0000-4000-8000-000000000000") == []
    assert world.account_by_key("Bearer " + world.account("acme").api_key) is None
    with pytest.raises(KeyError, match="known"):
        world.account("nobody")


# ------------------------------------------------------------------------------------------------ writes


def _domain(world, name="acme"):
    account = world.account(name)
    return account, world.domains(account.account_id)[0]["id"]


def test_create_keywords__new_keywords_listed_counted_and_positioned(world):
    account, domain_id = _domain(world)
    usage_before = world.usage(account.account_id)["attributes"]
    specs = [KeywordSpec("zebra socks", "google", "desktop", "2840", "en"),
             KeywordSpec("zebra socks", "bing", "mobile", "2276", "de", "weekly")]
    created = world.create_keywords(account.account_id, domain_id, specs)
    assert [r["attributes"]["keyword"] for r in created] == ["zebra socks", "zebra socks"]
    assert created[1]["attributes"]["location"] == {"code": "2276", "name": "Germany", "variant": "Country"}
    assert created[1]["attributes"]["frequency"] == "weekly"
    listed = {k["id"]: k for k in world.keywords(domain_id)}
    for r in created:
        assert listed[r["id"]] == r
        assert r["attributes"]["results"]["organic"]["position"] == world.position(r["id"], TODAY)
        assert world.position(r["id"], TODAY - timedelta(days=1)) is None  # did not exist yesterday
    usage_after = world.usage(account.account_id)["attributes"]
    assert usage_after["keywords"]["usage"] == usage_before["keywords"]["usage"] + 2
    assert usage_after["dataRows"]["usage"] == usage_before["dataRows"]["usage"] + 2


def test_create_keywords__duplicates_are_returned_not_created_again(world):
    account, domain_id = _domain(world)
    existing = world.keywords(domain_id)[0]["attributes"]
    spec = KeywordSpec(existing["keyword"], existing["searchEngine"], existing["device"],
                       existing["location"]["code"], existing["language"]["code"])
    before = world.usage(account.account_id)
    out = world.create_keywords(account.account_id, domain_id, [spec, spec])
    assert len(out) == 1 and out[0] == world.keywords(domain_id)[0]
    assert world.usage(account.account_id) == before


def test_create_keywords__over_quota_creates_nothing():
    config = WorldConfig(accounts=(AccountSpec("small", domains=1, keywords_per_domain=(5, 5), keyword_limit=60,
                                               data_row_limit=10**6),))
    w = World(config, today=TODAY)
    account, domain_id = _domain(w, "small")
    remaining = w.usage(account.account_id)["attributes"]["keywords"]["remaining"]
    ids_before = w.keyword_ids(domain_id)
    specs = [KeywordSpec(f"word {i}", "google", "desktop", "2840", "en") for i in range(remaining + 1)]
    with pytest.raises(QuotaExceeded) as exc:
        w.create_keywords(account.account_id, domain_id, specs)
    assert exc.value.resource == "keywords" and exc.value.remaining == remaining
    assert w.keyword_ids(domain_id) == ids_before
    assert len(w.create_keywords(account.account_id, domain_id, specs[:remaining])) == remaining
    assert w.usage(account.account_id)["attributes"]["keywords"]["remaining"] == 0


def test_create_keywords__another_accounts_domain_is_unknown(world):
    _, globex_domain = _domain(world, "globex")
    with pytest.raises(UnknownDomain):
        world.create_keywords(world.account("acme").account_id, globex_domain,
                              [KeywordSpec("x", "google", "desktop", "2840", "en")])


def test_insert_and_delete_keyword__other_positions_unchanged(world):
    _, domain_id = _domain(world)
    before = {k["id"]: k["attributes"]["results"]["organic"]["position"] for k in world.keywords(domain_id)}
    victim = sorted(before)[3]
    assert world.delete_keyword(domain_id, victim)
    new = world.insert_keyword(domain_id, random.Random(1))
    after = {k["id"]: k["attributes"]["results"]["organic"]["position"] for k in world.keywords(domain_id)}
    assert victim not in after and new["id"] in after
    assert {k: v for k, v in after.items() if k != new["id"]} == {k: v for k, v in before.items() if k != victim}
    assert world.position(victim, TODAY - timedelta(days=1)) == World(WorldConfig()).position(victim, TODAY - timedelta(days=1))
    assert not world.delete_keyword(domain_id, victim)  # already gone


def test_scaled_world__builds_only_the_domains_asked_for():
    w = World(WorldConfig.scaled(domains=40, keywords_per_domain=1000), today=TODAY)
    account = w.accounts[0]
    domains = w.domains(account.account_id)
    assert len(domains) == 40
    usage = w.usage(account.account_id)["attributes"]["keywords"]["usage"]
    assert 40 * 700 < usage < 40 * 1100
    assert len(w.keywords(domains[7]["id"])) > 700
    built = [d for d in w._state.accounts[0].domains if d.base is not None]  # lazy: only the one listed
    assert [d.id for d in built] == [domains[7]["id"]]
