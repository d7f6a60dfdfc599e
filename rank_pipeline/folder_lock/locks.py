"""The data folder's locks, released by the OS when a run dies (``fcntl.flock`` under ``<data_dir>/.locks/``):
``writer``, ``writer-shard-<i>-of-<n>`` and ``instance``; a waiter raises :class:`LockTimeout` after
``RANK_PIPELINE_LOCK_TIMEOUT_S`` (docs/concepts/operations.md, "The data folder's locks").
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rank_pipeline.errors import RankPipelineError
from rank_pipeline.folder_lock.leftovers import remove_leftovers
from rank_pipeline.settings import LOCK_TIMEOUT_ENV, Shard, lock_timeout_from_env

__all__ = [
    "LOCK_DIR_NAME",
    "DataFolderLock",
    "LockTimeout",
    "hold_shard_writer",
    "hold_writer",
    "instance_lock",
    "writer_lock",
]

log = logging.getLogger(__name__)

LOCK_DIR_NAME = ".locks"
"""Folder of the lock files, under the data folder."""

WRITER = "writer"
SHARD_WRITER_PREFIX = f"{WRITER}-shard-"
"""A shard's writer lock is ``<this><i>-of-<n>`` (:func:`hold_shard_writer`)."""
INSTANCE = "instance"

_PURPOSES = {
    WRITER: "the data folder's writer lock (one run at a time extracts, loads, builds and publishes)",
    INSTANCE: "the Dagster instance lock (creating its SQLite storage)",
}


class LockTimeout(RankPipelineError, RuntimeError):
    """The lock stayed held by another process for longer than the timeout; the message is one line."""

    __module__ = "rank_pipeline.folder_lock"  # its public name, as the exit-statuses page lists it (re-exported there)


@dataclass
class _Held:
    fd: int
    thread: int
    depth: int


_held: dict[str, _Held] = {}
_held_guard = threading.Lock()


class DataFolderLock:
    """An exclusive, OS-released lock ``<data_dir>/.locks/<name>.lock``, a context manager re-entrant within its
    thread: ``timeout_s`` to wait (None: :func:`lock_timeout_from_env`), ``holder`` shown to waiters, ``log``
    for the one-line wait message, ``poll_s`` between attempts.

    Raises LockTimeout (on :meth:`acquire`, held elsewhere past ``timeout_s``) or ConfigurationError (a
    malformed ``RANK_PIPELINE_LOCK_TIMEOUT_S``).
    """

    def __init__(
        self,
        data_dir: Path | str,
        name: str = WRITER,
        *,
        timeout_s: float | None = None,
        holder: str = "",
        log: Callable[[str], object] | None = None,
        poll_s: float = 0.2,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.name = name
        self.path = self.data_dir / LOCK_DIR_NAME / f"{name}.lock"
        self.timeout_s = lock_timeout_from_env() if timeout_s is None else float(timeout_s)
        self.holder = holder
        self._log = log or _default_log
        self.poll_s = poll_s
        self._acquired = False
        self.reentered = False
        """True when this thread already held the lock (an outer holder took care of the leftovers)."""

    @property
    def purpose(self) -> str:
        if self.name.startswith(SHARD_WRITER_PREFIX):
            shard = self.name.removeprefix(SHARD_WRITER_PREFIX)
            return f"the writer lock of shard {shard} (one run at a time extracts a shard)"
        return _PURPOSES.get(self.name, f"the {self.name} lock")

    def acquire(self) -> DataFolderLock:
        key = str(self.path)
        me = threading.get_ident()
        with _held_guard:
            held = _held.get(key)
            if held is not None and held.thread == me:
                held.depth += 1
                self._acquired = self.reentered = True
                return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self._wait_for(fd)
        except BaseException:
            os.close(fd)
            raise
        info = {"pid": os.getpid(), "host": socket.gethostname(), "holder": self.holder,
                "since": datetime.now(UTC).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        with _held_guard:
            _held[key] = _Held(fd, me, 1)
        self._acquired, self.reentered = True, False
        return self

    def _wait_for(self, fd: int) -> None:
        deadline = time.monotonic() + self.timeout_s
        next_note = 0.0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
            now = time.monotonic()
            who = self._describe_holder(fd)
            if now >= deadline:
                if self.timeout_s == 0:
                    raise LockTimeout(
                        f"{self.data_dir} is in use by {who}: another run holds {self.purpose}; "
                        f"retry when it has finished (or set {LOCK_TIMEOUT_ENV} to wait for it)"
                    )
                raise LockTimeout(
                    f"gave up after {self.timeout_s:g} s waiting for {self.purpose} on {self.data_dir}, "
                    f"held by {who}; let that run finish (or end it) and retry, or raise {LOCK_TIMEOUT_ENV}"
                )
            if now >= next_note:
                self._log(
                    f"waiting for {self.purpose} on {self.data_dir}, held by {who} "
                    f"(giving up after {self.timeout_s:g} s; {LOCK_TIMEOUT_ENV})"
                )
                next_note = now + 60.0
            time.sleep(min(self.poll_s, max(deadline - now, 0.0)))

    def _describe_holder(self, fd: int) -> str:
        try:
            info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
        except (OSError, ValueError):
            info = {}
        if not isinstance(info, dict) or "pid" not in info:
            return "another process"
        what = f" ({info['holder']})" if info.get("holder") else ""
        return f"pid {info['pid']} on {info.get('host', '?')}{what} since {info.get('since', '?')}"

    def release(self) -> None:
        if not self._acquired:
            return
        self._acquired = False
        with _held_guard:
            held = _held[str(self.path)]
            held.depth -= 1
            if held.depth:
                return
            del _held[str(self.path)]
        try:
            os.ftruncate(held.fd, 0)
            fcntl.flock(held.fd, fcntl.LOCK_UN)
        finally:
            os.close(held.fd)

    def __enter__(self) -> DataFolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _default_log(message: str) -> None:
    log.info(message)


def writer_lock(data_dir: Path | str, *, holder: str = "", log: Callable[[str], object] | None = None,
                timeout_s: float | None = None) -> DataFolderLock:
    """The data folder's ``writer`` lock (docs/concepts/operations.md, "The data folder's locks"); enter it
    before writing anything."""
    return DataFolderLock(data_dir, WRITER, holder=holder, log=log, timeout_s=timeout_s)


@contextmanager
def hold_writer(data_dir: Path | str, *, holder: str = "", log: Callable[[str], object] | None = None,
                timeout_s: float | None = None) -> Iterator[DataFolderLock]:
    """Hold the data folder's ``writer`` lock for the ``with`` block, the outermost hold of a thread first removing
    dead runs' leftovers (:func:`rank_pipeline.folder_lock.leftovers.remove_leftovers`): what every step that
    writes the folder enters. Raises LockTimeout: held elsewhere past ``timeout_s`` (one line).
    """
    with writer_lock(data_dir, holder=holder, log=log, timeout_s=timeout_s) as lock:
        if not lock.reentered:
            remove_leftovers(data_dir, log=log)
        yield lock


@contextmanager
def hold_shard_writer(data_dir: Path | str, shard: Shard, *, holder: str = "",
                      log: Callable[[str], object] | None = None,
                      timeout_s: float | None = None) -> Iterator[DataFolderLock]:
    """Hold ``shard``'s writer lock (``writer-shard-<i>-of-<n>``) for the ``with`` block, instead of
    :func:`hold_writer`; removes no leftovers (a shard stages nothing).
    Raises LockTimeout: held elsewhere past ``timeout_s`` (one line).
    """
    with DataFolderLock(data_dir, f"{SHARD_WRITER_PREFIX}{shard.key}", holder=holder, log=log,
                        timeout_s=timeout_s) as lock:
        yield lock


def instance_lock(data_dir: Path | str, *, log: Callable[[str], object] | None = None,
                  timeout_s: float | None = None) -> DataFolderLock:
    """The ``instance`` lock: hold it while creating or opening the Dagster instance's storage."""
    return DataFolderLock(data_dir, INSTANCE, holder="opening the Dagster instance", log=log, timeout_s=timeout_s)

