"""The Dagster instance of a data folder: ``DAGSTER_HOME`` (default ``<data_dir>/dagster_home``).

:func:`open_instance` writes ``dagster.yaml`` when missing (or when it is one this project wrote
earlier) and opens the instance under the data folder's ``instance`` lock
(:mod:`rank_pipeline.runlock`), so two first runs at once do not both create the SQLite tables.
The same ``dagster.yaml`` is read by ``dagster dev`` / ``dagster-webserver`` (``make dev``), so runs of
``rank-pipeline run`` and ``demo`` are listed in the UI.

Run storage is Dagster's SQLite storage, with one change in the event log
(:class:`PooledSqliteEventLogStorage`): Dagster's stock SQLite event log opens a new SQLAlchemy engine
and connection for every event, commits it with a full ``fsync`` and closes the connection, and closing
the last connection of a WAL database checkpoints it (more ``fsync``). A daily run stores about 800
events (about 250 of them asset-check events, each written to two databases), and that I/O made a run
about 4x slower than on an in-memory instance (docs/architecture.md, "Operations"). Here each shard
keeps one engine and one pooled connection, and commits use ``PRAGMA synchronous=NORMAL`` (safe in WAL
mode: a crash of the process loses nothing committed; a power cut can lose the last few events, never
corrupt the file).

Every run carries its process's pid, host and boot id as tags (:func:`process_tags`: passed at launch by
the command line, recorded by the run itself otherwise, :func:`record_process_tags`); runs still
"started" whose process is gone (killed) are marked failed (:func:`fail_dead_runs`) at the command
line's next start and by the daemon's sensor. Dagster's run monitoring is on (:data:`RUN_MONITORING_CONFIG`).

No pool concurrency is configured: nothing in the pipeline depends on a Dagster pool slot being freed
(a killed run used to keep its slot and wedge every later run); runs serialize on an OS lock instead
(:func:`rank_pipeline.runlock.writer_lock`, taken by the ``warehouse`` resource).
"""

from __future__ import annotations

import os
import socket
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import sqlalchemy as sa
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME, SqliteEventLogStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS

from rank_pipeline.runlock import instance_lock

__all__ = [
    "PooledSqliteEventLogStorage",
    "dagster_home",
    "fail_dead_runs",
    "instance_config",
    "lock_timeout_message",
    "open_instance",
    "process_tags",
    "record_process_tags",
]

_MARKER = "# written by rank-pipeline"
# what earlier versions wrote: pools of one slot, which a killed run kept claimed for ever
_LEGACY_CONFIG = "concurrency:\n  pools:\n    default_limit: 1\ntelemetry:\n  enabled: false\n"


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's run-sharded SQLite event log with one pooled connection per shard (see module doc).

    Same files and schema as ``SqliteEventLogStorage`` (``<base_dir>/<run_id>.db``, ``index.db``); the
    webserver's live view still sees each write (the run's shard file is touched after a write, which
    is what Dagster's file watcher listens to). Configured in ``dagster.yaml`` by
    :func:`instance_config`.
    """

    max_engines = 8

    def __init__(self, base_dir: str, inst_data: Any = None):
        self._engines: OrderedDict[str, sa.Engine] = OrderedDict()
        self._engines_pid = os.getpid()
        super().__init__(base_dir, inst_data=inst_data)

    @classmethod
    def from_config_value(cls, inst_data: Any, config_value: Any) -> PooledSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    def _engine(self, shard: str) -> sa.Engine:
        if self._engines_pid != os.getpid():  # a forked child must not reuse the parent's connections
            for engine in self._engines.values():
                engine.dispose(close=False)
            self._engines.clear()
            self._engines_pid = os.getpid()
        engine = self._engines.pop(shard, None)
        if engine is None:
            engine = sa.create_engine(
                self.conn_string_for_shard(shard),
                poolclass=sa.pool.QueuePool, pool_size=1, max_overflow=4,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            )
            sa.event.listen(engine, "connect", _set_pragmas)
        self._engines[shard] = engine
        while len(self._engines) > self.max_engines:
            _, oldest = self._engines.popitem(last=False)
            oldest.dispose()
        return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[sa.Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn:
                raw = conn.connection.dbapi_connection
                before = raw.total_changes
                with conn.begin():
                    yield conn
                changed = raw.total_changes != before
            if changed and shard != INDEX_SHARD_NAME:
                # Dagster's watcher (live run view) listens for changes of <run_id>.db; with a kept
                # connection the write sits in the WAL file, so signal it
                try:
                    os.utime(self.path_for_shard(shard))
                except OSError:
                    pass

    def _dispose_engines(self) -> None:
        with self._db_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()

    def wipe(self) -> None:
        self._dispose_engines()
        super().wipe()

    def dispose(self) -> None:
        self._dispose_engines()
        super().dispose()


def _set_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def dagster_home(data_dir: Path, env: dict[str, str] | None = None) -> Path:
    """``DAGSTER_HOME`` if set, else ``<data_dir>/dagster_home`` (absolute)."""
    env = os.environ if env is None else env
    return Path(env.get("DAGSTER_HOME") or Path(data_dir) / "dagster_home").resolve()


RUN_MONITORING_CONFIG = """run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  cancel_timeout_seconds: 180
  max_resume_run_attempts: 0
  poll_interval_seconds: 30
"""
"""Dagster's run monitoring (run by ``dagster-daemon``): a run stuck "starting" (its worker never came
up) is marked failed after 3 minutes, one stuck "canceling" is marked canceled after 3 minutes; the
daemon looks every 30 s. Dagster's default run launcher cannot check a started run's worker, so it
cannot resume one (``max_resume_run_attempts: 0``); a started run whose worker was killed is marked
failed by the code server that launched it, or, when that server died too, by the sensor
``fail_dead_runs_sensor`` (:mod:`rank_pipeline.defs.run_monitoring`) from the run's process tags."""


def instance_config(home: Path) -> str:
    """The ``dagster.yaml`` this project writes into ``home``: SQLite storage with the pooled event log."""
    history = home / "history"
    return f"""{_MARKER}: SQLite storage in this folder; see rank_pipeline/defs/instance.py
run_storage:
  module: dagster._core.storage.runs
  class: SqliteRunStorage
  config:
    base_dir: {history}
event_log_storage:
  module: rank_pipeline.defs.instance
  class: {PooledSqliteEventLogStorage.__name__}
  config:
    base_dir: {history / "runs"}
schedule_storage:
  module: dagster._core.storage.schedules
  class: SqliteScheduleStorage
  config:
    base_dir: {home / "schedules"}
telemetry:
  enabled: false
""" + RUN_MONITORING_CONFIG


def open_instance(data_dir: Path, *, log: Callable[[str], object] | None = None) -> dg.DagsterInstance:
    """The data folder's persistent Dagster instance; sets ``DAGSTER_HOME`` for this process.

    Creates ``DAGSTER_HOME`` and its ``dagster.yaml`` when missing and rewrites a ``dagster.yaml`` this
    project wrote before (a user's own file is left alone), then opens the instance and creates its
    SQLite storage, all under the ``instance`` lock of ``data_dir``.

    Raises:
        rank_pipeline.runlock.LockTimeout: another process held the instance lock past the timeout.
    """
    home = dagster_home(data_dir)
    with instance_lock(data_dir, log=log):
        home.mkdir(parents=True, exist_ok=True)
        config = home / "dagster.yaml"
        wanted = instance_config(home)
        current = config.read_text() if config.exists() else None
        if current is None or (current != wanted and (current.startswith(_MARKER) or current == _LEGACY_CONFIG)):
            tmp = config.with_name(f".dagster.yaml.{os.getpid()}.tmp")
            tmp.write_text(wanted)
            os.replace(tmp, config)
        os.environ["DAGSTER_HOME"] = str(home)
        instance = dg.DagsterInstance.get()
        instance.get_runs(limit=1)  # creates the run, event log and schedule tables now, under the lock
        instance.get_latest_materialization_event(dg.AssetKey("__rank_pipeline_probe__"))
        fail_dead_runs(instance, log=log)
        return instance


PID_TAG = "rank_pipeline/pid"
HOST_TAG = "rank_pipeline/host"
BOOT_TAG = "rank_pipeline/boot_id"
_BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")


def _boot_id() -> str:
    """This machine's boot id (Linux; changes at every boot), or "" where there is none."""
    try:
        return _BOOT_ID_FILE.read_text().strip()
    except OSError:
        return ""


def process_tags() -> dict[str, str]:
    """Run tags naming this process (pid, host, boot id), so a later check can tell that the run's
    process died: ``rank_pipeline/pid``, ``rank_pipeline/host``, ``rank_pipeline/boot_id``."""
    tags = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}
    if boot := _boot_id():
        tags[BOOT_TAG] = boot
    return tags


def record_process_tags(instance: dg.DagsterInstance, run: dg.DagsterRun) -> None:
    """Tag ``run`` with this process (:func:`process_tags`) unless it already names a process.

    Called in the run's own process when its resources start, so a run launched by the daemon or the
    UI (whose worker is a process the code server spawned) can be marked failed when it is killed,
    like a run of the command line (which passes the tags at launch).
    """
    if PID_TAG not in run.tags:
        instance.add_run_tags(run.run_id, process_tags())


def fail_dead_runs(instance: dg.DagsterInstance, *, log: Callable[[str], object] | None = None) -> list[str]:
    """Mark failed the runs of this host still "started" whose process (:func:`process_tags`) is gone.

    A process is gone when no process has its pid, or when the machine booted since the run started
    (its boot id differs: the pid may belong to another process now). A run killed with ``kill -9``
    cannot report its end; without this the UI shows it in progress for ever. Nothing waits on such a
    run (no pool slot); this keeps the run list truthful. Called when the command line opens the
    instance and by the daemon's sensor ``fail_dead_runs_sensor``. Returns the run ids marked.
    """
    marked = []
    boot = _boot_id()
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


def lock_timeout_message(result: dg.ExecuteInProcessResult) -> str | None:
    """The one-line :class:`rank_pipeline.runlock.LockTimeout` message that failed ``result``, if any."""
    for event in result.all_events:
        if event.event_type not in (dg.DagsterEventType.RESOURCE_INIT_FAILURE, dg.DagsterEventType.STEP_FAILURE):
            continue
        error = getattr(event.event_specific_data, "error", None)
        while error is not None:
            if error.cls_name == "LockTimeout":
                return error.message.split(": ", 1)[-1].strip()
            error = error.cause
    return None


if __name__ == "__main__":  # `make dev`: prepare DAGSTER_HOME so the UI starts even before any run
    from rank_pipeline.settings import Settings

    print(open_instance(Settings.from_env().data_dir).root_directory)
