"""Operations through the door a user takes: ``rank-pipeline run`` / ``demo`` as subprocesses, killed with
SIGKILL at several points and run again, two first runs at once, and the Dagster UI after the demo.

Ground truth: a clean ``rank-pipeline demo --days 1`` (one day of the deterministic sandbox world) in
its own data folder. Every other data folder must end with the same marts, row by row, and the same
raw and staging rows (apart from when they were extracted and loaded).
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

import duckdb
import httpx
import pytest
from support import command_env, rank_pipeline_argv

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("ops")]

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 300  # generous: a run takes well under a minute even on a busy 2-core machine
RUN_TIME_COLUMNS = {"extracted_at", "loaded_at", "captured_at"}  # when, not what: differ between runs


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    return command_env({"RANK_PIPELINE_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1", **extra})


class Cli:
    """``rank-pipeline ARGS`` (:func:`support.rank_pipeline_argv`) in its own session; its output is collected
    line by line."""

    def __init__(self, data_dir: Path, *args: str, **env: str):
        self.proc = subprocess.Popen([*rank_pipeline_argv(), *args], cwd=ROOT, env=_env(data_dir, **env),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.data_dir = data_dir
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        """What the command printed, then its log files (the Dagster log goes to <data>/logs/, not stdout)."""
        logs = []
        for path in sorted(self.data_dir.glob("logs/*.log")):
            try:
                logs.append(path.read_text(errors="replace"))
            except OSError:
                pass
        return "\n".join([*self.lines, *logs])

    def wait_until(self, what: str, condition: Callable[[], bool], poll_s: float = 0.01) -> bool:
        """Poll ``condition`` until true (True) or the process ends first (False); fail on timeout."""
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while time.monotonic() < deadline:
            if condition():
                return True
            if self.proc.poll() is not None:
                return condition()
            time.sleep(poll_s)
        self.kill()
        pytest.fail(f"no sign of {what} within {RUN_TIMEOUT_S} s: the run is wedged\n{self.output[-3000:]}")

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._reader.join(10)

    def finish(self) -> int:
        try:
            self.proc.wait(RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the run did not finish within {RUN_TIMEOUT_S} s: wedged\n{self.output[-3000:]}")
        self._reader.join(10)
        return self.proc.returncode


def _leftovers(data_dir: Path) -> list[Path]:
    return sorted([*data_dir.glob("snapshots/*/.staging-*"), *data_dir.glob("snapshots/*/.replaced-*"),
                   *data_dir.glob(".warehouse.duckdb.*.tmp")])


def _sort_key(row: tuple) -> tuple:
    # floats last: a parallel aggregate may add them in another order (equal to ~1e-12, not bit for bit)
    return (tuple("" if isinstance(v, float) else repr(v) for v in row),
            tuple(round(v, 6) for v in row if isinstance(v, float)))


def _same_row(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(
        math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) if isinstance(x, float) and isinstance(y, float)
        else x == y for x, y in zip(a, b, strict=True))


def _tables(data_dir: Path) -> dict[str, tuple[list[str], list[tuple]]]:
    """Every raw, staging and mart relation of the published warehouse: columns and sorted rows."""
    out = {}
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as con:
        relations = con.execute("select table_schema, table_name from information_schema.tables "
                                "where table_schema in ('raw', 'staging', 'marts') order by all").fetchall()
        for schema, name in relations:
            cols = [c for (c,) in con.execute(
                "select column_name from information_schema.columns where table_schema = ? and table_name = ? "
                "order by ordinal_position", [schema, name]).fetchall()
                if schema == "marts" or c not in RUN_TIME_COLUMNS]
            select = ", ".join(f'"{c}"' for c in cols)
            rows = con.execute(f'select {select} from {schema}."{name}"').fetchall()
            out[f"{schema}.{name}"] = (cols, sorted(rows, key=_sort_key))
    return out


def _assert_same_warehouse(got_dir: Path, reference: dict) -> None:
    got = _tables(got_dir)
    assert got.keys() == reference.keys()
    assert len([t for t in got if t.startswith("marts.")]) >= 5
    for name, (cols, rows) in reference.items():
        assert got[name][0] == cols, name
        theirs = got[name][1]
        differ = [(a, b) for a, b in zip(rows, theirs, strict=False) if not _same_row(a, b)]
        assert len(theirs) == len(rows) and not differ, \
            f"{name}: {len(theirs)} rows, a clean run has {len(rows)}; first differences: {differ[:2]}"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """``rank-pipeline demo --days 1`` in a new data folder: (data_dir, day, its tables)."""
    data_dir = tmp_path_factory.mktemp("demo") / "data"
    cli = Cli(data_dir, "demo", "--days", "1")
    assert cli.finish() == 0, cli.output[-3000:]
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as con:
        (day,) = con.execute("select max(snapshot_date) from raw.keywords").fetchone()
    return data_dir, day, _tables(data_dir)


def _run(data_dir: Path, day: date, **env: str) -> Cli:
    return Cli(data_dir, "run", "--date", day.isoformat(), **env)


def test_runs_killed_during_extraction_load_and_publish_then_rerun_give_a_clean_runs_warehouse(demo, tmp_path):
    _, day, reference = demo
    data_dir = tmp_path / "data"

    # 1. killed during the extraction: a snapshot is being written
    run = _run(data_dir, day)
    assert run.wait_until("a snapshot being written", lambda: bool(list(data_dir.glob("snapshots/*/.staging-*"))))
    run.kill()
    assert _leftovers(data_dir), "the kill during extraction should have left a staging folder"

    # 2. the next run is not wedged: it extracts and loads; killed while the models build
    run = _run(data_dir, day)
    assert run.wait_until("the raw load", lambda: "loaded raw partition" in run.output), run.output[-3000:]
    run.kill()
    assert not list(data_dir.glob("snapshots/*/.staging-*")), "leftovers of the first run were not removed"

    # 3. killed while publishing: the published file's temporary copy is being written
    for _attempt in range(3):
        run = _run(data_dir, day)
        if run.wait_until("publishing", lambda: bool(list(data_dir.glob(".warehouse.duckdb.*.tmp"))), poll_s=0.001):
            run.kill()
            if _leftovers(data_dir):
                break
        else:  # the copy was too quick to catch: try again
            run.finish()
    else:
        pytest.fail("could not kill a run while it published (3 attempts)")

    # 4. a plain run finishes, removes the leftovers and yields what a clean run yields
    run = _run(data_dir, day)
    assert run.finish() == 0, run.output[-3000:]
    assert _leftovers(data_dir) == []
    _assert_same_warehouse(data_dir, reference)
    # the killed runs are not shown in progress for ever: the next start marked them failed
    import dagster as dg

    instance = dg.DagsterInstance.from_config(str(data_dir / "dagster_home"))
    statuses = [r.status for r in instance.get_runs()]
    assert statuses.count(dg.DagsterRunStatus.FAILURE) >= 3 and statuses[0] == dg.DagsterRunStatus.SUCCESS
    assert dg.DagsterRunStatus.STARTED not in statuses, statuses


def test_a_run_killed_during_extraction_leaves_the_next_good_run_no_failed_check(tmp_path):
    """The killed run's history row has unknown counts (null): no failed sum for every run after it."""
    data_dir, day = tmp_path / "data", date(2026, 11, 1)
    run = _run(data_dir, day)
    assert run.wait_until("a snapshot being written", lambda: bool(list(data_dir.glob("snapshots/*/.staging-*"))))
    run.kill()

    run = _run(data_dir, day)
    assert run.finish() == 0, run.output[-3000:]
    printed = "\n".join(run.lines)
    assert "failed check" not in printed and "/ 0 failed" in printed, printed[-3000:]
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as con:
        cur = con.execute("select * from ops.run_history order by started_at")
        names = [d[0] for d in cur.description]
        killed, good = (dict(zip(names, r, strict=True)) for r in cur.fetchall())
    assert killed["status"] == "failure" and "ended without reporting" in killed["failure_reason"], killed
    assert killed["snapshot_rows"] is None and killed["rows_keywords"] is None, killed
    assert good["status"] == "success" and good["snapshot_rows"] > 0, good
    # the good run's checks, the history's own tests (run on both rows) included, all passed
    assert good["checks_failed"] == 0 and good["failed_checks"] is None and good["checks_passed"] > 0, good


def test_two_first_runs_at_once_both_end_well_and_the_warehouse_is_consistent(demo, tmp_path):
    _, day, reference = demo
    data_dir = tmp_path / "data"
    runs = [_run(data_dir, day), _run(data_dir, day)]
    codes = [r.finish() for r in runs]
    output = "\n".join(r.output for r in runs)
    assert codes == [0, 0], output[-5000:]
    assert "already exists" not in output
    # the second run waits either for the instance lock (creating Dagster's storage) or the writer lock
    assert re.search(r"waiting for the (data folder's writer|Dagster instance) lock", output), \
        "the second run should have waited"
    _assert_same_warehouse(data_dir, reference)


def test_a_run_that_finds_the_data_folder_busy_is_refused_in_one_line(demo, tmp_path):
    from rank_pipeline.folder_lock import writer_lock

    _, day, _ = demo
    data_dir = tmp_path / "data"
    with writer_lock(data_dir, holder="another run"):
        run = _run(data_dir, day, RANK_PIPELINE_LOCK_TIMEOUT_S="0")
        code = run.finish()
    assert code == 1
    last = run.lines[-1]
    assert re.fullmatch(r"error: \S+ is in use by pid \d+ .*\(another run\).*: another run holds the data "
                        r"folder's writer lock.*retry when it has finished.*RANK_PIPELINE_LOCK_TIMEOUT_S.*", last), last
    assert not (data_dir / "snapshots").exists() and not (data_dir / "warehouse.duckdb").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


RUNS_QUERY = """
{ runsOrError { __typename ... on Runs { results { runId jobName status tags { key value } } } } }
"""


@pytest.mark.daemon  # dagster-webserver
def test_the_dagster_ui_lists_the_demos_runs(demo):
    data_dir, day, _ = demo
    home = data_dir / "dagster_home"
    port = _free_port()
    webserver = Path(sys.executable).parent / "dagster-webserver"
    proc = subprocess.Popen([str(webserver), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
                            cwd=ROOT, env=_env(data_dir, DAGSTER_HOME=str(home)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, "dagster-webserver exited"
            try:
                if httpx.get(f"{url}/server_info", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "dagster-webserver did not answer within 180 s"
            time.sleep(0.5)
        answer = httpx.post(f"{url}/graphql", json={"query": RUNS_QUERY}, timeout=60).json()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    runs = answer["data"]["runsOrError"]["results"]
    assert len(runs) == 1, json.dumps(answer)[:2000]
    (run,) = runs
    assert run["jobName"] == "daily_rank_pipeline" and run["status"] == "SUCCESS"
    assert {"key": "dagster/partition", "value": day.isoformat()} in run["tags"]
