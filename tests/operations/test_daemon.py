"""The daily schedule under the real ``dagster-daemon``, and killed daemon-launched runs marked failed.

``dagster-daemon run -w workspace.yaml`` is started as a subprocess on a temporary ``DAGSTER_HOME`` and
data folder (its ``dagster.yaml`` written by ``python -m rank_pipeline.defs.instance``, as docs/how-to/running-every-day.md
says), with ``RANK_PIPELINE_SCHEDULE_CRON='* * * * *'`` against the embedded sandbox. The test reads
the instance through Dagster's public API (``DagsterInstance.from_config``) and the published DuckDB
file. The pacing is slowed (4 requests per second per key) so an extraction lasts long enough to be
killed in the middle.

Bounds: a run whose worker is SIGKILLed is marked failed within :data:`KILLED_RUN_BOUND_S` while the
daemon runs; when the daemon and its code server were killed too, within :data:`DEAD_TREE_BOUND_S` of
the daemon starting again (the sensor ``fail_dead_runs_sensor``).
"""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from daemon_helpers import BIN, kill_group, prepare_instance, service_env, start, wait_for

from rank_pipeline.defs.jobs import DAILY_JOB_NAME, DAILY_SCHEDULE_NAME
from rank_pipeline.operations.dagster_names import PID_TAG

pytestmark = [pytest.mark.e2e, pytest.mark.daemon, pytest.mark.xdist_group("daemon")]

KILLED_RUN_BOUND_S = 60
DEAD_TREE_BOUND_S = 120
FIRST_RUN_TIMEOUT_S = 300  # daemon start + code server load + up to one minute to the tick + the run
SCHEDULE_TAG = "dagster/schedule_name"
EXTRACT_STEP = "extract_snapshots"
DAEMON = [str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"]
SLOW_EXTRACTION = {"RANK_TRACKER_RATE_PER_KEY": "4", "RANK_TRACKER_RATE_WINDOW_S": "1"}
# daily marts that hold a row for every snapshot day from the first (flips need two days)
DAILY_MARTS = ("fct_keyword_rankings_daily", "fct_keyword_best_position_daily", "agg_domain_daily",
               "agg_tag_daily", "fct_competitors_daily", "fct_quota_cycle_daily",
               "fct_account_snapshot_coverage_daily", "int_keyword_rankings_rollup_daily")


class Daemon:
    """``dagster-daemon run -w workspace.yaml`` on a temporary instance; restartable."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.env = service_env(tmp, RANK_PIPELINE_SCHEDULE_CRON="* * * * *", **SLOW_EXTRACTION)
        self.home = prepare_instance(self.env)
        self.data_dir = Path(self.env["RANK_PIPELINE_DATA_DIR"])
        self.log = tmp / "daemon.log"
        self.proc = None
        self.started_at = 0.0
        self._instance = None

    def start(self) -> None:
        self.started_at = time.time()
        self.proc = start(DAEMON, self.env, self.log)

    def kill_tree(self) -> None:
        """SIGKILL the daemon, its code server and every run worker (a power cut of the service)."""
        kill_group(self.proc)

    def stop(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(30)
            except (ProcessLookupError, Exception):  # noqa: BLE001 - then SIGKILL below
                pass
            kill_group(self.proc)
        if self._instance is not None:
            self._instance.dispose()

    @property
    def instance(self) -> dg.DagsterInstance:
        if self._instance is None:
            self._instance = dg.DagsterInstance.from_config(str(self.home))
        return self._instance

    def scheduled_runs(self) -> list[dg.DagsterRun]:
        """Runs launched by the daily schedule, oldest first."""
        runs = self.instance.get_runs(dg.RunsFilter(tags={SCHEDULE_TAG: DAILY_SCHEDULE_NAME}))
        return sorted(runs, key=lambda r: r.tags.get(".dagster/scheduled_execution_time", ""))

    def run(self, run_id: str) -> dg.DagsterRun:
        return self.instance.get_run_by_id(run_id)

    def events(self, run_id: str, event_type: dg.DagsterEventType) -> list[dg.EventLogEntry]:
        return [r.event_log_entry for r in self.instance.get_records_for_run(run_id, of_type=event_type,
                                                                              limit=10_000).records]

    def wait_success_after(self, after: str, what: str, timeout: float) -> dg.DagsterRun:
        """The first scheduled run whose tick is later than ``after`` (ISO time) once it succeeded."""

        def probe():
            later = [r for r in self.scheduled_runs() if r.tags[".dagster/scheduled_execution_time"] > after]
            if later and later[0].status in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED):
                raise AssertionError(f"{what}: run {later[0].run_id} ended {later[0].status}; see {self.log}")
            return later[0] if later and later[0].status == dg.DagsterRunStatus.SUCCESS else None

        return wait_for(what, probe, timeout, interval=2, log=self.log)

    def catch_in_extraction(self, timeout: float) -> tuple[dg.DagsterRun, int]:
        """The next scheduled run once its worker is extracting (its pid tag recorded, step started,
        not ended), with that pid."""
        seen = {r.run_id for r in self.scheduled_runs() if r.status != dg.DagsterRunStatus.STARTED}

        def probe():
            for run in self.scheduled_runs():
                if run.run_id in seen or run.status != dg.DagsterRunStatus.STARTED or PID_TAG not in run.tags:
                    continue
                started = {e.step_key for e in self.events(run.run_id, dg.DagsterEventType.STEP_START)}
                ended = {e.step_key for e in self.events(run.run_id, dg.DagsterEventType.STEP_SUCCESS)}
                if EXTRACT_STEP in started and EXTRACT_STEP not in ended:
                    return run, int(run.tags[PID_TAG])
                if EXTRACT_STEP in ended:
                    seen.add(run.run_id)  # too late for this one: take the next tick's
            return None

        return wait_for("a scheduled run in its extraction step", probe, timeout, interval=0.3, log=self.log)

    def assert_killed_in_extraction(self, run_id: str) -> None:
        materialized = self.events(run_id, dg.DagsterEventType.ASSET_MATERIALIZATION)
        assert not materialized, "the run was killed after its extraction, not during it"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("daemon"))
    d.start()
    try:
        yield d
    finally:
        d.stop()


def _today() -> date:
    return datetime.now(UTC).date()


def test_a_scheduled_run_materializes_every_asset_and_publishes(daemon):
    run = daemon.wait_success_after("", "a successful run of the daily schedule", FIRST_RUN_TIMEOUT_S)

    # the partition of the tick's UTC day (within a minute of now: today, unless midnight passed)
    tick = datetime.fromisoformat(run.tags[".dagster/scheduled_execution_time"])
    day = tick.astimezone(UTC).date()
    assert run.tags["dagster/partition"] == day.isoformat()
    assert day in (_today(), date.fromordinal(_today().toordinal() - 1))
    assert run.job_name == DAILY_JOB_NAME
    assert run.tags[SCHEDULE_TAG] == DAILY_SCHEDULE_NAME

    # every asset of the daily job, materialized by this run for that partition
    from rank_pipeline.defs.definitions import defs

    job_keys = set(defs.resolve_job_def(DAILY_JOB_NAME).asset_layer.selected_asset_keys)
    assert len(job_keys) > 20
    events = daemon.events(run.run_id, dg.DagsterEventType.ASSET_MATERIALIZATION)
    materialized = {e.dagster_event.asset_key for e in events}
    assert materialized == job_keys
    assert {e.dagster_event.partition for e in events} == {day.isoformat()}

    # published: the file analysts open holds the day in every raw table and daily mart
    published = daemon.data_dir / "warehouse.duckdb"
    assert published.is_file()
    with duckdb.connect(str(published), read_only=True) as con:
        raw = [t for (t,) in con.execute(
            "select table_name from information_schema.columns where table_schema = 'raw' "
            "and column_name = 'snapshot_date'").fetchall()]
        assert {"keywords", "domains", "usage"} <= set(raw)
        for table in [f"raw.{t}" for t in raw] + [f"marts.{t}" for t in DAILY_MARTS]:
            days = {d for (d,) in con.execute(f"select distinct snapshot_date from {table}").fetchall()}
            assert day in days, f"{table} has no row of {day} (days: {sorted(days)})"


def test_b_killed_worker_is_marked_failed_and_the_next_tick_succeeds(daemon):
    run, pid = daemon.catch_in_extraction(timeout=FIRST_RUN_TIMEOUT_S)
    os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    failed = wait_for(f"run {run.run_id} marked failed after its worker was killed",
                      lambda: daemon.run(run.run_id).status == dg.DagsterRunStatus.FAILURE,
                      KILLED_RUN_BOUND_S, interval=0.5, log=daemon.log)
    assert failed
    print(f"killed worker marked failed after {time.monotonic() - killed_at:.1f} s")
    daemon.assert_killed_in_extraction(run.run_id)

    after = run.tags[".dagster/scheduled_execution_time"]
    nxt = daemon.wait_success_after(after, "the next tick's run to succeed", 240)
    assert nxt.tags["dagster/partition"] in (_today().isoformat(), run.tags["dagster/partition"])


def test_c_killed_daemon_tree_run_is_marked_failed_after_restart(tmp_path):
    """The daemon, its code server and the run's worker all SIGKILLed (nothing left to report the run's
    end): after the daemon starts again, the sensor marks the run failed within the bound."""
    d = Daemon(tmp_path)
    try:
        d.start()
        run, pid = d.catch_in_extraction(timeout=FIRST_RUN_TIMEOUT_S)
        d.kill_tree()
        wait_for(f"worker {pid} gone", lambda: not Path(f"/proc/{pid}").exists()
                 or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3], 30, interval=0.5)
        time.sleep(2)
        assert d.run(run.run_id).status == dg.DagsterRunStatus.STARTED  # nothing else marked it

        d.start()
        restarted_at = time.monotonic()
        wait_for(f"run {run.run_id} marked failed after the daemon restarted",
                 lambda: d.run(run.run_id).status == dg.DagsterRunStatus.FAILURE, DEAD_TREE_BOUND_S,
                 interval=1, log=d.log)
        print(f"dead run marked failed {time.monotonic() - restarted_at:.1f} s after the daemon restarted")
        messages = [e.message or "" for e in d.events(run.run_id, dg.DagsterEventType.RUN_FAILURE)]
        assert any(f"pid {pid}" in m and "killed" in m for m in messages), messages
        d.assert_killed_in_extraction(run.run_id)
    finally:
        d.stop()
