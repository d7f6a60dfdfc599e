"""The quota marts on the edge histories of tests/transform/quota_edges.py (irregular cycles, an overdue reset,
a change of cadence, a limit raised mid-cycle, a mass deletion of keywords, a reset never seen).

Ground truth: the World's reset schedule and usage. The marts equal the independent re-computation of
``quota_truth``; the inferred cadence equals the World's schedule wherever two resets were seen; the
invariants hold through ``rank-pipeline test --data`` as a subprocess, and the mart as it was (an overdue
cycle's end left in the past) fails them, blocking.
"""

from __future__ import annotations

import re
import shutil
import statistics
from datetime import date
from pathlib import Path

import duckdb
import pandas as pd
import pytest
import quota_edges as edges
import quota_truth
from marts_compare import assert_matches, mart
from support import rank_pipeline

from rank_pipeline.transform import DuckDBEngine, load_project, run_tests
from rank_pipeline.transform.materialize import build_all

pytestmark = pytest.mark.xdist_group(name="sql_models_world")

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "dbt_like_sql"
KEYS = ["account", "snapshot_date", "metric"]
INVARIANTS = {"cycle_end_on_or_after_the_day", "days_left_at_least_0", "projected_usage_at_least_usage",
              "exhaustion_on_or_after_the_day", "exhaustion_within_the_cycle",
              "crossed_80_pct_agrees_with_utilisation", "crossed_100_pct_agrees_with_utilisation",
              "out_of_quota_runs_out_before_reset", "runs_out_agrees_with_the_projection",
              "overdue_has_days_overdue_and_no_cycle_end"}


@pytest.fixture(scope="module")
def cycles(quota_edges) -> pd.DataFrame:
    with duckdb.connect(str(quota_edges.published), read_only=True) as con:
        return mart(con, "marts.fct_quota_cycle_daily")


def test_the_edge_world_holds_every_edge(quota_edges):
    """If the World changes so that an edge disappears, this fails instead of the others passing vacuously."""
    usage = quota_edges.truth.usage.set_index(["account", "snapshot_date"])
    resets = edges.world_resets(quota_edges.world, "irregular")
    seen = [r for r in resets if edges.FIRST_DAY < r <= edges.LAST_DAY]
    assert [(b - a).days for a, b in zip(seen, seen[1:], strict=False)] == [13, 16, 15]
    assert not [r for r in edges.world_resets(quota_edges.world, "neverseen") if edges.FIRST_DAY < r <= edges.LAST_DAY]
    raised = usage.loc["raised"]
    assert raised.loc[edges.RUN_OUT_DAY, "data_rows_remaining"] == 0
    assert raised.loc[edges.RAISE_DAY, "data_rows_limit"] == 10 * raised.loc[edges.RAISE_DAY - edges.ONE, "data_rows_limit"]
    cleanup = usage.loc["cleanup"]
    assert cleanup.loc[edges.CLEANUP_DAY, "keywords_usage"] < 0.5 * cleanup.loc[edges.CLEANUP_DAY - edges.ONE, "keywords_usage"]
    assert usage.loc[("neverseen", edges.LAST_DAY), "data_rows_remaining"] == 0


def test_quota_cycle_matches_world_on_the_edge_histories(quota_edges, cycles):
    assert_matches(cycles, quota_truth.expected_cycles(quota_edges.truth), KEYS, "fct_quota_cycle_daily (edges)")


def test_the_inferred_cadence_is_the_worlds_schedule(quota_edges, cycles):
    """Resets on the World's reset days only; the cycle's start is the World's wherever a reset was seen;
    where two were seen, the mean and spread of the cycles the row counts are the World's own cycle lengths
    and the label is their mean; the overdue days are those worked out from the schedule."""
    rows = cycles[cycles.metric == "dataRows"]
    for account, series in rows.groupby("account"):
        account_id = quota_edges.world.account(account).account_id
        schedule = edges.world_resets(quota_edges.world, account)
        first = series.snapshot_date.min()
        assert set(series[series.is_reset].snapshot_date) == {r for r in schedule if first < r <= edges.LAST_DAY}, account
        for r in series.to_dict("records"):
            day = r["snapshot_date"]
            if r["cadence_evidence"] != "no_reset":
                assert r["cycle_start"] == quota_edges.world.data_row_cycle_start(account_id, day), (account, day)
            if r["cycles_observed"] >= 1:
                i = schedule.index(r["cycle_start"])
                starts = schedule[i - r["cycles_observed"]:i + 1]
                lengths = [(b - a).days for a, b in zip(starts, starts[1:], strict=False)]
                assert r["cycle_length_days"] == pytest.approx(statistics.mean(lengths)), (account, day)
                assert r["cycle_length_spread_days"] == max(lengths) - min(lengths), (account, day)
                n = quota_truth.round_half_up(statistics.mean(lengths))
                assert r["reset_cadence"] == ("monthly" if 28 <= statistics.mean(lengths) <= 31 else f"every_{n}_days")
        assert set(series[series.is_overdue].snapshot_date) == edges.OVERDUE_DAYS[account], account
    # the reading: after 13 and 16 days, a mean of 14.5 and a spread of 3, from two cycles
    irregular = rows[rows.account == "irregular"].set_index("snapshot_date")
    on = irregular.loc[date(2026, 3, 30)]
    assert (on.cycles_observed, on.cycle_length_days, on.cycle_length_spread_days) == (2, 14.5, 3)
    assert irregular.loc[date(2026, 3, 14), "cadence_evidence"] == "seen_once"
    changed = rows[rows.account == "changed"].set_index("snapshot_date").loc[date(2026, 4, 21)]
    assert (changed.reset_cadence, changed.cadence_evidence, changed.cadence_changed_on) == \
        ("every_21_days", "seen_once", date(2026, 4, 21))
    assert set(cycles[cycles.metric == "keywords"].reset_cadence) == {"none"}
    assert not cycles[(cycles.account == "cleanup") & (cycles.metric == "keywords")].is_reset.any()


def test_overdue_and_raised_limits_read_as_the_world_says(cycles):
    """Overdue: no end, no negative days left, no projection below usage; out of quota while overdue runs out;
    a limit raised mid-cycle is named and used from that day."""
    flow = cycles[cycles.metric == "dataRows"]
    overdue = flow[flow.is_overdue]
    assert len(overdue) and overdue.cycle_end.isna().all() and overdue.cycle_days_left.isna().all()
    assert (overdue.days_overdue > 0).all() and overdue.projected_usage_at_cycle_end.isna().all()
    out = flow[(flow.account == "neverseen") & (flow.remaining <= 0)]
    assert len(out) and out.runs_out_before_reset.all() and (out.projected_exhaustion_date == out.snapshot_date).all()
    raised = flow[flow.account == "raised"].set_index("snapshot_date")
    assert raised.loc[edges.RUN_OUT_DAY, "runs_out_before_reset"] and raised.loc[edges.RUN_OUT_DAY, "crossed_100_pct"]
    assert not raised.loc[edges.RAISE_DAY, "runs_out_before_reset"]
    april = date(2026, 4, 1)
    assert set(raised.loc[edges.RAISE_DAY:april - edges.ONE, "limit_changed_on"]) == {edges.RAISE_DAY}
    assert raised.loc[april:, "limit_changed_on"].isna().all()  # a new cycle: the change was in the last one


def test_the_invariants_hold_through_the_command_line(quota_edges):
    done = rank_pipeline("test", "--data", "--verbose", "--select", "fct_quota_cycle_daily", "agg_quota_burn_by_domain",
                         data_dir=quota_edges.data_dir, cwd=quota_edges.data_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    passed = set(re.findall(r"^PASS data test marts\.fct_quota_cycle_daily\.(\w+)$", done.stdout, re.M))
    assert INVARIANTS <= passed, INVARIANTS - passed
    assert re.search(r"^PASS data test marts\.agg_quota_burn_by_domain\.", done.stdout, re.M)
    assert re.search(r"Completed: data tests \d+ passed / 0 failed", done.stdout), done.stdout


def test_the_mart_as_it_was_fails_the_invariants_blocking(quota_edges, tmp_path):
    """An overdue cycle's end left in the past (the mart before issue 48) fails the invariants on the edge
    histories, each a blocking test (nothing is published), and the unit test on the issue's rows."""
    models = tmp_path / "models"
    shutil.copytree(MODELS, models)
    sql = models / "marts" / "fct_quota_cycle_daily.sql"
    text = sql.read_text()
    old = text.replace("case when expected_cycle_end >= snapshot_date then expected_cycle_end end as cycle_end",
                       "expected_cycle_end as cycle_end")
    assert old != text
    sql.write_text(old)
    copy = tmp_path / "warehouse.duckdb"
    shutil.copy(quota_edges.published, copy)
    project = load_project(models)
    with duckdb.connect(str(copy)) as con:
        build_all(DuckDBEngine(con), project, None, full_refresh=True)
        results = run_tests(DuckDBEngine(con), project.models["fct_quota_cycle_daily"])
    failed = {r.name: r for r in results if not r.passed}
    for name in ("cycle_end_on_or_after_the_day", "days_left_at_least_0", "projected_usage_at_least_usage",
                 "overdue_has_days_overdue_and_no_cycle_end"):
        assert name in failed and failed[name].blocking, (name, sorted(failed))
    done = rank_pipeline("test", "--unit", "--select", "fct_quota_cycle_daily", "--models-dir", str(models),
                         data_dir=tmp_path, cwd=tmp_path)
    assert done.returncode == 1
    assert re.search(r"^FAIL unit test fct_quota_cycle_daily\.an_overdue_reset_keeps_the_invariants", done.stdout, re.M)


def test_every_forecast_whose_outcome_is_known_is_scored(quota_edges):
    """fct_quota_forecast_accuracy equals the re-computation: a row for every day whose cycle's end was seen,
    none for the others (the open cycles, the keyword stock, neverseen), errors in days and in units."""
    expected = quota_truth.expected_forecast_accuracy(quota_truth.expected_cycles(quota_edges.truth))
    with duckdb.connect(str(quota_edges.published), read_only=True) as con:
        scored = mart(con, "marts.fct_quota_forecast_accuracy")
    assert_matches(scored, expected, ["account", "metric", "snapshot_date"], "fct_quota_forecast_accuracy (edges)")
    # the late reset: 03-14's forecast expected the cycle to end on 03-26, it ended on 03-29
    late = scored[(scored.account == "irregular") & (scored.snapshot_date == date(2026, 3, 14))].iloc[0]
    assert (late.expected_cycle_end, late.actual_cycle_end, late.cycle_end_error_days) == \
        (date(2026, 3, 26), date(2026, 3, 29), -3)
    assert set(scored.account) == {"irregular", "changed", "raised", "cleanup"} and set(scored.metric) == {"dataRows"}
    assert scored.usage_error_units.notna().any() and scored.limit_changed_after_forecast.any()
