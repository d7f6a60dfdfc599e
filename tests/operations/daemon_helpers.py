"""Starting and stopping Dagster's services as a user does, for the tests of tests/ops.

Every process is started in its own session (process group), so the test can signal or kill the whole
tree (service, code server, run workers) and check that nothing is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from support import PARTITION_START, command_env

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
T = TypeVar("T")


def service_env(tmp: Path, **extra: str) -> dict[str, str]:
    """A clean environment (no RANK_*, no DAGSTER_HOME of the caller) on a temporary data folder and
    DAGSTER_HOME, embedded sandbox (no RANK_TRACKER_BASE_URL), plus ``extra``."""
    return command_env({"RANK_PIPELINE_DATA_DIR": str(tmp / "data"), "DAGSTER_HOME": str(tmp / "dagster_home"),
                        **PARTITION_START, **extra}, drop=("DAGSTER_",))


def prepare_instance(env: dict[str, str]) -> Path:
    """Write DAGSTER_HOME's dagster.yaml the documented way (``python -m rank_pipeline.defs.instance``)."""
    subprocess.run([str(BIN / "python"), "-m", "rank_pipeline.defs.instance"], env=env, cwd=REPO, check=True,
                   capture_output=True, text=True, timeout=120)
    return Path(env["DAGSTER_HOME"])


def start(cmd: list[str], env: dict[str, str], log: Path, *, ignore_sigint: bool = False) -> subprocess.Popen:
    """Start ``cmd`` in its own session from the repository root; output goes to ``log``.

    ``ignore_sigint``: start it as a non-interactive shell starts a background job (SIGINT ignored).
    """
    preexec = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=preexec)


def group_members(pgid: int) -> list[str]:
    """The live (not zombie) processes of process group ``pgid``, as ``"pid cmdline"`` lines."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            state, group = fields[0], int(fields[2])
            if group != pgid or state in ("Z", "X"):
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError):
            continue
        alive.append(f"{entry.name} {cmdline[:160]}")
    return alive


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL every process of ``proc``'s session and reap ``proc`` (for finally blocks)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(30)


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, interval: float = 1.0,
             log: Path | None = None) -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout`` seconds saying ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            tail = ""
            if log is not None and log.exists():
                tail = "\n--- log tail ---\n" + "\n".join(log.read_text(errors="replace").splitlines()[-30:])
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{tail}")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(cmd: list[str], env: dict[str, str], log: Path, **kwargs) -> Iterator[subprocess.Popen]:
    """``start`` ``cmd``; on exit SIGTERM its process group, then SIGKILL what is left after 30 s."""
    proc = start(cmd, env, log, **kwargs)
    try:
        yield proc
    finally:
        stop_group(proc)


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM ``proc``'s process group, wait up to 30 s, then SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        pass
    kill_group(proc)
