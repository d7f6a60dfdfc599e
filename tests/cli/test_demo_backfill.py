"""The demo's one run over a partition range (:func:`rank_pipeline.cli.runs.run_partition_range`, a single-run
backfill of the daily job) against the same days played as one run each (:func:`rank_pipeline.cli.runs.run_partition`,
what ``rank-pipeline run --date`` does), each in its own data folder on the embedded sandbox: the published
staging tables and marts are equal row by row, the summary totals (days, snapshot rows, requests) agree, and
``ops.run_history`` records the one run with a row per partition of its range."""

from __future__ import annotations

from datetime import date, timedelta

import dagster as dg
import duckdb
import pytest

from rank_pipeline.cli.runs import Totals, run_partition, run_partition_range
from rank_pipeline.defs.definitions import build_definitions
from rank_pipeline.defs.jobs import DAILY_JOB_NAME
from rank_pipeline.operations import run_history
from rank_pipeline.settings import Settings

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("demo_backfill")]

FIRST = date(2026, 3, 2)
DAYS = [FIRST + timedelta(days=i) for i in range(3)]


def _defs(data_dir):
    return build_definitions(Settings.from_env({"RANK_PIPELINE_DATA_DIR": str(data_dir),
                                                "RANK_PIPELINE_PARTITION_START": FIRST.isoformat()}))


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """``(ranged data folder, its totals, its steps seen, its run id, per-day data folder, their totals)``."""
    ranged, daily = tmp_path_factory.mktemp("ranged"), tmp_path_factory.mktemp("daily")
    ranged_totals, steps = Totals(), []
    run_id = run_partition_range(_defs(ranged), dg.DagsterInstance.ephemeral(), DAYS[0], DAYS[-1], ranged_totals,
                                 on_step=lambda done, step: steps.append((done, step)))
    daily_totals, defs, instance = Totals(), _defs(daily), dg.DagsterInstance.ephemeral()
    for day in DAYS:
        run_partition(defs, instance, day, daily_totals)
    return ranged, ranged_totals, steps, run_id, daily, daily_totals


def test_one_run_over_the_range_publishes_what_one_run_per_day_publishes(played, published_marts):
    ranged, _, _, _, daily, _ = played
    got, want = published_marts(ranged / "warehouse.duckdb"), published_marts(daily / "warehouse.duckdb")
    assert sorted(got) == sorted(want) and any(k.startswith("marts.") for k in want)
    for name in want:
        assert got[name] == want[name], name
    with duckdb.connect(str(ranged / "warehouse.duckdb"), read_only=True) as con:
        days = [d for (d,) in con.execute(
            "select distinct snapshot_date from marts.fct_keyword_rankings_daily order by 1").fetchall()]
    assert days == DAYS


def test_the_totals_count_each_day_once_and_every_step_is_reported(played):
    ranged, ranged_totals, steps, _, _, daily_totals = played
    assert ranged_totals.days == daily_totals.days == len(DAYS)
    assert ranged_totals.rows == daily_totals.rows > 0
    assert ranged_totals.requests == daily_totals.requests > 0
    assert ranged_totals.checks_failed == daily_totals.checks_failed == 0
    job = _defs(ranged).resolve_job_def(DAILY_JOB_NAME)
    assert [done for done, _ in steps] == list(range(1, len(job.graph.nodes) + 1))
    assert steps[-1][1] == "warehouse__published"


def test_the_run_history_records_the_one_run_with_its_range(played):
    ranged, _, _, run_id, _, _ = played
    with duckdb.connect(str(ranged / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(f"select run_id, snapshot_date, status, launched_by, partitions_in_run "
                           f"from {run_history.TABLE} order by snapshot_date").fetchall()
    assert rows == [(run_id, day, "success", "cli", len(DAYS)) for day in DAYS]
