"""Runs still "started" whose process is gone (killed), marked failed from their process tags.

Called when the command line opens the instance (:func:`rank_pipeline.defs.instance.open_instance`) and by the
daemon's sensor (:mod:`rank_pipeline.defs.run_monitoring`); the tags are :mod:`rank_pipeline.defs.process_tags`'.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

import dagster as dg

from rank_pipeline.defs.process_tags import boot_id
from rank_pipeline.operations.dagster_names import BOOT_TAG, HOST_TAG, PID_TAG

__all__ = ["fail_dead_runs"]

def fail_dead_runs(instance: dg.DagsterInstance, *, log: Callable[[str], object] | None = None) -> list[str]:
    """Mark failed the runs of this host still "started" whose process is gone (no process with its pid, or the
    machine booted since: another boot id); returns the run ids marked.

    A killed run cannot report its end; this keeps the run list truthful. Called when the command line opens
    the instance and by the sensor ``fail_dead_runs_sensor``.
    """
    marked = []
    boot = boot_id()
    runs = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING],
                                           tags={HOST_TAG: socket.gethostname()}))
    for run in runs:
        pid = run.tags.get(PID_TAG, "")
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        rebooted = bool(boot) and run.tags.get(BOOT_TAG, boot) != boot
        if not rebooted and _alive(int(pid)):
            continue
        instance.report_run_failed(run, f"the run's process (pid {pid}) ended without reporting: it was killed")
        marked.append(run.run_id)
        if log:
            log(f"marked run {run.run_id} failed: its process (pid {pid}) was killed")
    return marked


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
