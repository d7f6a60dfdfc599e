"""Freshness and the alert sensors under the real ``dagster-daemon``.

The daemon runs over the project's ``workspace.yaml`` on the data folder's ``DAGSTER_HOME`` with
``RANK_PIPELINE_FRESHNESS_HOURS=0.025`` (90 s) and ``RANK_PIPELINE_ALERT_URLS`` naming an HTTP receiver
on loopback. ``rank-pipeline demo --days 2`` (one run over both days) then runs on the same instance
WITHOUT alert URLS, so any digest that arrives was sent by the daemon's sensors. The test reads Dagster's own freshness states:
every mart and ``warehouse/published`` passes right after the runs and fails once 90 s passed without a
materialization; the freshness digest names them all."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from support import PARTITION_START, command_env, rank_pipeline

pytestmark = [pytest.mark.e2e, pytest.mark.daemon, pytest.mark.xdist_group("e2e_daemon_freshness_alerts")]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
HOURS = 0.025


def wait_for(predicate, timeout: float, what: str, interval: float = 0.5):
    """Poll ``predicate`` until it returns something true; fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    return command_env({"RANK_PIPELINE_DATA_DIR": str(data_dir), "DAGSTER_HOME": str(data_dir / "dagster_home"),
                        "RANK_PIPELINE_FRESHNESS_HOURS": str(HOURS), **PARTITION_START, **extra})


def _states(instance: dg.DagsterInstance, keys) -> dict[str, str]:
    records = instance.get_freshness_state_records(list(keys))
    return {k.to_user_string(): records[k].freshness_state.value for k in keys if k in records}


def test_daemon_evaluates_freshness_and_its_sensors_send_the_digests(tmp_path, http_receiver):
    bodies, hook_url = http_receiver
    # the instance (dagster.yaml) exists before the daemon starts: a one-day run without alert URLs
    from rank_pipeline.defs.instance import open_instance

    os.environ.pop("DAGSTER_HOME", None)
    instance = open_instance(tmp_path)
    daemon_env = _env(tmp_path, RANK_PIPELINE_ALERT_URLS=hook_url, FRESHNESS_DAEMON_INTERVAL_SECONDS="5")
    daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", str(ROOT / "workspace.yaml")],
                              cwd=ROOT, env=daemon_env, stdout=subprocess.DEVNULL,
                              stderr=open(tmp_path / "daemon.log", "wb"), start_new_session=True)
    try:
        # the sensors have ticked once (a run status sensor only watches runs ending after its first tick)
        def sensors_ticked():
            states = [s for s in instance.all_instigator_state() if s.instigator_name.startswith("alerts_on_")]
            ticked = {s.instigator_name for s in states if instance.get_ticks(s.instigator_origin_id,
                                                                               s.selector_id, limit=1)}
            return ticked >= {"alerts_on_run_success", "alerts_on_run_failure", "alerts_on_stale_assets"}
        wait_for(sensors_ticked, 180, "the alert sensors' first ticks (see daemon.log)", interval=2)

        demo = rank_pipeline("demo", "--days", "2", env=_env(tmp_path), timeout=600)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        finished = time.time()
        from rank_pipeline.defs.definitions import defs
        from rank_pipeline.defs.freshness import is_watched

        watched = [k for k in defs.resolve_asset_graph().get_all_asset_keys() if is_watched(k)]
        assert len(watched) == sum(1 for p in (ROOT / "dbt_like_sql/marts").glob("*.sql")) + 1

        # fresh: the freshness daemon records PASS for every watched asset within the window
        passing = wait_for(lambda: (s := _states(instance, watched)) and len(s) == len(watched)
                           and set(s.values()) == {"PASS"} and s, 80, "every mart PASS", interval=1)
        assert time.time() - finished < HOURS * 3600, "the machine was too slow to see PASS in time"
        assert "warehouse/published" in passing

        # the run status sensor sent the digest of the demo's one run over both days (the demo itself had no
        # alert URLs)
        first, last = re.search(r"materialized 2 partition\(s\), (\S+) \.\. (\S+)$", demo.stdout, re.M).groups()
        days = f"{first}..{last}"  # the demo's, should midnight, UTC, pass since
        digest = wait_for(lambda: [b["json"] for b in bodies if b["json"]["title"].startswith(f"rank-pipeline {days}")],
                          120, "the daemon's run digest")
        assert len(digest) == 1 and "Keywords entering the top" in digest[0]["message"]

        # stale: no materialization for 90 s -> FAIL, and one freshness digest naming every watched asset
        failing = wait_for(lambda: (s := _states(instance, watched)) and set(s.values()) == {"FAIL"} and s,
                           HOURS * 3600 + 120, "every mart FAIL")
        assert set(failing) == {k.to_user_string() for k in watched}
        # the sensor sends what failed since its last look: assets that turned FAIL between two of its
        # ticks come in separate digests, each asset in exactly one
        def counted() -> list[int]:
            found = [re.search(r"Assets failing their freshness policy: (\d+)", b["json"]["message"])
                     for b in bodies if "freshness" in b["json"]["title"]]
            return [int(m.group(1)) for m in found if m]

        wait_for(lambda: sum(counted()) >= len(watched) or None, 120, "freshness digests naming every watched asset")
        assert sum(counted()) == len(watched), counted()
        stale = [b["json"]["message"] for b in bodies if "freshness" in b["json"]["title"]]
        listed = {line[2:].split(": last materialized")[0] for m in stale for line in m.splitlines()
                  if line.startswith("- ") and ": last materialized" in line}
        assert listed and listed <= {k.to_user_string() for k in watched}, listed
        # two more ticks of the sensor on the same failures send nothing more (the ledger)
        sent = len(stale)
        ticks = len(instance.get_ticks(*_stale_sensor(instance), limit=1000))
        wait_for(lambda: len(instance.get_ticks(*_stale_sensor(instance), limit=1000)) >= ticks + 2, 150,
                 "two more ticks of alerts_on_stale_assets")
        assert len([b for b in bodies if "freshness" in b["json"]["title"]]) == sent
        assert sum(counted()) == len(watched)
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        try:
            daemon.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait(10)


def _stale_sensor(instance):
    state = next(s for s in instance.all_instigator_state() if s.instigator_name == "alerts_on_stale_assets")
    return state.instigator_origin_id, state.selector_id
