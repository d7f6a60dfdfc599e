"""Dagster's instance storage on a real PostgreSQL server (``RANK_PIPELINE_DAGSTER_PG_URL``).

The test starts PostgreSQL itself (Debian's ``postgresql`` package, which ``make test`` installs when
``initdb`` is missing): ``initdb`` with a password, then ``pg_ctl start`` on a free loopback port in a
temporary folder, as the ``postgres`` user when run as root (PostgreSQL refuses root); stopped after.
Then ``rank-pipeline run`` and Dagster's own ``dagster`` command run as subprocesses with the URL in
their environment.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from daemon_helpers import free_port
from support import PARTITION_START, command_env, rank_pipeline_argv, require

# the tests using pg_server are marked postgres too (tests/conftest.py)
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("postgres"), pytest.mark.timeout(900)]

BIN = Path(sys.executable).parent
PASSWORD = "s3cret-Pw-9f2c"  # the URL's password: it must appear nowhere
DAY = "2026-11-01"


def _pg_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


@pytest.fixture(scope="module")
def pg_server():
    """A PostgreSQL server on 127.0.0.1:<free port> with database ``dagster``; yields its URL."""
    require(importlib.util.find_spec("psycopg2"), "the 'postgres' extra is not installed: make env")
    import psycopg2

    pg_bin = _pg_bin()
    require(pg_bin, "PostgreSQL's server (initdb) is not installed: `make test` installs Debian's postgresql "
                    "when run as root, or run `apt-get install postgresql`")
    as_user: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="rank-pipeline-pg-", dir="/tmp"))
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        require(shutil.which("runuser"), "running as root without runuser: cannot start PostgreSQL as an "
                                         "unprivileged user")
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, "postgres", "postgres")
    data, pwfile, log = root / "pgdata", root / "pw", root / "server.log"
    pwfile.write_text(PASSWORD + "\n")
    if as_user:
        shutil.chown(pwfile, "postgres", "postgres")
    subprocess.run([*as_user, str(pg_bin / "initdb"), "-D", str(data), "-U", "dagster", "--pwfile", str(pwfile),
                    "--auth", "scram-sha-256", "-E", "UTF8", "--no-sync"], check=True, capture_output=True)
    port = free_port()
    subprocess.run([*as_user, str(pg_bin / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "120",
                    "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off", "start"],
                   check=True, capture_output=True)
    try:
        con = psycopg2.connect(host="127.0.0.1", port=port, user="dagster", password=PASSWORD, dbname="postgres")
        con.autocommit = True  # CREATE DATABASE runs outside a transaction
        con.cursor().execute("create database dagster")
        con.close()
        yield f"postgresql+psycopg2://dagster:{PASSWORD}@127.0.0.1:{port}/dagster"
    finally:
        subprocess.run([*as_user, str(pg_bin / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def _env(data_dir: Path, pg_url: str | None, **extra: str) -> dict[str, str]:
    env = command_env({"RANK_PIPELINE_DATA_DIR": str(data_dir), **PARTITION_START})
    if pg_url:
        env["RANK_PIPELINE_DAGSTER_PG_URL"] = pg_url
    env.update(extra)
    return env


def _run(cmd: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=Path(__file__).parents[2])


def _query(url: str, sql: str, *params: object) -> list[tuple]:
    import psycopg2  # the 'postgres' extra: pg_server required it

    con = psycopg2.connect(url.replace("+psycopg2", ""))  # libpq's form of the URL
    try:
        with con.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def pg_run(pg_server, tmp_path_factory):
    """``rank-pipeline run --date DAY`` with the PostgreSQL storage; yields (data dir, completed process)."""
    data = tmp_path_factory.mktemp("pg") / "data"
    done = _run([*rank_pipeline_argv(), "run", "--date", DAY], _env(data, pg_server))
    return data, done


def test_a_run_stores_its_run_events_and_checks_in_postgresql_not_sqlite(pg_server, pg_run, monkeypatch):
    import dagster as dg

    from rank_pipeline.defs.definitions import defs
    from rank_pipeline.defs.jobs import DAILY_JOB_NAME

    data, done = pg_run
    assert done.returncode == 0, done.stdout + done.stderr
    home = data / "dagster_home"
    config = (home / "dagster.yaml").read_text()
    assert "postgres_url:\n      env: RANK_PIPELINE_DAGSTER_PG_URL" in config
    # no SQLite run storage, event log or schedule storage was written under DAGSTER_HOME
    assert sorted(p.relative_to(home) for p in home.rglob("*.db")) == []

    # the run is in PostgreSQL (read with psycopg2: Dagster's own tables)
    runs = _query(pg_server, "select run_id, status, pipeline_name from runs")
    assert [(status, job) for _, status, job in runs] == [("SUCCESS", DAILY_JOB_NAME)]
    run_id = runs[0][0]
    types = dict(_query(pg_server, "select dagster_event_type, count(*) from event_logs where run_id = %s "
                                   "group by 1", run_id))
    assert types.get("ASSET_MATERIALIZATION", 0) > 0 and types.get("ASSET_CHECK_EVALUATION", 0) > 0

    # the same instance as Dagster opens it from that dagster.yaml: every asset and every asset check of
    # the job, by key (sets, not counts)
    monkeypatch.setenv("RANK_PIPELINE_DAGSTER_PG_URL", pg_server)
    job = defs.resolve_job_def(DAILY_JOB_NAME)
    want_assets = set(job.asset_layer.executable_asset_keys)
    want_checks = set(job.asset_layer.asset_graph.asset_check_keys)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        run = instance.get_run_by_id(run_id)
        assert run.tags.get("dagster/partition") == DAY
        mats = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records
        assert {r.event_log_entry.dagster_event.asset_key for r in mats} == want_assets
        evals = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records
        got_checks = {r.event_log_entry.dagster_event.event_specific_data.asset_check_key for r in evals}
        assert got_checks == want_checks
        assert all(r.event_log_entry.dagster_event.event_specific_data.passed for r in evals)


def test_dagster_itself_opens_the_instance_and_keeps_the_schedule_state_in_postgresql(pg_server, pg_run):
    from rank_pipeline.defs.jobs import DAILY_SCHEDULE_NAME

    data, done = pg_run
    assert done.returncode == 0, done.stdout + done.stderr
    env = _env(data, pg_server, DAGSTER_HOME=str(data / "dagster_home"))
    info = _run([str(BIN / "dagster"), "instance", "info"], env)
    assert info.returncode == 0, info.stdout + info.stderr
    for storage in ("PostgresRunStorage", "PostgresEventLogStorage", "PostgresScheduleStorage"):
        assert storage in info.stdout, info.stdout
    # the schedule is on by default (a state Dagster does not store); stopping it is stored
    started = _run([str(BIN / "dagster"), "schedule", "stop", DAILY_SCHEDULE_NAME, "-w", "workspace.yaml"], env)
    assert started.returncode == 0, started.stdout + started.stderr
    states = _query(pg_server, "select selector_id, status from instigators")
    assert ("STOPPED" in {status for _, status in states}), states
    listed = _run([str(BIN / "dagster"), "schedule", "list", "-w", "workspace.yaml", "--stopped"], env)
    assert DAILY_SCHEDULE_NAME in listed.stdout, listed.stdout + listed.stderr
    for text in (info.stdout, info.stderr, started.stdout, started.stderr):
        assert PASSWORD not in text


def test_the_password_appears_in_no_file_output_or_run_record(pg_server, pg_run):
    data, done = pg_run
    assert done.returncode == 0, done.stdout + done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    files = [p for p in data.rglob("*") if p.is_file()]
    assert any(p.parent.name == "logs" for p in files)  # the log file was written
    leaked = [str(p) for p in files if PASSWORD.encode() in p.read_bytes()]
    assert leaked == []
    like = f"%{PASSWORD}%"
    rows = _query(pg_server, "select count(*) from runs where run_body like %s", like)
    events = _query(pg_server, "select count(*) from event_logs where event like %s", like)
    assert rows == [(0,)] and events == [(0,)]


def test_an_unreachable_or_refused_postgresql_is_one_line_status_2_without_the_password(pg_server, tmp_path):
    port = free_port()  # nothing listens there
    wrong_password = pg_server.replace(PASSWORD, "wrong-" + PASSWORD)
    for url in (f"postgresql+psycopg2://dagster:{PASSWORD}@127.0.0.1:{port}/dagster", wrong_password):
        done = _run([*rank_pipeline_argv(), "run", "--date", DAY], _env(tmp_path / "data", url), timeout=120)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 2, done.stdout + done.stderr
        assert len(lines) == 1 and lines[0].startswith("error: cannot open Dagster's PostgreSQL storage at 127.0.0.1:")
        assert "RANK_PIPELINE_DAGSTER_PG_URL" in lines[0]
        assert PASSWORD not in done.stdout + done.stderr
        assert not list((tmp_path / "data").rglob(f"*{PASSWORD}*"))


def test_without_the_postgres_extra_one_line_says_to_install_it(tmp_path):
    hide = tmp_path / "hide"
    hide.mkdir()  # a Python where `import dagster_postgres` fails, as without the extra
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['dagster_postgres'] = None\n")
    env = _env(tmp_path / "data", f"postgresql+psycopg2://dagster:{PASSWORD}@127.0.0.1:5432/dagster", PYTHONPATH=str(hide))
    done = _run([*rank_pipeline_argv(), "run", "--date", DAY], env, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and "rank-pipeline[postgres]" in lines[0], lines
    assert PASSWORD not in done.stdout + done.stderr
