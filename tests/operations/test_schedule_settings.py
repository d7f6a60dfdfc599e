"""The schedule's cron and time zone are settings; a bad one stops the command line and the workspace.

The schedule is read from ``workspace.yaml``'s definitions in a fresh process with the settings in the
environment, as ``dagster-daemon`` loads it; a tick is evaluated by Dagster
(``ScheduleDefinition.evaluate_tick``) to show which partition it requests.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from daemon_helpers import BIN, REPO, prepare_instance, service_env
from support import rank_pipeline

_EVALUATE = """
import json, sys
from datetime import datetime
from zoneinfo import ZoneInfo
import dagster as dg
from rank_pipeline.defs.definitions import defs
repo = defs.get_repository_def()
schedule = repo.get_schedule_def("daily_rank_pipeline_schedule")
ticks = [datetime.fromisoformat(t) for t in sys.argv[1:]]
print(json.dumps({
    "cron": schedule.cron_schedule, "timezone": schedule.execution_timezone,
    "status": schedule.default_status.value, "job": schedule.job_name,
    "partitions": [[r.partition_key for r in schedule.evaluate_tick(
        dg.build_schedule_context(scheduled_execution_time=t, repository_def=repo)).run_requests] for t in ticks],
}))
"""


def _schedule(tmp_path, *ticks: str, **settings: str) -> dict:
    env = service_env(tmp_path, **settings)
    out = subprocess.run([sys.executable, "-c", _EVALUATE, *ticks], env=env, cwd=REPO, capture_output=True,
                         text=True, timeout=180, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_default_schedule_is_on_at_0615_utc(tmp_path):
    got = _schedule(tmp_path, "2026-03-02T06:15:00+00:00")
    assert got == {"cron": "15 6 * * *", "timezone": "UTC", "status": "RUNNING", "job": "daily_rank_pipeline",
                   "partitions": [["2026-03-02"]]}


@pytest.mark.slow
def test_cron_and_timezone_settings_and_the_utc_day_partition(tmp_path):
    # 00:30 in Berlin is 23:30 UTC the day before (winter) / 22:30 (summer): the partition is the UTC day
    got = _schedule(tmp_path, "2026-03-02T00:30:00+01:00", "2026-07-02T00:30:00+02:00", "2026-07-02T12:30:00+02:00",
                    RANK_PIPELINE_SCHEDULE_CRON="30 0,12 * * *", RANK_PIPELINE_SCHEDULE_TIMEZONE="Europe/Berlin")
    assert (got["cron"], got["timezone"], got["status"]) == ("30 0,12 * * *", "Europe/Berlin", "RUNNING")
    assert got["partitions"] == [["2026-03-01"], ["2026-07-01"], ["2026-07-02"]]


@pytest.mark.parametrize(("name", "value"), [("RANK_PIPELINE_SCHEDULE_CRON", "bad"),
                                             ("RANK_PIPELINE_SCHEDULE_CRON", "61 6 * * *"),
                                             ("RANK_PIPELINE_SCHEDULE_TIMEZONE", "Mars/Olympus")])
def test_bad_setting_stops_rank_pipeline_run_with_one_line(tmp_path, name, value):
    env = service_env(tmp_path, **{name: value})
    out = rank_pipeline("run", env=env, cwd=tmp_path, timeout=120, drop=("DAGSTER_",))  # service_env drops DAGSTER_*
    assert out.returncode == 2
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and name in lines[0], out.stderr
    assert not (tmp_path / "data" / "snapshots").exists()  # nothing ran


@pytest.mark.slow
def test_bad_setting_fails_loading_the_workspace(tmp_path):
    env = service_env(tmp_path, RANK_PIPELINE_SCHEDULE_CRON="bad")
    prepare_instance(dict(env, RANK_PIPELINE_SCHEDULE_CRON=""))
    out = subprocess.run([str(BIN / "dagster"), "definitions", "validate", "-w", "workspace.yaml"], env=env,
                         cwd=REPO, capture_output=True, text=True, timeout=180)
    assert out.returncode != 0
    errors = [line for line in (out.stdout + out.stderr).splitlines() if "ConfigurationError: " in line]
    assert errors and "RANK_PIPELINE_SCHEDULE_CRON='bad' is not a 5-field cron expression" in errors[0], out.stderr
