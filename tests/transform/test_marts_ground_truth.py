"""Every mart against an independent computation from the sandbox World's ground truth.

The marts are built by the runner from Parquet snapshots of 35 simulated days (see conftest.py). The
expected values here are computed in plain Python from the World itself (``World.position``,
``World.ranking_url``, ``World.usage``, ``World.competitors``, ...), following the definitions written
in each mart's .yml, never from the SQL or the warehouse. Each test compares the whole mart, row set
and values, and reports the first differences.
"""

from __future__ import annotations

import bisect
import csv
import functools
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path

import pandas as pd
import pytest
from marts_compare import assert_matches, mart, movement

pytestmark = pytest.mark.xdist_group(name="sql_models_world")

ONE = timedelta(days=1)
SQL_DIR = Path(__file__).resolve().parents[2] / "dbt_like_sql"
# the fixture window (conftest.Scenario); repeated here because test folders are not packages
FIRST_DAY = date(2026, 1, 8)
DAYS = [FIRST_DAY + i * ONE for i in range(35)]
RESET_DAY = date(2026, 2, 1)
LIMIT_CHANGE_DAY = date(2026, 1, 20)
CROSSING_DAY = date(2026, 1, 25)


@pytest.fixture(scope="module", autouse=True)
def _same_window(scenario):
    assert (tuple(DAYS), RESET_DAY, LIMIT_CHANGE_DAY, CROSSING_DAY) == (
        scenario.days, scenario.reset_day, scenario.limit_change_day, scenario.crossing_day
    ), "conftest.Scenario and this module disagree on the window"


# ------------------------------------------------------------------------------------------ helpers


@functools.cache
def ctr_curve() -> tuple[int, dict[int, float]]:
    """The highest-version CTR curve, read from the seed CSV file itself."""
    with open(SQL_DIR / "seeds" / "ctr_curve.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    version = max(int(r["curve_version"]) for r in rows)
    return version, {int(r["position"]): float(r["ctr"]) for r in rows if int(r["curve_version"]) == version}


def _pos(v) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


class Rankings:
    """Ground-truth keyword snapshots indexed by (keyword_id, day), with per-keyword history."""

    def __init__(self, truth):
        self.rows = truth.keywords.to_dict("records")
        for r in self.rows:  # pandas turns None into NaN in string columns
            r["ranking_url"] = None if pd.isna(r["ranking_url"]) else r["ranking_url"]
        self.by_key = {(r["keyword_id"], r["snapshot_date"]): r for r in self.rows}
        self.days_of: dict[str, list[date]] = defaultdict(list)
        for r in sorted(self.rows, key=lambda r: r["snapshot_date"]):
            self.days_of[r["keyword_id"]].append(r["snapshot_date"])

    def position(self, kid: str, day: date) -> int | None:
        return _pos(self.by_key[(kid, day)]["position"])

    def previous_day(self, kid: str, day: date) -> date | None:
        days = self.days_of[kid]
        i = bisect.bisect_left(days, day)
        return days[i - 1] if i > 0 and days[i - 1] >= day - 31 * ONE else None

    def url_changed(self, kid: str, day: date) -> bool | None:
        prev = self.previous_day(kid, day)
        now_url = self.by_key[(kid, day)]["ranking_url"]
        prev_url = self.by_key[(kid, prev)]["ranking_url"] if prev else None
        if now_url is None or prev_url is None:
            return None
        return now_url != prev_url

    def movement(self, kid: str, day: date, n: int) -> str:
        then = day - n * ONE
        has = (kid, then) in self.by_key
        return movement(self.position(kid, day), self.position(kid, then) if has else None, has)

    def change(self, kid: str, day: date, n: int) -> int | None:
        then = (kid, day - n * ONE)
        now = self.position(kid, day)
        before = _pos(self.by_key[then]["position"]) if then in self.by_key else None
        return None if now is None or before is None else before - now


@pytest.fixture(scope="module")
def rankings(truth) -> Rankings:
    return Rankings(truth)


# ------------------------------------------------------------------------------------------ scenarios


def test_the_window_holds_every_scenario(truth, rankings: Rankings):
    """The fixture world exercises what the marts must get right; if the World changes so that a
    scenario disappears, this fails instead of the other tests passing vacuously."""
    states = {rankings.movement(r["keyword_id"], r["snapshot_date"], 1) for r in rankings.rows}
    assert {"entered", "dropped_out", "improved", "declined", "unchanged", "new"} <= states
    assert any(rankings.url_changed(r["keyword_id"], r["snapshot_date"]) for r in rankings.rows)
    assert any(rankings.movement(r["keyword_id"], r["snapshot_date"], 30) != "new" for r in rankings.rows)
    usage = truth.usage.set_index(["account", "snapshot_date"])
    for account in ("acme", "globex"):
        assert usage.loc[(account, RESET_DAY), "data_rows_usage"] < usage.loc[(account, RESET_DAY - ONE), "data_rows_usage"]
    assert usage.loc[("globex", LIMIT_CHANGE_DAY), "keywords_limit"] != usage.loc[("globex", LIMIT_CHANGE_DAY - ONE), "keywords_limit"]
    assert usage.loc[("acme", CROSSING_DAY), "data_rows_usage"] == usage.loc[("acme", CROSSING_DAY), "data_rows_limit"]
    sets = truth.competitors.groupby(["domain_id", "snapshot_date"])["competitor_id"].apply(set).to_dict()
    changes = [(sets.get((dom, d), set()), sets.get((dom, d - ONE), set())) for dom, d in sets if d > DAYS[0]]
    assert any(now - before for now, before in changes), "no competitor added in the window"
    assert any(before - now for now, before in changes), "no competitor removed in the window"
    ids = truth.keywords.groupby("snapshot_date")["keyword_id"].apply(set)
    assert any(ids[d] - ids[d - ONE] for d in DAYS[1:]) and any(ids[d - ONE] - ids[d] for d in DAYS[1:])


# ------------------------------------------------------------------------------------------ keyword marts


def test_keyword_rankings_daily_matches_world(warehouse, rankings: Rankings):
    version, ctr = ctr_curve()
    expected = []
    for r in rankings.rows:
        kid, day = r["keyword_id"], r["snapshot_date"]
        prev = rankings.previous_day(kid, day)
        row = {
            "keyword_id": kid, "snapshot_date": day, "account": r["account"], "domain_id": r["domain_id"],
            "search_engine": r["search_engine"], "device": r["device"], "location_code": r["location_code"],
            "language_code": r["language_code"], "search_volume": r["search_volume"],
            "position": rankings.position(kid, day), "ranking_url": r["ranking_url"],
            "is_ranking": rankings.position(kid, day) is not None,
            "previous_snapshot_date": prev,
            "previous_position": rankings.position(kid, prev) if prev else None,
            "url_changed": rankings.url_changed(kid, day),
            "estimated_ctr": ctr.get(rankings.position(kid, day), 0.0),
            "visibility_score": ctr.get(rankings.position(kid, day), 0.0) / ctr[1] * 100,
            "ctr_curve_version": version,
        }
        for n in (1, 7, 30):
            row[f"position_change_{n}d"] = rankings.change(kid, day, n)
            row[f"movement_{n}d"] = rankings.movement(kid, day, n)
        expected.append(row)
    actual = mart(warehouse, "marts.fct_keyword_rankings_daily", "keyword_id, snapshot_date")
    assert_matches(actual, expected, ["keyword_id", "snapshot_date"], "fct_keyword_rankings_daily")


def _best_positions(rankings: Rankings) -> dict[tuple[str, date], tuple[int | None, date | None, bool]]:
    out = {}
    for kid, days in rankings.days_of.items():
        best, best_day = None, None
        for day in days:
            p = rankings.position(kid, day)
            new_best = p is not None and (best is None or p < best)
            if new_best:
                best, best_day = p, day
            out[(kid, day)] = (best, best_day, new_best)
    return out


def test_best_position_to_date_matches_world(warehouse, rankings: Rankings):
    best = _best_positions(rankings)
    expected = [
        {"keyword_id": kid, "snapshot_date": day, "position": rankings.position(kid, day),
         "best_position_to_date": b, "best_position_first_date": bd, "is_new_best": nb}
        for (kid, day), (b, bd, nb) in best.items()
    ]
    actual = mart(warehouse, "marts.fct_keyword_best_position_daily", "keyword_id, snapshot_date")
    assert_matches(actual, expected, ["keyword_id", "snapshot_date"], "fct_keyword_best_position_daily")


def test_dim_keywords_matches_world(warehouse, rankings: Rankings):
    best = _best_positions(rankings)
    expected = []
    for kid, days in rankings.days_of.items():
        last = rankings.by_key[(kid, days[-1])]
        ranking_days = [d for d in days if rankings.position(kid, d) is not None]
        expected.append({
            "keyword_id": kid, "domain_id": last["domain_id"], "first_seen_date": days[0],
            "last_seen_date": days[-1], "is_active": days[-1] == DAYS[-1], "snapshots": len(days),
            "ranking_snapshots": len(ranking_days), "latest_position": rankings.position(kid, days[-1]),
            "latest_ranking_url": last["ranking_url"], "best_position": best[(kid, days[-1])][0],
            "best_position_first_date": best[(kid, days[-1])][1],
            "first_ranking_date": ranking_days[0] if ranking_days else None,
        })
    assert_matches(mart(warehouse, "marts.dim_keywords", "keyword_id"), expected, ["keyword_id"], "dim_keywords")


def test_url_flips_match_world(warehouse, rankings: Rankings):
    expected = []
    for kid, days in rankings.days_of.items():
        for day in days:
            window = [d for d in days if day - 29 * ONE <= d <= day]
            changes = sum(1 for d in window if rankings.url_changed(kid, d))
            if not changes:
                continue
            urls = {rankings.by_key[(kid, d)]["ranking_url"] for d in window} - {None}
            expected.append({
                "keyword_id": kid, "snapshot_date": day, "url_changes_30d": changes,
                "distinct_urls_30d": len(urls), "snapshots_30d": len(window),
                "ranking_days_30d": sum(1 for d in window if rankings.position(kid, d) is not None),
                "ranking_url": rankings.by_key[(kid, day)]["ranking_url"],
            })
    assert expected, "no keyword changed its ranking URL: the scenario is missing"
    actual = mart(warehouse, "marts.fct_ranking_url_flips", "keyword_id, snapshot_date")
    assert_matches(actual, expected, ["keyword_id", "snapshot_date"], "fct_ranking_url_flips")


# ------------------------------------------------------------------------------------------ visibility


def _visibility_rows(rows: list[dict], rankings: Rankings) -> dict:
    version, ctr = ctr_curve()
    positions = [rankings.position(r["keyword_id"], r["snapshot_date"]) for r in rows]
    ranking = [p for p in positions if p is not None]
    ctrs = [ctr.get(p, 0.0) if p is not None else 0.0 for p in positions]
    volumes = [r["search_volume"] for r in rows]
    weighted = [(c, v) for c, v in zip(ctrs, volumes, strict=True) if v is not None and not pd.isna(v)]
    total_volume = sum(v for _, v in weighted)
    out = {
        "tracked_keywords": len(rows),
        "ranking_keywords": len(ranking),
        "average_position": sum(ranking) / len(ranking) if ranking else None,
        "penalised_average_position": sum(p if p is not None else 101 for p in positions) / len(rows),
        "keywords_position_1_3": sum(1 for p in ranking if p <= 3),
        "keywords_position_4_10": sum(1 for p in ranking if 4 <= p <= 10),
        "keywords_position_11_20": sum(1 for p in ranking if 11 <= p <= 20),
        "keywords_position_21_50": sum(1 for p in ranking if 21 <= p <= 50),
        "keywords_position_51_100": sum(1 for p in ranking if 51 <= p <= 100),
        "keywords_not_ranking": len(rows) - len(ranking),
        "visibility": sum(ctrs) / (len(rows) * ctr[1]) * 100,
        "volume_weighted_visibility": (
            sum(c * v for c, v in weighted) / (total_volume * ctr[1]) * 100 if total_volume else None
        ),
        "ctr_curve_version": version,
    }
    for n in (1, 7, 30):
        states = [rankings.movement(r["keyword_id"], r["snapshot_date"], n) for r in rows]
        out[f"winners_{n}d"] = sum(1 for s in states if s in ("improved", "entered"))
        out[f"losers_{n}d"] = sum(1 for s in states if s in ("declined", "dropped_out"))
    return out


SEGMENT = ["domain_id", "search_engine", "device", "location_code", "language_code", "snapshot_date"]


def test_domain_visibility_matches_world(warehouse, truth, rankings: Rankings):
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rankings.rows:
        groups[tuple(r[c] for c in SEGMENT)].append(r)
    names = {(d["domain_id"], d["snapshot_date"]): d["domain"] for d in truth.domains.to_dict("records")}
    expected = [
        {**dict(zip(SEGMENT, key, strict=True)), "account": rows[0]["account"],
         "domain": names[(key[0], key[-1])], **_visibility_rows(rows, rankings)}
        for key, rows in groups.items()
    ]
    actual = mart(warehouse, "marts.agg_domain_segment_daily", ", ".join(SEGMENT))
    assert_matches(actual, expected, SEGMENT, "agg_domain_segment_daily")
    assert actual["visibility"].between(0, 100).all()


def test_ctr_curve_seed_is_a_usable_curve():
    """Visibility is 0..100 only if ctr is positive and never increases with position."""
    version, ctr = ctr_curve()
    assert all(ctr[p] >= ctr[p + 1] for p in range(1, 100)), "the CTR curve must not increase with position"
    assert ctr[1] <= 1 and ctr[100] > 0


def test_tag_visibility_matches_world(warehouse, truth, rankings: Rankings):
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for t in truth.keyword_tags.to_dict("records"):
        groups[(t["account"], t["tag_id"], t["snapshot_date"])].append(rankings.by_key[(t["keyword_id"], t["snapshot_date"])])
    names = {}
    for a in truth.world.accounts:
        for tag in truth.world.tags(a.account_id):
            names[tag["id"]] = tag["attributes"]["name"]
    expected = [
        {"account": acc, "tag_id": tag, "snapshot_date": day, "tag_name": names[tag], **_visibility_rows(rows, rankings)}
        for (acc, tag, day), rows in groups.items()
    ]
    assert expected, "no keyword carries a tag: the scenario is missing"
    actual = mart(warehouse, "marts.agg_tag_daily", "account, tag_id, snapshot_date")
    assert_matches(actual, expected, ["account", "tag_id", "snapshot_date"], "agg_tag_daily")


# ------------------------------------------------------------------------------------------ quota


def test_quota_flags_fire_on_the_known_days(warehouse):
    """Reset on the 1st of the month, globex's limit change, acme reaching its dataRows limit."""
    flags = warehouse.execute(
        "select account, metric, snapshot_date, is_reset, limit_changed, crossed_80_pct, crossed_100_pct "
        "from marts.fct_quota_cycle_daily"
    ).df()
    flags["snapshot_date"] = pd.to_datetime(flags["snapshot_date"]).dt.date

    def days(account, metric, flag):
        sel = flags[(flags.account == account) & (flags.metric == metric) & (flags[flag] == True)]  # noqa: E712
        return set(sel["snapshot_date"])

    assert days("acme", "dataRows", "is_reset") == {RESET_DAY}
    assert days("globex", "dataRows", "is_reset") == {RESET_DAY}
    assert days("globex", "keywords", "limit_changed") == {LIMIT_CHANGE_DAY}
    assert days("globex", "dataRows", "limit_changed") == {LIMIT_CHANGE_DAY}
    assert days("acme", "keywords", "limit_changed") == set()
    assert days("acme", "dataRows", "crossed_100_pct") == {CROSSING_DAY}
    (crossed_80,) = days("acme", "dataRows", "crossed_80_pct")
    assert crossed_80 < CROSSING_DAY
    reset_row = warehouse.execute(
        "select burn_rate_median_7d, net_change, daily_burn from marts.fct_quota_cycle_daily "
        "where account = 'acme' and metric = 'dataRows' and snapshot_date = ?", [RESET_DAY]
    ).fetchone()
    assert reset_row[1] < 0 and reset_row[0] > 0 and reset_row[2] >= 0, \
        "a reset day's negative change must not enter the burn rate"


def test_quota_burn_by_domain_matches_world(warehouse, truth):
    ids = truth.keywords.groupby(["account", "domain_id", "snapshot_date"])["keyword_id"].apply(set).to_dict()
    account_ids = truth.keywords.groupby(["account", "snapshot_date"])["keyword_id"].apply(set).to_dict()
    names = {(d["domain_id"], d["snapshot_date"]): d["domain"] for d in truth.domains.to_dict("records")}
    rows = {}
    for day in DAYS[1:]:
        for account in ("acme", "globex"):
            before, now = account_ids.get((account, day - ONE), set()), account_ids.get((account, day), set())
            domains = {dom for (acc, dom, d) in ids if acc == account and d in (day, day - ONE)}
            for dom in domains:
                cur, prev = ids.get((account, dom, day), set()), ids.get((account, dom, day - ONE), set())
                added, removed = len(cur - before), len(prev - now)
                if cur or removed:
                    rows[(account, dom, day)] = {
                        "account": account, "domain_id": dom, "snapshot_date": day, "keywords_added": added,
                        "keywords_removed": removed, "net_keywords_change": added - removed,
                        "keywords_tracked": len(cur), "domain": names.get((dom, day)),
                    }
    totals = defaultdict(int)
    for (account, _dom, day), r in rows.items():
        totals[(account, day)] += r["keywords_added"]
    for (account, _dom, day), r in rows.items():
        total = totals[(account, day)]
        r["share_of_account_added_pct"] = r["keywords_added"] * 100 / total if total else None
    actual = mart(warehouse, "marts.agg_quota_burn_by_domain", "account, domain_id, snapshot_date")
    assert_matches(actual, list(rows.values()), ["account", "domain_id", "snapshot_date"], "agg_quota_burn_by_domain")


def test_domain_keyword_changes_add_up_to_the_keyword_usage_delta(warehouse):
    """In the World, keywords.usage counts existing keywords, so the domains' net changes must sum to
    the account's keywords net_change: the attribution explains the whole burn."""
    mismatches = warehouse.execute("""
        select q.account, q.snapshot_date, q.net_change, sum(b.net_keywords_change) as net
        from marts.fct_quota_cycle_daily as q
        join marts.agg_quota_burn_by_domain as b on b.account = q.account and b.snapshot_date = q.snapshot_date
        where q.metric = 'keywords'
        group by all
        having sum(b.net_keywords_change) <> q.net_change
    """).fetchall()
    assert mismatches == []
    (days,) = warehouse.execute("select count(distinct snapshot_date) from marts.agg_quota_burn_by_domain").fetchone()
    assert days == len(DAYS) - 1


# ------------------------------------------------------------------------------------------ competitors and domains


def test_competitors_daily_matches_world(warehouse, truth):
    sets = defaultdict(dict)
    for c in truth.competitors.to_dict("records"):
        sets[(c["domain_id"], c["snapshot_date"])][c["competitor_id"]] = c
    listed = {(d["domain_id"], d["snapshot_date"]): d["account"] for d in truth.domains.to_dict("records")}
    expected = []
    for (dom, day), account in listed.items():
        now, before = sets.get((dom, day), {}), sets.get((dom, day - ONE), {})
        for cid, c in now.items():
            event = "retained" if cid in before else "added" if (dom, day - ONE) in listed else "new"
            expected.append({"domain_id": dom, "competitor_id": cid, "snapshot_date": day, "account": account,
                             "competitor_domain": c["competitor_domain"], "is_active": True, "competitor_event": event})
        for cid in before.keys() - now.keys():
            expected.append({"domain_id": dom, "competitor_id": cid, "snapshot_date": day, "account": account,
                             "competitor_domain": before[cid]["competitor_domain"], "is_active": False,
                             "competitor_event": "removed"})
    assert {"added", "removed", "retained", "new"} <= {r["competitor_event"] for r in expected}
    actual = mart(warehouse, "marts.fct_competitors_daily", "domain_id, competitor_id, snapshot_date")
    assert_matches(actual, expected, ["domain_id", "competitor_id", "snapshot_date"], "fct_competitors_daily")


def test_dim_competitors_matches_world(warehouse, truth):
    expected = []
    for (dom, cid), g in truth.competitors.groupby(["domain_id", "competitor_id"]):
        days = sorted(g["snapshot_date"])
        expected.append({"domain_id": dom, "competitor_id": cid, "first_seen_date": days[0],
                         "last_seen_date": days[-1], "days_listed": len(days), "is_active": days[-1] == DAYS[-1],
                         "competitor_domain": g.sort_values("snapshot_date")["competitor_domain"].iloc[-1]})
    actual = mart(warehouse, "marts.dim_competitors", "domain_id, competitor_id")
    assert_matches(actual, expected, ["domain_id", "competitor_id"], "dim_competitors")


def test_dim_domains_matches_world(warehouse, truth):
    last = truth.keywords[truth.keywords.snapshot_date == DAYS[-1]].groupby("domain_id").size().to_dict()
    expected = [
        {"domain_id": dom, "account": g["account"].iloc[0], "domain": g["domain"].iloc[-1],
         "first_seen_date": min(g["snapshot_date"]), "last_seen_date": max(g["snapshot_date"]),
         "is_active": max(g["snapshot_date"]) == DAYS[-1], "tracked_keywords": last.get(dom, 0)}
        for dom, g in truth.domains.groupby("domain_id")
    ]
    assert_matches(mart(warehouse, "marts.dim_domains", "domain_id"), expected, ["domain_id"], "dim_domains")


# ------------------------------------------------------------------------------------------ incremental = full

MARTS = {
    "marts.fct_keyword_rankings_daily": "keyword_id, snapshot_date",
    "marts.agg_domain_segment_daily": ", ".join(SEGMENT),
    "marts.agg_tag_daily": "account, tag_id, snapshot_date",
    "marts.fct_ranking_url_flips": "keyword_id, snapshot_date",
    "marts.int_keyword_rankings_rollup_daily":
        "grouping_level, group_id, search_engine, device, location_code, language_code, snapshot_date",
    "marts.agg_quota_burn_by_domain": "account, domain_id, snapshot_date",
    "marts.fct_competitors_daily": "domain_id, competitor_id, snapshot_date",
    "marts.fct_keyword_best_position_daily": "keyword_id, snapshot_date",
    "marts.dim_keywords": "keyword_id",
    "marts.dim_domains": "domain_id",
    "marts.dim_competitors": "domain_id, competitor_id",
    "marts.agg_domain_daily": "domain_id, snapshot_date",
    "marts.agg_ranking_url_daily": "domain_id, ranking_url, snapshot_date",
    "marts.fct_account_snapshot_coverage_daily": "account, snapshot_date",
    "marts.agg_account_keyword_changes_daily": "account, snapshot_date",
    "marts.fct_quota_cycle_daily": "account, snapshot_date, metric",
    "marts.fct_quota_forecast_accuracy": "account, metric, snapshot_date",
}


@pytest.mark.parametrize("name", sorted(MARTS))
def test_incremental_build_equals_full_rebuild(warehouse, incremental_warehouse, name):
    """The last days built one partition at a time give exactly the full rebuild's rows."""
    full = mart(warehouse, name, MARTS[name])
    incremental = mart(incremental_warehouse, name, MARTS[name])
    assert len(full) > 0
    assert list(incremental.columns) == list(full.columns)
    keys = [k.strip() for k in MARTS[name].split(",")]
    assert_matches(incremental, full.to_dict("records"), keys, f"{name} incremental vs full")
