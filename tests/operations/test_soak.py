"""The soak: 14 consecutive simulated days launched by the real ``dagster-daemon``, faults on, one run killed.

Marker ``soak`` (deselected by default; run with ``pytest -m soak tests/operations/test_soak.py -p no:xdist``; it
takes about 15-25 minutes on 2 cores). What runs, as in production:

- the vendor is the sandbox served over HTTP on loopback (``rank-pipeline sandbox``), with its faults on:
  5xx answers, dropped connections, invalid JSON and records shifting between pages while they are read;
- ``dagster-daemon run -w workspace.yaml`` on a temporary ``DAGSTER_HOME`` and data folder, with alerts to
  a real SMTP server (aiosmtpd) and a real HTTP receiver on loopback;
- the runs come from **backfills that the daemon executes**, one partition each, not from schedule ticks:
  a tick requests the partition of its own UTC day, so 14 ticks in a few minutes would all be today,
  while the sandbox's clock (``PUT /_sandbox/today``) is moved to each simulated day before its
  backfill is submitted with ``dagster job backfill``;
- on the 5th day the run's worker is killed with SIGKILL during extraction; the daemon's run monitoring
  marks it failed and the day is submitted again.

At the end: the marts equal a full rebuild of the same snapshots (``rank-pipeline rebuild --full-refresh``
in a copy of the data folder); ``ops.run_history`` has one successful row per day (and the killed run's
failure); every ranking alert of ``marts.fct_ranking_alerts`` and every failure was delivered exactly once
to each destination (one digest per run and destination, none repeated); the resident memory of the daemon's
process and the runs' peak resident memory did not grow by more than 10% from the first day to the last.
The daemon is started and left to warm up first: an idle ``dagster-daemon`` grows by about 15% in its
first minutes (each of its loops' first ticks) and then stays flat, which is start-up, not growth from
day to day; the warm-up is printed beside the days.
The figures are printed (``-s``) and reported in ``benchmarks/README.md``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import httpx
import pytest
from daemon_helpers import (
    BIN,
    REPO,
    free_port,
    group_members,
    kill_group,
    prepare_instance,
    service_env,
    start,
    stop_group,
)
from daemon_helpers import wait_for as wait_until

from rank_pipeline.defs.jobs import DAILY_JOB_NAME
from rank_pipeline.operations.dagster_names import PID_TAG

pytestmark = [pytest.mark.soak, pytest.mark.daemon, pytest.mark.timeout(3600)]

DAYS = 14
KILLED_DAY_INDEX = 4
RUN_TIMEOUT_S = 600
KILLED_RUN_BOUND_S = 120
MEMORY_GROWTH = 1.10
WARM_UP_MAX_S = 900
WARM_UP_STABLE_S = 120  # the daemon is warm when its RSS grew by less than 1% over this long
FAULTS = {"seed": 20261124, "error_rate": 0.03, "drop_rate": 0.02, "invalid_json_rate": 0.02,
          "shift_rate": 0.05, "shift_inserts": 1, "shift_deletes": 1}


def _rss_kib(pid: int, field: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _sandbox(tmp: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str, dict[str, str]]:
    """``rank-pipeline sandbox`` on a free port: (process, base URL, {account: key})."""
    port = free_port()
    log = tmp / "sandbox.log"
    proc = start([str(BIN / "rank-pipeline"), "sandbox", "--port", str(port)], env, log)
    base_url = f"http://127.0.0.1:{port}"
    banner = wait_until("the sandbox's banner", lambda: log.exists() and "control endpoints" in log.read_text()
                        and log.read_text(), 120, log=log)
    keys = {m.group(1): m.group(2) for m in re.finditer(r"account (\S+) key (\S+)  API access", banner)}
    assert keys, banner
    return proc, base_url, keys


class _Runs:
    """The daemon's instance, read through Dagster's public API."""

    def __init__(self, home: Path):
        self.instance = dg.DagsterInstance.from_config(str(home))

    def of_day(self, day: date) -> list[dg.DagsterRun]:
        return list(self.instance.get_runs(dg.RunsFilter(job_name=DAILY_JOB_NAME,
                                                         tags={"dagster/partition": day.isoformat()})))

    def extracting(self, run_id: str) -> bool:
        records = self.instance.get_records_for_run(run_id).records
        return any(r.event_log_entry.dagster_event is not None
                   and r.event_log_entry.dagster_event.event_type == dg.DagsterEventType.STEP_START
                   for r in records)


def test_fourteen_days_under_the_daemon(tmp_path, smtp_server, http_receiver):
    mailbox, mailto = smtp_server
    bodies, json_url = http_receiver
    plain = service_env(tmp_path)
    sandbox, base_url, keys = _sandbox(tmp_path, plain)
    daemon = None
    try:
        httpx.put(f"{base_url}/_sandbox/faults", json=FAULTS, timeout=10).raise_for_status()
        accounts = sorted(keys)
        env = service_env(
            tmp_path, RANK_TRACKER_BASE_URL=base_url, RANK_TRACKER_ACCOUNTS=",".join(accounts),
            RANK_PIPELINE_ALERT_URLS=f"{mailto},{json_url}",
            RANK_PIPELINE_SCHEDULE_CRON="0 0 1 1 *",  # the schedule stays on but does not tick during the soak
            **{f"RANK_TRACKER_API_KEY_{a.upper().replace('-', '_')}": keys[a] for a in accounts})
        home = prepare_instance(env)
        data_dir = Path(env["RANK_PIPELINE_DATA_DIR"])
        daemon = start([str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"], env, tmp_path / "daemon.log")
        runs = _Runs(home)
        _warm_up(daemon.pid)
        today = datetime.now(UTC).date()
        days = [today - timedelta(days=DAYS - 1 - i) for i in range(DAYS)]
        daemon_rss: list[int] = []
        run_peaks: list[int] = []
        killed_run = None
        started = time.monotonic()
        for index, day in enumerate(days):
            httpx.put(f"{base_url}/_sandbox/today", json={"today": day.isoformat()}, timeout=10).raise_for_status()
            attempts = 2 if index == KILLED_DAY_INDEX else 1
            for attempt in range(attempts):
                before = {r.run_id for r in runs.of_day(day)}
                subprocess.run([str(BIN / "dagster"), "job", "backfill", "-w", "workspace.yaml", "-j", DAILY_JOB_NAME,
                                "--partitions", day.isoformat(), "--noprompt"], env=env, cwd=REPO, check=True,
                               capture_output=True, text=True, timeout=300)
                run = wait_until(f"the daemon to launch the run of {day}",
                                 lambda day=day, before=before: next((r for r in runs.of_day(day) if r.run_id not in before), None),
                                 RUN_TIMEOUT_S, log=tmp_path / "daemon.log")
                peak = 0
                pid = None
                deadline = time.monotonic() + RUN_TIMEOUT_S
                while True:
                    current = runs.instance.get_run_by_id(run.run_id)
                    pid = pid or (int(current.tags[PID_TAG]) if current.tags.get(PID_TAG, "").isdigit() else None)
                    if pid:
                        peak = max(peak, _rss_kib(pid, "VmHWM"))
                    if attempt == 0 and index == KILLED_DAY_INDEX and pid and runs.extracting(run.run_id):
                        os.kill(pid, signal.SIGKILL)
                        killed_at = time.monotonic()
                        failed = wait_until("the killed run marked failed", lambda run=run: runs.instance.get_run_by_id(
                            run.run_id).status == dg.DagsterRunStatus.FAILURE or None, KILLED_RUN_BOUND_S,
                            log=tmp_path / "daemon.log")
                        assert failed
                        print(f"soak: day {index + 1} run killed; marked failed after "
                              f"{time.monotonic() - killed_at:.0f} s")
                        killed_run = run.run_id
                        break
                    if current.is_finished:
                        assert current.status == dg.DagsterRunStatus.SUCCESS, (
                            f"the run of {day} ended {current.status}; see {tmp_path / 'daemon.log'}")
                        break
                    assert time.monotonic() < deadline, f"the run of {day} did not end in {RUN_TIMEOUT_S} s"
                    time.sleep(0.5)
                if killed_run == run.run_id and attempt == 0:
                    continue
                run_peaks.append(peak)
                daemon_rss.append(_rss_kib(daemon.pid))
                group = sum(_rss_kib(int(line.split()[0])) for line in group_members(daemon.pid))
                print(f"soak: day {index + 1}/{DAYS} {day} done at {time.monotonic() - started:.0f} s; "
                      f"run peak {peak / 1024:.0f} MiB, dagster-daemon {daemon_rss[-1] / 1024:.0f} MiB "
                      f"(with its code servers and helpers {group / 1024:.0f} MiB)", flush=True)
        # the success sensor sends the last run's digest within its interval
        wait_until("the last run's digest", lambda: len(bodies) >= 1 and _digest_runs(bodies) >= DAYS, 180)
        time.sleep(35)  # one more sensor interval: nothing else may arrive
    finally:
        if daemon is not None:
            stop_group(daemon)
        kill_group(sandbox)

    assert killed_run is not None
    published = data_dir / "warehouse.duckdb"

    # one successful history row per day, and the killed run's failure
    with duckdb.connect(str(published), read_only=True) as con:
        history = con.execute("select snapshot_date, status, run_id from ops.run_history").fetchall()
        alerts = {r[0] for r in con.execute("select alert_id from marts.fct_ranking_alerts").fetchall()}
    per_day = {day: sum(1 for d, s, _ in history if d == day and s == "success") for day in days}
    assert per_day == dict.fromkeys(days, 1), per_day
    assert (days[KILLED_DAY_INDEX], "failure", killed_run) in history

    # every alert delivered exactly once per destination: the ledger holds each (alert, destination) once
    # (its primary key) and as sent; every ranking alert and the killed run's failure are in it; each
    # destination got one message per run scope in the ledger, never two for one run
    import sqlite3

    with sqlite3.connect(data_dir / "alerts.sqlite") as ledger:
        rows = ledger.execute("select alert_id, destination, scope, status from sent_alerts").fetchall()
    assert {s for *_, s in rows} == {"sent"}
    for destination in (1, 2):
        sent = {a for a, d, _, _ in rows if d == destination}
        assert alerts <= sent, sorted(alerts - sent)[:5]
        assert f"run_failed:{killed_run}" in sent
    scopes = {d: {s for _, dd, s, _ in rows if dd == d} for d in (1, 2)}
    mail_runs = [_run_of(m["body"]) for m in mailbox.messages]
    hook_runs = [_run_of(b["json"].get("message") or b["json"].get("body") or "") for b in bodies]
    for destination, received in ((1, mail_runs), (2, hook_runs)):
        assert len(received) == len(set(received)), "a run's digest arrived twice"
        assert set(received) == scopes[destination] - {"freshness"}

    # the marts equal a full rebuild of the same snapshots
    copy = tmp_path / "rebuilt"
    shutil.copytree(data_dir, copy, ignore=shutil.ignore_patterns("dagster_home", ".locks"))
    rebuild_env = {**env, "RANK_PIPELINE_DATA_DIR": str(copy), "DAGSTER_HOME": str(tmp_path / "rebuild_home")}
    done = subprocess.run([str(BIN / "rank-pipeline"), "rebuild", "--full-refresh"], env=rebuild_env, cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    _assert_marts_equal(published, copy / "warehouse.duckdb")

    # memory: first day against last day, at most +10% each. The daemon is the long-lived process, where a
    # leak accumulates; each run is a new process, whose peak would grow with the history if a step held
    # the whole warehouse in memory (the publish step's COPY FROM DATABASE did: it is a file copy now).
    size = (data_dir / "warehouse.build.duckdb").stat().st_size / 2**20
    print(f"soak: dagster-daemon {daemon_rss[0] / 1024:.0f} -> {daemon_rss[-1] / 1024:.0f} MiB; run peak "
          f"{run_peaks[0] / 1024:.0f} -> {run_peaks[-1] / 1024:.0f} MiB (build warehouse {size:.1f} MiB at the end)")
    assert daemon_rss[-1] <= daemon_rss[0] * MEMORY_GROWTH, daemon_rss
    assert run_peaks[-1] <= run_peaks[0] * MEMORY_GROWTH, run_peaks


def _warm_up(pid: int) -> None:
    """Wait until the idle daemon's resident memory is flat (< 1% over WARM_UP_STABLE_S), printing it."""
    started = time.monotonic()
    samples: list[tuple[float, int]] = []
    while time.monotonic() - started < WARM_UP_MAX_S:
        samples.append((time.monotonic(), _rss_kib(pid)))
        window = [rss for at, rss in samples if at >= samples[-1][0] - WARM_UP_STABLE_S]
        if samples[-1][0] - samples[0][0] >= WARM_UP_STABLE_S and max(window) <= min(window) * 1.01:
            break
        time.sleep(15)
    print(f"soak: dagster-daemon warm-up {samples[0][1] / 1024:.0f} -> {samples[-1][1] / 1024:.0f} MiB in "
          f"{time.monotonic() - started:.0f} s (idle)", flush=True)


def _run_of(text: str) -> str:
    match = re.search(r"Run ([0-9a-f-]{36})", text)
    return match.group(1) if match else text[:60]


def _digest_runs(bodies: list[dict]) -> int:
    return len({_run_of(b["json"].get("message") or b["json"].get("body") or "") for b in bodies})


def _assert_marts_equal(published: Path, rebuilt: Path) -> None:
    """Every raw, staging and mart relation of ``published`` equals the full rebuild's (floats within 1e-9)."""
    sys.path.insert(0, str(REPO / "tests" / "models"))
    from test_any_order import assert_equals_full_rebuild

    with duckdb.connect(str(published), read_only=True) as con:
        assert_equals_full_rebuild(con, rebuilt)
