"""Every use of Dagster's private ``dagster._core`` in this project: the SQLite instance storage.

Dagster's stock SQLite event log opens a new SQLAlchemy engine and connection for every event, commits
it with a full ``fsync`` and closes the connection, and closing the last connection of a WAL database
checkpoints it (more ``fsync``). A daily run stores about 550-800 events (about 250 of them asset-check
events, each written to two databases). :class:`PooledSqliteEventLogStorage` keeps one engine and one
pooled connection per shard, and commits with ``PRAGMA synchronous=NORMAL`` (safe in WAL mode: a crash
of the process loses nothing committed; a power cut can lose the last few events, never corrupt the
file).

Kept, measured again (``benchmarks/run_storage.py --days 3``, the same daily job interleaved on the same
2-core machine, medians; ``benchmarks/README.md``): in memory 13.4 s a day, stock SQLite 59.6 s, this
pooled event log 10.9 s. Stock SQLite is 5.5x the pooled one, far beyond the ~1.3x that would justify
dropping private API, so the subclass stays, confined here: this is the only module that imports ``dagster._core``
(``tests/defs/test_sqlite_storage.py`` greps the repository for any other), and it names the private
things it relies on in :data:`PRIVATE_API`. :func:`check_private_api` says which of them a Dagster
upgrade moved; the module's import fails with the same kind of one-line message. The ``dagster<1.14``
pin in ``pyproject.toml`` holds them; lift it only with that test green.

PostgreSQL (``RANK_PIPELINE_DAGSTER_PG_URL``) needs none of this: it is Dagster's own public
``storage: postgres:`` configuration (:mod:`rank_pipeline.defs.instance`).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import sqlalchemy as sa

try:
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
        INDEX_SHARD_NAME,
        SqliteEventLogStorage,
    )
    from dagster._core.storage.runs import SqliteRunStorage
    from dagster._core.storage.schedules import SqliteScheduleStorage
    from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
except ImportError as exc:  # pragma: no cover - only after a Dagster upgrade
    raise ImportError(
        f"Dagster {dg.__version__} moved a private name rank_pipeline/defs/sqlite_storage.py imports ({exc}); "
        "install the pinned Dagster (pip install -c constraints.txt -e .) or adapt that module"
    ) from exc

__all__ = ["PRIVATE_API", "PooledSqliteEventLogStorage", "check_private_api", "sqlite_storage_config"]

PRIVATE_API: dict[str, tuple[str, ...]] = {
    "SqliteEventLogStorage (methods)": ("_connect", "_initdb", "conn_string_for_shard", "path_for_shard",
                                        "from_config_value", "wipe", "dispose"),
    "SqliteEventLogStorage (instance attributes)": ("_initialized_dbs", "_db_lock"),
}
"""What :class:`PooledSqliteEventLogStorage` uses of Dagster's private SQLite event log, besides the
imported names (``INDEX_SHARD_NAME``, ``SQLITE_BUSY_TIMEOUT_SECONDS``, ``SqliteRunStorage``,
``SqliteScheduleStorage``)."""


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's run-sharded SQLite event log with one pooled connection per shard (see module doc).

    Same files and schema as ``SqliteEventLogStorage`` (``<base_dir>/<run_id>.db``, ``index.db``); the
    webserver's live view still sees each write (the run's shard file is touched after a write, which
    is what Dagster's file watcher listens to). Configured in ``dagster.yaml`` by
    :func:`sqlite_storage_config`.
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


def sqlite_storage_config(home: Path) -> str:
    """The ``run_storage``, ``event_log_storage`` and ``schedule_storage`` blocks of ``dagster.yaml``.

    Files: ``<home>/history/runs.db`` (runs), ``<home>/history/runs/<run_id>.db`` and ``index.db``
    (event log, :class:`PooledSqliteEventLogStorage`), ``<home>/schedules/schedules.db``.
    """
    history = home / "history"
    return f"""run_storage:
  module: {_package(SqliteRunStorage)}
  class: {SqliteRunStorage.__name__}
  config:
    base_dir: {history}
event_log_storage:
  module: {PooledSqliteEventLogStorage.__module__}
  class: {PooledSqliteEventLogStorage.__name__}
  config:
    base_dir: {history / "runs"}
schedule_storage:
  module: {_package(SqliteScheduleStorage)}
  class: {SqliteScheduleStorage.__name__}
  config:
    base_dir: {home / "schedules"}
"""


def _package(cls: type) -> str:
    """The shortest parent package of ``cls``'s module that exports it (what ``dagster.yaml`` names)."""
    parts = cls.__module__.split(".")
    for i in range(2, len(parts) + 1):
        module = __import__(".".join(parts[:i]), fromlist=[cls.__name__])
        if getattr(module, cls.__name__, None) is cls:
            return ".".join(parts[:i])
    return cls.__module__


def check_private_api(workdir: Path) -> list[str]:
    """One line per private name of :data:`PRIVATE_API` the installed Dagster no longer has (empty: all there).

    Opens a :class:`PooledSqliteEventLogStorage` in ``workdir`` (a scratch folder) to see its instance
    attributes, then disposes it.
    """
    missing = [f"Dagster {dg.__version__}: SqliteEventLogStorage.{name} is gone ({kind}); "
               "PooledSqliteEventLogStorage in rank_pipeline/defs/sqlite_storage.py relies on it"
               for kind, names in PRIVATE_API.items() if "methods" in kind
               for name in names if not hasattr(SqliteEventLogStorage, name)]
    if missing:
        return missing
    storage = PooledSqliteEventLogStorage(str(workdir))
    try:
        return [f"Dagster {dg.__version__}: SqliteEventLogStorage instances no longer set {name} ({kind}); "
                "PooledSqliteEventLogStorage in rank_pipeline/defs/sqlite_storage.py relies on it"
                for kind, names in PRIVATE_API.items() if "attributes" in kind
                for name in names if not hasattr(storage, name)]
    finally:
        storage.dispose()
