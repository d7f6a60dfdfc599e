"""Run tags naming the process that runs a run (pid, host, boot id), so a later check can tell that it died.

Passed at launch by the command line (:func:`process_tags`) and recorded by the run itself otherwise
(:func:`record_process_tags`, from the ``warehouse`` resource); read by :mod:`rank_pipeline.defs.dead_runs`.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import dagster as dg

from rank_pipeline.operations.dagster_names import BOOT_TAG, HOST_TAG, PID_TAG

__all__ = ["boot_id", "process_tags", "record_process_tags"]

_BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str:
    """This machine's boot id (Linux; changes at every boot), or "" where there is none."""
    try:
        return _BOOT_ID_FILE.read_text().strip()
    except OSError:
        return ""


def process_tags() -> dict[str, str]:
    """Run tags naming this process (pid, host, boot id), so a later check can tell that the run's
    process died: ``rank_pipeline/pid``, ``rank_pipeline/host``, ``rank_pipeline/boot_id``."""
    tags = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}
    if boot := boot_id():
        tags[BOOT_TAG] = boot
    return tags


def record_process_tags(instance: dg.DagsterInstance, run: dg.DagsterRun) -> None:
    """Tag ``run`` with this process (:func:`process_tags`) unless it names one already: called when a run's
    resources start, so a run the daemon or UI launched can be marked failed when killed.
    """
    if PID_TAG not in run.tags:
        instance.add_run_tags(run.run_id, process_tags())
