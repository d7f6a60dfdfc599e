"""The analytics marts against independent computations from the sandbox World.

Two histories (conftest.py): the 35 contiguous days of ``warehouse`` and the *gapped* history (missed
days including the 1st of a month, a bulk import, deletions, a limit change). The expected values are
computed here in plain Python from the World's ground truth (``Truth``), following the definitions in
each model's .yml (the movement rules, the seeds' thresholds read from the CSV files), never from the
SQL or the warehouse. Each test compares whole relations: row sets and values.
"""

from __future__ import annotations

import bisect
import csv
import functools
import math
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path

import pandas as pd
import pytest
import quota_truth
from marts_compare import assert_matches, mart, movement

from rank_pipeline.transform import DuckDBEngine, load_project, run_tests

pytestmark = pytest.mark.xdist_group(name="sql_models_world")

ONE = timedelta(days=1)
SQL_DIR = Path(__file__).resolve().parents[2] / "dbt_like_sql"
HORIZONS = {"1d": 1, "7d": 7, "30d": 30, "previous": None}


@functools.cache
def ctr() -> tuple[int, dict[int, float]]:
    with open(SQL_DIR / "seeds" / "ctr_curve.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    version = max(int(r["curve_version"]) for r in rows)
    return version, {int(r["position"]): float(r["ctr"]) for r in rows if int(r["curve_version"]) == version}


@functools.cache
def rules() -> tuple[int, int]:
    """(significant_move_positions, not_ranking_position) from the seed CSV."""
    with open(SQL_DIR / "seeds" / "movement_rules.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    return int(row["significant_move_positions"]), int(row["not_ranking_position"])


def bucket(p) -> str:
    if p is None:
        return "not_ranking"
    return "1-3" if p <= 3 else "4-10" if p <= 10 else "11-20" if p <= 20 else "21-50" if p <= 50 else "51-100"


class History:
    """One history's ground truth, with every keyword-day's expected fct_keyword_rankings_daily row."""

    def __init__(self, truth, days):
        self.truth, self.days = truth, sorted(days)
        rows = truth.keywords.to_dict("records")
        for r in rows:
            r["ranking_url"] = None if pd.isna(r["ranking_url"]) else r["ranking_url"]
            r["position"] = None if pd.isna(r["position"]) else int(r["position"])
            r["search_volume"] = None if pd.isna(r["search_volume"]) else int(r["search_volume"])
        self.by_key = {(r["keyword_id"], r["snapshot_date"]): r for r in rows}
        self.days_of: dict[str, list[date]] = defaultdict(list)
        for r in sorted(rows, key=lambda r: r["snapshot_date"]):
            self.days_of[r["keyword_id"]].append(r["snapshot_date"])
        self.keyword_rows = [self._keyword_row(r) for r in rows]
        self.fact = {(r["keyword_id"], r["snapshot_date"]): r for r in self.keyword_rows}

    def previous(self, kid: str, day: date) -> date | None:
        days = self.days_of[kid]
        i = bisect.bisect_left(days, day)
        return days[i - 1] if i > 0 and days[i - 1] >= day - 31 * ONE else None

    def _keyword_row(self, r: dict) -> dict:
        threshold, penalty = rules()
        version, curve = ctr()
        kid, day, now = r["keyword_id"], r["snapshot_date"], r["position"]
        prev = self.previous(kid, day)
        out = {
            "keyword_id": kid, "snapshot_date": day, "account": r["account"], "domain_id": r["domain_id"],
            "search_engine": r["search_engine"], "device": r["device"], "location_code": r["location_code"],
            "language_code": r["language_code"], "search_volume": r["search_volume"], "position": now,
            "ranking_url": r["ranking_url"], "penalised_position": penalty if now is None else now,
            "position_bucket": bucket(now), "previous_snapshot_date": prev,
            "days_since_previous": (day - prev).days if prev else None,
            "previous_ranking_url": self.by_key[(kid, prev)]["ranking_url"] if prev else None,
            "estimated_ctr": curve.get(now, 0.0) if now is not None else 0.0,
            "visibility_score": (curve.get(now, 0.0) if now is not None else 0.0) / curve[1] * 100,
            "estimated_clicks": (
                (curve.get(now, 0.0) if now is not None else 0.0) * r["search_volume"]
                if r["search_volume"] is not None else None
            ),
        }
        for h, n in HORIZONS.items():
            then_day = prev if n is None else day - n * ONE
            comparable = then_day is not None and (kid, then_day) in self.by_key
            then = self.by_key[(kid, then_day)]["position"] if comparable else None
            pc = ((penalty if then is None else then) - (penalty if now is None else now)) if comparable else None
            mv = movement(now, then, comparable)
            out[f"movement_{h}"] = mv
            out[f"position_change_{h}"] = then - now if then is not None and now is not None else None
            out[f"is_winner_{h}"] = mv in ("improved", "entered")
            out[f"is_loser_{h}"] = mv in ("declined", "dropped_out")
            out[f"is_significant_winner_{h}"] = comparable and pc >= threshold
            out[f"is_significant_loser_{h}"] = comparable and pc <= -threshold
            if h == "previous":
                for top in (3, 10):
                    now_in = now is not None and now <= top
                    then_in = then is not None and then <= top
                    out[f"entered_top_{top}"] = (now_in and not then_in) if comparable else None
                    out[f"exited_top_{top}"] = (then_in and not now_in) if comparable else None
        return out


def group_metrics(rows: list[dict]) -> dict:
    """Every aggregate column of agg_domain_segment_daily / agg_domain_daily / agg_tag_daily."""
    version, curve = ctr()
    ranking = [r["position"] for r in rows if r["position"] is not None]
    volumes = [(r["visibility_score"], r["search_volume"]) for r in rows if r["search_volume"] is not None]
    clicks = [r["estimated_clicks"] for r in rows if r["estimated_clicks"] is not None]
    changes = [abs(r["position_change_1d"]) for r in rows if r["position_change_1d"] is not None]
    out = {
        "tracked_keywords": len(rows), "ranking_keywords": len(ranking),
        "average_position": sum(ranking) / len(ranking) if ranking else None,
        "penalised_average_position": sum(r["penalised_position"] for r in rows) / len(rows),
        "keywords_position_1_3": sum(1 for p in ranking if p <= 3),
        "keywords_position_4_10": sum(1 for p in ranking if 4 <= p <= 10),
        "keywords_position_11_20": sum(1 for p in ranking if 11 <= p <= 20),
        "keywords_position_21_50": sum(1 for p in ranking if 21 <= p <= 50),
        "keywords_position_51_100": sum(1 for p in ranking if 51 <= p),
        "keywords_not_ranking": len(rows) - len(ranking),
        "visibility": sum(r["visibility_score"] for r in rows) / len(rows),
        "volume_weighted_visibility": (
            sum(v * w for v, w in volumes) / sum(w for _, w in volumes) if sum(w for _, w in volumes) else None
        ),
        "estimated_clicks": sum(clicks) if clicks else None,
        "ctr_curve_version": version,
        "entered_top_3": sum(1 for r in rows if r["entered_top_3"]),
        "exited_top_3": sum(1 for r in rows if r["exited_top_3"]),
        "entered_top_10": sum(1 for r in rows if r["entered_top_10"]),
        "exited_top_10": sum(1 for r in rows if r["exited_top_10"]),
        "volatility_1d": sum(changes) / len(changes) if changes else None,
    }
    for h in HORIZONS:
        out[f"comparable_keywords_{h}"] = sum(1 for r in rows if r[f"movement_{h}"] != "new")
        out[f"winners_{h}"] = sum(1 for r in rows if r[f"is_winner_{h}"])
        out[f"losers_{h}"] = sum(1 for r in rows if r[f"is_loser_{h}"])
        out[f"significant_winners_{h}"] = sum(1 for r in rows if r[f"is_significant_winner_{h}"])
        out[f"significant_losers_{h}"] = sum(1 for r in rows if r[f"is_significant_loser_{h}"])
    return out


# ------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def contiguous(warehouse, truth, scenario):
    return warehouse, History(truth, scenario.days)


@pytest.fixture(scope="module")
def gapped_history(gapped):
    return gapped.full, History(gapped.truth, gapped.days)


@pytest.fixture(params=["contiguous", pytest.param("gapped", marks=pytest.mark.slow)])  # gapped: see conftest
def case(request):
    """(warehouse, History) of each history."""
    return request.getfixturevalue("contiguous" if request.param == "contiguous" else "gapped_history")


# ------------------------------------------------------------------------------------------ scenarios


def test_gapped_history_holds_every_scenario(gapped, gapped_history):
    """Missed days (one the 1st of the month), a bulk import, deletions, a limit change, URL changes:
    if the World changes so that one disappears, this fails instead of the others passing vacuously."""
    _, h = gapped_history
    assert date(2026, 2, 1) in gapped.missing and date(2026, 2, 2) in gapped.days
    ids = h.truth.keywords.groupby("snapshot_date")["keyword_id"].apply(set)
    day = gapped.bulk_import_day
    assert len(ids[day] - ids[day - ONE]) >= gapped.bulk_import_size
    assert len(ids[gapped.deletion_day - ONE] - ids[gapped.deletion_day]) >= 12
    usage = h.truth.usage.set_index(["account", "snapshot_date"])
    lc = gapped.limit_change_day
    assert usage.loc[("globex", lc), "keywords_limit"] != usage.loc[("globex", lc - ONE), "keywords_limit"]
    assert any(r["url_changed"] for r in _url_changes(h))
    assert any(d - ONE in gapped.missing for d in gapped.incremental_days), "no partition built after a gap"


def _url_changes(h: History):
    for r in h.keyword_rows:
        prev_url, url = r["previous_ranking_url"], r["ranking_url"]
        yield {"url_changed": prev_url is not None and url is not None and prev_url != url}


# ------------------------------------------------------------------------------------------ keyword fact


KEYWORD_COLUMNS = [
    "penalised_position", "position_bucket", "previous_snapshot_date", "days_since_previous",
    "estimated_clicks", "entered_top_3", "exited_top_3", "entered_top_10", "exited_top_10",
    *[f"{c}_{h}" for h in HORIZONS for c in (
        "movement", "position_change", "is_winner", "is_loser", "is_significant_winner", "is_significant_loser")],
]


def test_keyword_fact_comparisons_match_world(case):
    con, h = case
    expected = [{k: r[k] for k in ["keyword_id", "snapshot_date", *KEYWORD_COLUMNS]} for r in h.keyword_rows]
    assert_matches(mart(con, "marts.fct_keyword_rankings_daily"), expected, ["keyword_id", "snapshot_date"],
                   "fct_keyword_rankings_daily")


# ------------------------------------------------------------------------------------------ aggregates


SEGMENT = ["domain_id", "search_engine", "device", "location_code", "language_code", "snapshot_date"]


def test_domain_segment_daily_matches_world(case):
    con, h = case
    groups = defaultdict(list)
    for r in h.keyword_rows:
        groups[tuple(r[c] for c in SEGMENT)].append(r)
    expected = [{**dict(zip(SEGMENT, k, strict=True)), **group_metrics(rows)} for k, rows in groups.items()]
    assert_matches(mart(con, "marts.agg_domain_segment_daily"), expected, SEGMENT, "agg_domain_segment_daily")


def test_domain_daily_matches_world(case):
    con, h = case
    groups = defaultdict(list)
    for r in h.keyword_rows:
        groups[(r["domain_id"], r["snapshot_date"])].append(r)
    names = {(d["domain_id"], d["snapshot_date"]): d["domain"] for d in h.truth.domains.to_dict("records")}
    expected = []
    for (dom, day), rows in groups.items():
        window = [abs(r["position_change_1d"]) for d in (day - i * ONE for i in range(7))
                  for r in groups.get((dom, d), []) if r["position_change_1d"] is not None]
        expected.append({"domain_id": dom, "snapshot_date": day, "account": rows[0]["account"],
                         "domain": names.get((dom, day)), **group_metrics(rows),
                         "volatility_7d": sum(window) / len(window) if window else None})
    assert_matches(mart(con, "marts.agg_domain_daily"), expected, ["domain_id", "snapshot_date"], "agg_domain_daily")


def test_tag_daily_matches_world(case):
    con, h = case
    groups = defaultdict(list)
    for t in h.truth.keyword_tags.to_dict("records"):
        groups[(t["account"], t["tag_id"], t["snapshot_date"])].append(h.fact[(t["keyword_id"], t["snapshot_date"])])
    expected = [{"account": a, "tag_id": t, "snapshot_date": d, **group_metrics(rows)}
                for (a, t, d), rows in groups.items()]
    assert_matches(mart(con, "marts.agg_tag_daily"), expected, ["account", "tag_id", "snapshot_date"], "agg_tag_daily")


def test_day_after_a_gap_is_compared_with_the_previous_snapshot(gapped, gapped_history):
    """The issue's measured defect: the day after missed days showed 0 winners and 0 losers. Now the
    calendar horizon says nothing was comparable, and the previous-snapshot horizon has the movement."""
    con, _ = gapped_history
    after_gap = date(2026, 1, 23)  # 01-20 .. 01-22 were not extracted
    assert after_gap - ONE in gapped.missing
    row = con.execute(
        "select sum(tracked_keywords), sum(comparable_keywords_1d), sum(winners_1d + losers_1d), "
        "sum(comparable_keywords_previous), sum(winners_previous + losers_previous), "
        "sum(significant_winners_previous + significant_losers_previous) "
        "from marts.agg_domain_daily where snapshot_date = ?", [after_gap]).fetchone()
    tracked, comparable_1d, moved_1d, comparable_prev, moved_prev, significant_prev = row
    assert comparable_1d == 0 and moved_1d == 0
    assert comparable_prev > 0.9 * tracked and moved_prev > 0
    assert 0 < significant_prev < moved_prev


def test_significant_movers_leave_out_jitter(contiguous):
    """About a third of keywords moved every day by one position or two; significant movers are fewer."""
    con, _ = contiguous
    any_move, significant = con.execute(
        "select sum(winners_1d + losers_1d), sum(significant_winners_1d + significant_losers_1d) "
        "from marts.agg_domain_daily").fetchone()
    assert 0 < significant < any_move / 2


# ------------------------------------------------------------------------------------------ landing pages


def test_ranking_url_daily_matches_world(case):
    con, h = case
    cur, lost = defaultdict(list), defaultdict(int)
    for r in h.keyword_rows:
        if r["ranking_url"] is not None:
            cur[(r["domain_id"], r["ranking_url"], r["snapshot_date"])].append(r)
        prev_url = r["previous_ranking_url"]
        if prev_url is not None and prev_url != r["ranking_url"]:
            lost[(r["domain_id"], prev_url, r["snapshot_date"])] += 1
    expected = []
    for key in cur.keys() | lost.keys():
        rows = cur.get(key, [])
        positions = [r["position"] for r in rows]
        clicks = [r["estimated_clicks"] for r in rows if r["estimated_clicks"] is not None]
        expected.append({
            "domain_id": key[0], "ranking_url": key[1], "snapshot_date": key[2],
            "ranking_keywords": len(rows),
            "average_position": sum(positions) / len(positions) if positions else None,
            "best_position": min(positions) if positions else None,
            "estimated_clicks": sum(clicks) if clicks else 0.0,
            "keywords_gained": sum(1 for r in rows if r["previous_snapshot_date"] is not None
                                   and r["previous_ranking_url"] != r["ranking_url"]),
            "keywords_lost": lost.get(key, 0),
        })
    assert any(r["keywords_gained"] for r in expected) and any(r["keywords_lost"] for r in expected)
    assert_matches(mart(con, "marts.agg_ranking_url_daily"), expected, ["domain_id", "ranking_url", "snapshot_date"],
                   "agg_ranking_url_daily")


# ------------------------------------------------------------------------------------------ coverage


def _account_days(h: History) -> dict[str, list[date]]:
    return {a: sorted(g["snapshot_date"]) for a, g in h.truth.usage.groupby("account")}


def test_snapshot_coverage_matches_world(case):
    con, h = case
    world = h.truth.world
    ids = {a.name: a.account_id for a in world.accounts}
    last = max(h.days)
    doms = h.truth.domains.groupby(["account", "snapshot_date"])["domain_id"].apply(set).to_dict()
    kws = h.truth.keywords.groupby(["account", "snapshot_date"])
    kw_rows, kw_domains = kws.size().to_dict(), kws["domain_id"].apply(set).to_dict()
    comps = h.truth.competitors.groupby(["account", "snapshot_date"]).size().to_dict()
    expected = []
    for account, days in _account_days(h).items():
        kept, day, prev = set(days), days[0], None
        while day <= last:
            has = day in kept
            listed = doms.get((account, day), set())
            expected.append({
                "account": account, "snapshot_date": day, "has_snapshot": has,
                "is_complete": has and bool(listed) and kw_domains.get((account, day), set()) == listed,
                "domains_listed": len(listed), "domains_with_keywords": len(kw_domains.get((account, day), set())),
                "keyword_rows": kw_rows.get((account, day), 0), "competitor_rows": comps.get((account, day), 0),
                "tag_rows": len(world.tags(ids[account], day)) if has else 0,
                "previous_snapshot_date": prev, "days_since_previous_snapshot": (day - prev).days if prev else None,
                "previous_day_missing": has and day > days[0] and day - ONE not in kept,
            })
            prev = day if has else prev
            day += ONE
    assert_matches(mart(con, "marts.fct_account_snapshot_coverage_daily"), expected, ["account", "snapshot_date"],
                   "fct_account_snapshot_coverage_daily")


def test_coverage_asset_check_warns_after_a_missed_day(gapped):
    """The warn-severity test is the asset check: for a partition whose previous day is missing it fails
    (non-blocking) and names the day; for a partition after an extracted day it passes."""
    model = load_project(SQL_DIR).models["fct_account_snapshot_coverage_daily"]

    def check(day):
        (result,) = [r for r in run_tests(DuckDBEngine(gapped.full), model, day) if r.name == "previous_day_snapshot_present"]
        return result

    after_gap, ordinary = date(2026, 2, 2), date(2026, 2, 3)
    assert after_gap - ONE in gapped.missing and ordinary - ONE not in gapped.missing
    warned = check(after_gap)
    assert not warned.passed and not warned.blocking and warned.failures == 2  # acme and globex
    assert {str(r["snapshot_date"]) for r in warned.sample_rows} == {"2026-02-02"}
    assert check(ordinary).passed


# ------------------------------------------------------------------------------------------ quota


def _keyword_changes(h: History) -> list[dict]:
    return quota_truth.keyword_changes(h.truth)


def test_account_keyword_changes_match_world(case):
    con, h = case
    assert_matches(mart(con, "marts.agg_account_keyword_changes_daily"), _keyword_changes(h),
                   ["account", "snapshot_date"], "agg_account_keyword_changes_daily")


def _expected_cycles(h: History) -> list[dict]:
    """fct_quota_cycle_daily as its yml defines it, from World.usage and the keyword id sets (quota_truth)."""
    return quota_truth.expected_cycles(h.truth)


def test_quota_cycle_matches_world(case):
    con, h = case
    assert_matches(mart(con, "marts.fct_quota_cycle_daily"), _expected_cycles(h),
                   ["account", "snapshot_date", "metric"], "fct_quota_cycle_daily")


def test_quota_forecast_accuracy_matches_world(case):
    """Every forecast of a cycle that ended in the history, scored against what happened (quota_truth)."""
    con, h = case
    expected = quota_truth.expected_forecast_accuracy(_expected_cycles(h))
    assert_matches(mart(con, "marts.fct_quota_forecast_accuracy"), expected, ["account", "metric", "snapshot_date"],
                   "fct_quota_forecast_accuracy")


def test_quota_cycle_knows_the_reset_and_the_import(gapped, gapped_history):
    """The measured defects: projections past the reset, an import day dominating the rate, a shrinking
    stock projected to run out."""
    con, _ = gapped_history
    q = mart(con, "marts.fct_quota_cycle_daily")
    rows = q[q.metric == "dataRows"]
    # the 1st of February was not extracted: the reset is seen on the 2nd, and the cycle still starts on the 1st
    feb = rows[rows.snapshot_date >= date(2026, 2, 2)]
    assert set(feb.cycle_start) == {date(2026, 2, 1)} and set(feb.cycle_end) == {date(2026, 2, 28)}
    assert set(rows[rows.is_reset].snapshot_date) == {date(2026, 2, 2)}
    # no dataRows projection lands after its cycle's end (the old burn projected into later months)
    ex = rows.dropna(subset=["projected_exhaustion_date"])
    assert (ex.projected_exhaustion_date <= ex.cycle_end).all()
    # the import day: the mean rate jumps, the median (used for projections) does not
    kw = q[(q.metric == "keywords") & (q.account == "acme")].set_index("snapshot_date")
    day = gapped.bulk_import_day
    assert kw.loc[day, "keywords_added"] >= gapped.bulk_import_size
    assert kw.loc[day, "burn_rate_mean_7d"] > 10 * max(kw.loc[day, "burn_rate_median_7d"], 1)
    after = kw.loc[day + ONE]
    by_mean = day + ONE + math.ceil(after["remaining"] / after["burn_rate_mean_7d"]) * ONE
    assert by_mean < day + 60 * ONE  # what a mean rate would project
    assert pd.isna(after["projected_exhaustion_date"]) or after["projected_exhaustion_date"] > day + 365 * ONE
    # a shrinking stock is never projected to run out
    shrinking = q[(q.metric == "keywords") & (q.burn_rate_median_7d < 0)]
    assert len(shrinking) and shrinking.projected_exhaustion_date.isna().all()
    assert kw.loc[gapped.deletion_day, "keywords_removed"] >= 12
    # keywords never reset: a stock has no cycle
    assert set(q[q.metric == "keywords"].reset_cadence) == {"none"}


# ------------------------------------------------------------------------------------------ incremental = full


NEW_MODELS = {
    "marts.fct_keyword_rankings_daily": ["keyword_id", "snapshot_date"],
    "marts.agg_domain_segment_daily": SEGMENT,
    "marts.agg_domain_daily": ["domain_id", "snapshot_date"],
    "marts.agg_tag_daily": ["account", "tag_id", "snapshot_date"],
    "marts.agg_ranking_url_daily": ["domain_id", "ranking_url", "snapshot_date"],
    "marts.fct_account_snapshot_coverage_daily": ["account", "snapshot_date"],
    "marts.agg_account_keyword_changes_daily": ["account", "snapshot_date"],
    "marts.fct_quota_cycle_daily": ["account", "snapshot_date", "metric"],
    "marts.fct_quota_forecast_accuracy": ["account", "metric", "snapshot_date"],
    "marts.int_keyword_rankings_rollup_daily": ["grouping_level", "group_id", "search_engine", "device",
                                               "location_code", "language_code", "snapshot_date"],
    "marts.fct_ranking_url_flips": ["keyword_id", "snapshot_date"],
}


@pytest.mark.parametrize("name", sorted(NEW_MODELS))
def test_gapped_incremental_build_equals_full_rebuild(gapped, name):
    """The gapped history's last days built one partition at a time (one right after a missed day)
    give exactly the full rebuild's rows."""
    full, incremental = mart(gapped.full, name), mart(gapped.incremental, name)
    assert len(full) > 0 and list(incremental.columns) == list(full.columns)
    assert_matches(incremental, full.to_dict("records"), NEW_MODELS[name], f"{name} incremental vs full")
