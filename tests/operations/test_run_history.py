"""The warehouse records its own runs: ``ops.run_history`` in the published file, through the real doors.

One data folder on the embedded sandbox, runs as a user starts them (subprocesses, settings in the
environment):

1. ``rank-pipeline run --date D1`` and ``--date D2`` (succeed);
2. ``rank-pipeline run --date D3`` with ``RANK_PIPELINE_MODELS_DIR`` pointing to a copy of the models
   whose ``stg_domains`` has a blocking test that always fails (the run fails before publishing);
3. ``dagster job execute`` of the daily job for D4 with a schedule's tag (``dagster/schedule_name``) and
   for D5 .. D6 as a single-run backfill (``dagster/backfill`` and a partition range);
4. ``rank-pipeline rebuild --full-refresh``.

Then the published file is read and compared with ground truth: the Dagster instance's runs (ids,
partitions, statuses, tags), the snapshot manifests (rows per resource), each command's summary line
(requests, 429s, checks), and the event log's check evaluations for the runs Dagster launched.
"""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from support import PARTITION_START, dagster_job, rank_pipeline

from rank_pipeline.operations import run_history
from rank_pipeline.snapshots.reader import read_manifest
from rank_pipeline.snapshots.schema import ENDPOINTS
from rank_pipeline.transform import load_project
from tests.transform.model_folders import failing_models

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e_run_history"), pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
D1, D2, D3, D4, D5, D6 = (date(2026, 11, 1) + timedelta(days=i) for i in range(6))
SUMMARY = re.compile(r"(Completed|Failed): 1 day\(s\), (\d+) snapshot rows, checks (\d+) passed / (\d+) failed, "
                     r"(\d+) requests, (\d+) 429s")


_cli = functools.partial(rank_pipeline, cwd=ROOT, timeout=600)
"""``rank-pipeline *args`` in the clone (:func:`support.rank_pipeline`): ``data_dir``, a clean environment plus
``env`` (each call names :data:`support.PARTITION_START`, as :func:`support.dagster_job` does), killed past 600 s."""


def _summary(done: subprocess.CompletedProcess) -> dict[str, int]:
    match = SUMMARY.search(done.stdout + done.stderr)
    assert match, done.stdout + done.stderr
    return {"rows": int(match[2]), "checks_passed": int(match[3]), "checks_failed": int(match[4]),
            "requests": int(match[5]), "rate_limited": int(match[6])}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    data = tmp_path_factory.mktemp("history") / "data"
    out = {}
    for day in (D1, D2):
        done = _cli("run", "--date", day.isoformat(), data_dir=data, env=PARTITION_START)
        assert done.returncode == 0, done.stderr
        out[day] = _summary(done)
    failing = _cli("run", "--date", D3.isoformat(), data_dir=data, env={
        **PARTITION_START, "RANK_PIPELINE_MODELS_DIR": str(failing_models(tmp_path_factory.mktemp("models")))})
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "stg_domains" in failing.stderr
    out[D3] = _summary(failing)
    scheduled = dagster_job(data, "daily_rank_pipeline",
                            {"dagster/partition": D4.isoformat(), "dagster/schedule_name": "test_schedule"})
    assert scheduled.returncode == 0, scheduled.stderr[-3000:]
    backfill = dagster_job(data, "daily_rank_pipeline",
                           {"dagster/backfill": "testbackfill", "dagster/asset_partition_range_start": D5.isoformat(),
                            "dagster/asset_partition_range_end": D6.isoformat()})
    assert backfill.returncode == 0, backfill.stderr[-3000:]
    published = data / "warehouse.duckdb"
    with duckdb.connect(str(published), read_only=True) as con:
        before = con.execute(f"select * from {run_history.TABLE} order by run_id, snapshot_date").fetchall()
        cur = con.execute(f"select * from {run_history.TABLE}")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    return {"data": data, "summaries": out, "rows": rows, "before_rebuild": before}


@pytest.fixture(scope="module")
def instance(world):
    """The data folder's Dagster instance (the dagster.yaml the runs used), read-only use."""
    with dg.DagsterInstance.from_config(str(world["data"] / "dagster_home")) as inst:
        yield inst


def _runs(instance: dg.DagsterInstance) -> dict[str, dg.DagsterRun]:
    return {r.run_id: r for r in instance.get_runs()}


def _days(run: dg.DagsterRun) -> list[date]:
    tags = run.tags
    if "dagster/partition" in tags:
        return [date.fromisoformat(tags["dagster/partition"])]
    first = date.fromisoformat(tags["dagster/asset_partition_range_start"])
    last = date.fromisoformat(tags["dagster/asset_partition_range_end"])
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


@pytest.mark.slow
def test_one_row_per_run_and_partition_with_dagsters_status_and_launch(world, instance):
    runs = _runs(instance)
    assert len(runs) == 5
    expected = {(run_id, day) for run_id, run in runs.items() for day in _days(run)}
    got = [(r["run_id"], r["snapshot_date"]) for r in world["rows"]]
    assert len(got) == len(set(got)) and set(got) == expected
    by_day = {r["snapshot_date"]: r for r in world["rows"]}
    for run_id, run in runs.items():
        for day in _days(run):
            row = next(r for r in world["rows"] if r["run_id"] == run_id and r["snapshot_date"] == day)
            assert row["status"] == {"SUCCESS": "success", "FAILURE": "failure"}[run.status.value]
            assert row["job_name"] == run.job_name == "daily_rank_pipeline"
            assert row["partitions_in_run"] == len(_days(run))
    assert [by_day[d]["launched_by"] for d in (D1, D2, D3, D4, D5, D6)] == \
        ["cli", "cli", "cli", "schedule", "backfill", "backfill"]
    assert [by_day[d]["status"] for d in (D1, D2, D3, D4, D5, D6)] == \
        ["success", "success", "failure", "success", "success", "success"]
    failed = by_day[D3]
    assert failed["failed_step"] == "staging__stg_domains" and "no_domain_may_exist" in (failed["failure_reason"]
                                                                                         or "")
    # every run but the last is final (rewritten from Dagster's record); the last one wrote its own rows
    last = max(runs.values(), key=lambda r: instance.get_run_record_by_id(r.run_id).start_time)
    assert {r["run_id"] for r in world["rows"] if not r["final"]} == {last.run_id}


@pytest.mark.slow
def test_rows_per_resource_equal_the_manifests(world):
    snapshots = world["data"] / "snapshots"
    for row in world["rows"]:
        day = row["snapshot_date"]
        counts = {r: read_manifest(snapshots, r, day).row_count for r in ENDPOINTS}
        assert {r: row[f"rows_{r}"] for r in ENDPOINTS} == counts, day
        assert row["snapshot_rows"] == sum(counts.values())


@pytest.mark.slow
def test_requests_429s_and_checks_equal_each_cli_runs_summary_line(world):
    by_day = {r["snapshot_date"]: r for r in world["rows"]}
    for day, summary in world["summaries"].items():
        row = by_day[day]
        assert (row["snapshot_rows"], row["requests"], row["rate_limited"]) == \
            (summary["rows"], summary["requests"], summary["rate_limited"]), day
        assert (row["checks_passed"], row["checks_failed"]) == \
            (summary["checks_passed"], summary["checks_failed"]), day
    assert by_day[D3]["checks_failed"] >= 1


@pytest.mark.slow
def test_checks_of_dagster_launched_runs_equal_their_check_evaluations(world, instance):
    for row in world["rows"]:
        if row["launched_by"] == "cli":
            continue
        records = instance.get_records_for_run(row["run_id"],
                                               of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION, limit=10_000)
        passed = [r.event_log_entry.dagster_event.event_specific_data.passed for r in records.records]
        assert (row["checks_passed"], row["checks_failed"]) == (sum(passed), len(passed) - sum(passed))
        assert row["checks_passed"] > 0


@pytest.mark.slow
def test_every_final_row_equals_the_row_written_from_the_runs_whole_event_log(world, instance):
    """A successful run's provisional rows are made final from its step events alone (its checks and figures
    kept); a failed run's are written from its whole log. Either way, the final rows equal the rows written
    from the whole log of the finished run."""
    from rank_pipeline.defs.run_history_asset import RUN_FACT_EVENTS, run_facts

    finals = [r for r in world["rows"] if r["final"]]
    assert {r["status"] for r in finals} == {"success", "failure"}
    names = [n for n, _ in run_history.COLUMNS if n != "recorded_at"]
    for run_id in {r["run_id"] for r in finals}:
        record = instance.get_run_records(filters=dg.RunsFilter(run_ids=[run_id]), limit=1)[0]
        facts = run_facts(record, instance.all_logs(run_id, of_type=RUN_FACT_EVENTS))
        assert facts is not None
        whole = {row[1]: dict(zip(names, row[:-1], strict=True)) for row in facts.rows(recorded_at=None)}
        for row in (r for r in finals if r["run_id"] == run_id):
            got = {n: row[n] for n in names}
            want = whole[row["snapshot_date"]]
            seconds = [f"{s}_s" for s in run_history.STAGES] + ["duration_s"]
            assert got == {**want, **{n: pytest.approx(want[n]) for n in seconds if want[n] is not None}}, \
                (run_id, row["snapshot_date"])


@pytest.mark.slow
def test_stage_seconds_are_positive_and_within_the_run(world, instance):
    for row in world["rows"]:
        record = instance.get_run_record_by_id(row["run_id"])
        stages = [row[f"{s}_s"] for s in run_history.STAGES]
        if row["status"] == "success":
            assert all(s is not None and s > 0 for s in stages), row
        else:  # failed in the models: extract, load and models ran, publish did not
            assert all(s > 0 for s in stages[:3]) and stages[3] is None, row
        assert row["duration_s"] > 0 and sum(s or 0 for s in stages) <= row["duration_s"] + 0.01
        assert row["started_at"].timestamp() == pytest.approx(record.start_time, abs=0.01)
        if row["final"]:
            assert row["ended_at"].timestamp() == pytest.approx(record.end_time, abs=0.01)


@pytest.mark.slow
def test_the_history_checks_ran_as_asset_checks_in_every_run(world, instance):
    names = {t.name for t in load_project(ROOT / "dbt_like_sql").tables[run_history.TABLE].tests}
    published = {r["run_id"] for r in world["rows"] if r["status"] == "success"}
    for run_id in published:
        records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION,
                                               limit=10_000).records
        evaluations = [r.event_log_entry.dagster_event.event_specific_data for r in records]
        ours = {e.check_name: e.passed for e in evaluations if e.asset_key == dg.AssetKey(["ops", "run_history"])}
        assert ours == dict.fromkeys(names, True), run_id


@pytest.mark.slow
def test_a_full_refresh_rebuild_keeps_the_history(world):
    """``rank-pipeline rebuild --full-refresh`` is a run of the job ``rebuild_full_refresh``: every row recorded
    before is kept (a final one unchanged), and the rebuild adds its own, one per snapshot day."""
    done = _cli("rebuild", "--full-refresh", data_dir=world["data"], env=PARTITION_START)
    assert done.returncode == 0, done.stderr
    with duckdb.connect(str(world["data"] / "warehouse.duckdb"), read_only=True) as con:
        cur = con.execute(f"select * from {run_history.TABLE} order by run_id, snapshot_date")
        names = [d[0] for d in cur.description]
        after = {(r[0], r[1]): r for r in cur.fetchall()}
    assert names[:2] == ["run_id", "snapshot_date"]
    before = {(r[0], r[1]): r for r in world["before_rebuild"]}
    assert len(before) == 6 and set(before) <= set(after)
    final = names.index("final")
    assert [after[k] for k, r in before.items() if r[final]] == [r for r in before.values() if r[final]]
    added = [dict(zip(names, r, strict=True)) for k, r in after.items() if k not in before]
    assert sorted(r["snapshot_date"] for r in added) == [D1, D2, D3, D4, D5, D6]
    assert {(r["job_name"], r["launched_by"], r["status"]) for r in added} == {("rebuild_full_refresh", "cli", "success")}


def test_the_yml_declares_the_tables_columns_and_types():
    table = load_project(ROOT / "dbt_like_sql").tables[run_history.TABLE]
    assert [(c.name, c.data_type) for c in table.columns] == list(run_history.COLUMNS)
    assert all(c.description for c in table.columns)


def _add_up_failures(runs: list[run_history.RunFacts], fix_up: str | None = None,
                     test: str = "snapshot_rows_add_up") -> int:
    """Failing rows of the yml's ``test`` on a table holding ``runs`` (then ``fix_up``, an UPDATE of the
    table, if given), run as the ``ops/run_history`` step runs its tests."""
    from rank_pipeline.transform import DuckDBEngine, run_tests

    table = load_project(ROOT / "dbt_like_sql").tables[run_history.TABLE]
    with duckdb.connect(":memory:") as con:
        run_history.upsert(con, runs)
        if fix_up:
            con.execute(fix_up)
        (result,) = [r for r in run_tests(DuckDBEngine(con), table, None) if r.name == test]
    return result.failures


def _run_facts(run_id: str, *, rows: dict[str, int] | None) -> run_history.RunFacts:
    from datetime import UTC, datetime

    started = datetime(2026, 11, 1, 6, tzinfo=UTC)
    return run_history.RunFacts(
        run_id=run_id, job_name="daily_rank_pipeline", status="success" if rows else "failure", launched_by="cli",
        started_at=started, ended_at=started + timedelta(minutes=1), days=[D1],
        figures={D1: run_history.DayFigures(rows=rows)} if rows is not None else {},
        failure_reason=None if rows else "the run's process (pid 1) ended without reporting: it was killed")


def test_snapshot_rows_add_up_passes_a_run_that_reported_no_counts_and_fails_counts_that_do_not_add_up():
    good = _run_facts("good", rows={r: 10 + i for i, r in enumerate(ENDPOINTS)})
    killed = _run_facts("killed", rows=None)  # every rows_* and snapshot_rows null: the run never reported
    assert _add_up_failures([good, killed]) == 0
    assert _add_up_failures([good, killed], f"update {run_history.TABLE} set snapshot_rows = snapshot_rows + 1 "
                                            "where run_id = 'good'") == 1
    # a count reported beside a null sum, or a null count beside a reported sum, is no unknown run: it fails
    assert _add_up_failures([good, killed], f"update {run_history.TABLE} set rows_usage = 3 "
                                            "where run_id = 'killed'") == 1
    assert _add_up_failures([good, killed], f"update {run_history.TABLE} set rows_usage = null "
                                            "where run_id = 'good'") == 1


def test_a_run_that_never_started_is_no_failed_time_check_and_a_run_ending_before_it_starts_is():
    good = _run_facts("good", rows={r: 10 + i for i, r in enumerate(ENDPOINTS)})
    queued = replace(_run_facts("queued", rows=None), started_at=None, status="canceled")  # canceled while queued
    for test in ("ends_after_start", "stages_within_duration"):
        assert _add_up_failures([good, queued], test=test) == 0, test
    backwards = f"update {run_history.TABLE} set ended_at = started_at - interval 1 minute where run_id = 'good'"
    assert _add_up_failures([good, queued], backwards, test="ends_after_start") == 1
    too_long = f"update {run_history.TABLE} set extract_s = duration_s + 60 where run_id = 'good'"
    assert _add_up_failures([good, queued], too_long, test="stages_within_duration") == 1
    staged = f"update {run_history.TABLE} set load_s = 5 where run_id = 'queued'"  # a stage timed, no duration
    assert _add_up_failures([good, queued], staged, test="stages_within_duration") == 1
