"""A project made by ``rank-pipeline init`` (the repository's venv), met as a user meets it, in subprocesses:
its partitions start on ``partition_start`` in ``defs.yaml`` (the environment overriding it), else on the
data folder's first snapshot day, else on init's day; the demo on a fresh data folder gives only its days; a
start that would drop them is refused in one line, as is ``--date`` before a start set; and ``dg dev``, with no
variable set, shows the demo's runs and materializations (``DAGSTER_HOME`` from the project's ``.env``).

The partitions are counted through the Definitions the project's component loads (``load_from_defs_folder`` in
a subprocess, as ``dg`` loads them); the runs through the GraphQL of ``dg dev``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from support import command_env, rank_pipeline_argv

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e_project_partitions")]

BIN = Path(sys.executable).parent
LOAD = """
import json, warnings
from pathlib import Path
warnings.filterwarnings("ignore")
from dagster.components import load_from_defs_folder
defs = load_from_defs_folder(path_within_project=Path.cwd() / "src" / "proj")
print(json.dumps(defs.resolve_job_def("daily_rank_pipeline").partitions_def.get_partition_keys()))
"""


def _env(**extra: str) -> dict[str, str]:
    env = command_env(drop=("PYTHONPATH",))
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["DAGSTER_DISABLE_TELEMETRY"] = "1"
    return env | extra


def _run(args: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=_env(**extra), capture_output=True, text=True, timeout=600)


def _init(tmp_path: Path) -> Path:
    proc = _run([*rank_pipeline_argv(), "init", "proj"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "proj"


def _partitions(project: Path, **extra: str) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-c", LOAD], project, PYTHONPATH=str(project / "src"), **extra)


def _keys(project: Path, **extra: str) -> list[str]:
    proc = _partitions(project, **extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _set_start(project: Path, day: str | None) -> None:
    """Write ``partition_start: day`` into the project's defs.yaml (None: comment it out, as init leaves it)."""
    defs_yaml = project / "src" / "proj" / "defs" / "rank" / "defs.yaml"
    text = re.sub(r"^  #? ?partition_start: \S+", f"  partition_start: {day}" if day else "  # partition_start: -",
                  defs_yaml.read_text(), count=1, flags=re.M)
    assert "partition_start" in text
    defs_yaml.write_text(text)


def _days(first, n: int) -> list[str]:
    return [(first + timedelta(days=i)).isoformat() for i in range(n)]


def _keys_from(project: Path, first: date, **env: str) -> list[str]:
    """The partition keys listed in ``project``, checked to be the days from ``first`` to the listing's today,
    which the clock read on either side of the listing bounds (the test can cross midnight, UTC)."""
    low = datetime.now(UTC).date()
    keys = _keys(project, **env)
    assert keys == _days(first, len(keys)), keys
    assert date.fromisoformat(keys[-1]) in {low, datetime.now(UTC).date()}, keys
    return keys


def test_partition_start_in_defs_yaml_gives_that_many_partitions_and_the_environment_overrides_it(tmp_path):
    before = datetime.now(UTC).date()
    project = _init(tmp_path)
    started = date.fromisoformat(re.search(r"^started = (\S+)$", (project / "pyproject.toml").read_text(),
                                           re.M).group(1))
    assert started in {before, datetime.now(UTC).date()}  # init's day
    assert _keys_from(project, started)[0] == started.isoformat()  # no snapshot yet: from init's day

    _set_start(project, (started - timedelta(days=9)).isoformat())
    assert len(_keys_from(project, started - timedelta(days=9))) >= 10
    assert len(_keys_from(project, started - timedelta(days=2),
                          RANK_PIPELINE_PARTITION_START=(started - timedelta(days=2)).isoformat())) >= 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": query}).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["data"]


@pytest.mark.daemon
@pytest.mark.timeout(900)
def test_the_demo_gives_its_days_keeps_them_and_dg_dev_shows_its_runs(tmp_path):
    project = _init(tmp_path)
    home = project / "data" / "dagster_home"
    assert (project / ".env").read_text().splitlines()[-1] == f"DAGSTER_HOME={home}"
    assert (home / "dagster.yaml").is_file()

    demo = _run([*rank_pipeline_argv(), "demo", "--days", "2"], project)
    assert demo.returncode == 0, demo.stderr[-3000:]
    run_id, first, last = re.search(r"^run (\S+): one run of the daily job materialized 2 partition\(s\), (\S+) \.\. "
                                    r"(\S+)$", demo.stdout, re.M).groups()
    yesterday, today = date.fromisoformat(first), date.fromisoformat(last)  # the demo's, should midnight pass
    _keys_from(project, yesterday)

    _set_start(project, today.isoformat())  # would drop yesterday's partition
    refused = _partitions(project)
    assert refused.returncode != 0
    lines = [line for line in refused.stderr.splitlines() if f"partition_start {today} is after {yesterday}" in line]
    assert lines and lines[0].endswith("or remove it (the default is the first snapshot day)"), refused.stderr[-3000:]
    _set_start(project, None)

    earlier = yesterday - timedelta(days=1)
    low = datetime.now(UTC).date()  # the command's today is between the two readings (midnight can pass)
    before = _run([*rank_pipeline_argv(), "run", "--date", earlier.isoformat()], project,
                  RANK_PIPELINE_PARTITION_START=yesterday.isoformat())
    assert before.returncode == 2
    assert before.stderr.strip().splitlines() in [[
        f"error: --date {earlier} is before the first daily partition {yesterday} (RANK_PIPELINE_PARTITION_START): "
        f"pass a date from {yesterday} to {day}, or set RANK_PIPELINE_PARTITION_START to {earlier} or earlier"]
        for day in (low, datetime.now(UTC).date())]

    port = _free_port()
    dev = subprocess.Popen([str(BIN / "dg"), "dev", "--port", str(port)], cwd=project, start_new_session=True,
                           env=_env(PYTHONPATH=str(project / "src")), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        deadline, runs = time.monotonic() + 240, None
        while time.monotonic() < deadline and runs is None:
            try:
                runs = _graphql(port, "{ runsOrError { ... on Runs { results { runId status } } } }")
            except OSError:
                time.sleep(2)
        assert runs is not None, "dg dev did not answer"
        assert {"runId": run_id, "status": "SUCCESS"} in runs["runsOrError"]["results"]
        asset = _graphql(port, '{ assetOrError(assetKey: {path: ["marts", "fct_keyword_rankings_daily"]}) '
                               '{ ... on Asset { assetMaterializations { partition runId } } } }')
        materialized = asset["assetOrError"]["assetMaterializations"]
        assert sorted((m["partition"], m["runId"]) for m in materialized) == \
            [(day, run_id) for day in _days(yesterday, 2)]
    finally:
        os.killpg(dev.pid, signal.SIGTERM)
        try:
            dev.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(dev.pid, signal.SIGKILL)
            dev.wait(timeout=30)
