"""Every use of Dagster's private ``dagster._core`` in this project: :class:`PooledSqliteEventLogStorage`, the
same rows as Dagster's SQLite event log written for a fraction of the cost; :data:`PRIVATE_API` and
:func:`check_private_api` guard an upgrade. Why, with figures: docs/concepts/dagster.md, "The SQLite event log".
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import sqlalchemy as sa

from rank_pipeline.defs.sqlite_rows import dbapi, insert_statement, row_values, set_pragmas

try:
    from dagster._core.events import ASSET_CHECK_EVENTS, ASSET_EVENTS, EVENT_TYPE_TO_PIPELINE_RUN_STATUS
    from dagster._core.storage.event_log.schema import (
        AssetCheckExecutionsTable,
        AssetKeyTable,
        SqlEventLogStorageTable,
    )
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
        INDEX_SHARD_NAME,
        SqliteEventLogStorage,
    )
    from dagster._core.storage.runs import SqliteRunStorage
    from dagster._core.storage.schedules import SqliteScheduleStorage
    from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
    from dagster._time import datetime_from_timestamp
except ImportError as exc:  # pragma: no cover - only after a Dagster upgrade
    raise ImportError(
        f"Dagster {dg.__version__} moved a private name rank_pipeline/defs/sqlite_storage.py imports ({exc}); "
        "install the pinned Dagster (pip install -c constraints.txt -e .) or adapt that module"
    ) from exc

__all__ = ["PRIVATE_API", "PooledSqliteEventLogStorage", "check_private_api", "sqlite_storage_config"]

PRIVATE_API: dict[str, tuple[str, ...]] = {
    "SqliteEventLogStorage (methods)": ("_connect", "_initdb", "conn_string_for_shard", "path_for_shard",
                                        "from_config_value", "wipe", "dispose", "store_event", "has_table",
                                        "fetch_materializations", "delete_events", "_event_to_row",
                                        "_get_asset_entry_values", "_store_asset_event_tags",
                                        "_has_asset_key_index_cols_on_connection", "supports_asset_checks"),
    "SqliteEventLogStorage (instance attributes)": ("_initialized_dbs", "_db_lock"),
    "DagsterInstance (methods)": ("_get_event_batch_size",),
    "event_logs (columns)": ("id", "run_id", "timestamp", "asset_key", "dagster_event_type", "partition"),
    "asset_keys (columns)": ("asset_key", "asset_details", "last_materialization", "last_run_id",
                             "last_materialization_timestamp"),
    "asset_check_executions (columns)": ("asset_key", "check_name", "partition", "run_id", "execution_status",
                                         "evaluation_event", "evaluation_event_timestamp",
                                         "evaluation_event_storage_id", "materialization_event_storage_id"),
}
"""What :class:`PooledSqliteEventLogStorage` uses of Dagster's private SQLite event log, besides the
imported names (``INDEX_SHARD_NAME``, ``SQLITE_BUSY_TIMEOUT_SECONDS``, ``SqliteRunStorage``,
``SqliteScheduleStorage``, ``datetime_from_timestamp``, the event kinds ``ASSET_EVENTS``, ``ASSET_CHECK_EVENTS`` and
``EVENT_TYPE_TO_PIPELINE_RUN_STATUS``, the tables ``SqlEventLogStorageTable``, ``AssetKeyTable`` and
``AssetCheckExecutionsTable``): the methods it overrides or calls, the instance's reading of
``DAGSTER_EVENT_BATCH_SIZE`` (:func:`enable_event_batches`), and the columns it reads
(:data:`_NEWEST_MATERIALIZATION`) and writes (:meth:`PooledSqliteEventLogStorage.store_event`)."""

_OWNERS = {"SqliteEventLogStorage (methods)": ("SqliteEventLogStorage", lambda name: hasattr(SqliteEventLogStorage, name)),
           "DagsterInstance (methods)": ("DagsterInstance", lambda name: hasattr(dg.DagsterInstance, name)),
           "event_logs (columns)": ("event_logs", lambda name: name in SqlEventLogStorageTable.c),
           "asset_keys (columns)": ("asset_keys", lambda name: name in AssetKeyTable.c),
           "asset_check_executions (columns)": ("asset_check_executions",
                                                lambda name: name in AssetCheckExecutionsTable.c)}


_NEWEST_MATERIALIZATION = (
    "SELECT id, run_id, timestamp, (SELECT asset_details FROM asset_keys WHERE asset_key = :asset_key) "
    "FROM event_logs WHERE asset_key = :asset_key AND dagster_event_type = 'ASSET_MATERIALIZATION' "
    "AND partition = :partition ORDER BY id DESC LIMIT 1"
)
"""The newest materialization row of one asset partition in the index (its storage id, run and time)
and the asset's wipe record (``asset_details``): what :meth:`PooledSqliteEventLogStorage.fetch_materializations`
compares. Indexed by Dagster's ``idx_events_by_asset_partition``."""


_PROBE_ID = 918273645


@functools.cache
def _record_template() -> tuple[str, str, str] | None:
    """The JSON of an ``EventLogRecord`` around an event's JSON, as Dagster serializes it, in three pieces:
    ``head + <event JSON> + middle + <storage id> + tail``; derived once from Dagster's own serialization of a
    probe record (None when the record's layout is not that, and Dagster then serializes each record)."""
    entry = dg.EventLogEntry(error_info=None, level=20, user_message="probe", run_id="probe", timestamp=0.0,
                             step_key=None, job_name="probe", dagster_event=None)
    inner = dg.serialize_value(entry)
    whole = dg.serialize_value(dg.EventLogRecord(storage_id=_PROBE_ID, event_log_entry=entry))
    head, found, rest = whole.partition(inner)
    middle, found_id, tail = rest.partition(str(_PROBE_ID))
    if not (found and found_id) or inner in rest or str(_PROBE_ID) in head + tail:
        return None
    return head, middle, tail


_ASSET_EVENTS_HERE = frozenset({dg.DagsterEventType.ASSET_MATERIALIZATION,
                                dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED})
"""The asset events of a run :meth:`PooledSqliteEventLogStorage.store_event` writes itself (two per asset and
partition of a daily run); the rarer ones (observations, failures to materialize, freshness) go Dagster's way."""

_CHECK_STATUS = {True: "SUCCEEDED", False: "FAILED"}
"""``AssetCheckExecutionRecordStatus`` values of an evaluation that passed and one that did not."""
_UPDATE_CHECK_EXECUTION = (
    "UPDATE asset_check_executions SET execution_status = ?, evaluation_event = ?, evaluation_event_timestamp = ?, "
    "evaluation_event_storage_id = ?, materialization_event_storage_id = ?, partition = ? "
    "WHERE asset_key = ? AND check_name = ? AND run_id = ? AND partition IS ?"
)


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's run-sharded SQLite event log with one pooled connection per file (docs/concepts/dagster.md, "The
    SQLite event log"): the same files and schema (``<run_id>.db``, ``index.db``), the webserver still seeing
    each write; configured by :func:`sqlite_storage_config`.
    """

    max_engines = 8
    max_remembered = 64

    def __init__(self, base_dir: str, inst_data: Any = None):
        self._engines: OrderedDict[str, sa.Engine] = OrderedDict()
        self._engines_pid = os.getpid()
        self._tables: set[str] = set()
        self._newest: OrderedDict[tuple[dg.AssetKey, str], tuple[tuple, dg.EventRecordsResult]] = OrderedDict()
        self._newest_lock = threading.Lock()
        self._local = threading.local()
        self._index_cols = False
        enable_event_batches()
        super().__init__(base_dir, inst_data=inst_data)

    @classmethod
    def from_config_value(cls, inst_data: Any, config_value: Any) -> PooledSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    def _engine(self, shard: str) -> sa.Engine:
        if self._engines_pid != os.getpid():  # a forked child must not reuse the parent's connections
            for stale in self._engines.values():
                stale.dispose(close=False)
            self._engines.clear()
            self._engines_pid = os.getpid()
        engine = self._engines.pop(shard, None)
        if engine is None:
            engine = sa.create_engine(
                self.conn_string_for_shard(shard),
                poolclass=sa.pool.QueuePool, pool_size=1, max_overflow=4,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            )
            sa.event.listen(engine, "connect", set_pragmas)
        self._engines[shard] = engine
        while len(self._engines) > self.max_engines:
            _, oldest = self._engines.popitem(last=False)
            oldest.dispose()
        return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[sa.Connection]:
        batch = getattr(self._local, "batch", None)
        if batch is not None:  # within store_event_batch: one connection and transaction per shard
            if shard not in batch:
                batch[shard] = self._enter_batch_connection(shard)
            yield batch[shard][0]
            return
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn:
                raw = dbapi(conn)
                before = raw.total_changes
                with conn.begin():
                    yield conn
                changed = raw.total_changes != before
            if changed:
                self._touch(shard)

    def _touch(self, shard: str) -> None:
        if shard != INDEX_SHARD_NAME:
            # Dagster's watcher (live run view) listens for changes of <run_id>.db; with a kept
            # connection the write sits in the WAL file, so signal it
            try:
                os.utime(self.path_for_shard(shard))
            except OSError:
                pass

    def _enter_batch_connection(self, shard: str) -> tuple[sa.Connection, Any]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
        conn = engine.connect()
        try:
            return conn, conn.begin()
        except BaseException:
            conn.close()
            raise

    def store_event_batch(self, events: Sequence[dg.EventLogEntry]) -> None:
        """Store ``events`` as :meth:`store_event` does, one transaction per file (batches come only with
        ``DAGSTER_EVENT_BATCH_SIZE``, :func:`enable_event_batches`); on an error nothing is kept and it is raised,
        and Dagster stores the events one by one.
        """
        if getattr(self._local, "batch", None) is not None:
            for event in events:
                self.store_event(event)
            return
        batch: dict[str, tuple[sa.Connection, Any]] = {}
        self._local.batch = batch
        try:
            for event in events:
                self.store_event(event)
        except BaseException:
            self._local.batch = None
            for conn, transaction in batch.values():
                try:
                    transaction.rollback()
                finally:
                    conn.close()
            raise
        self._local.batch = None
        try:  # the run's own file first: should the index's commit fail, Dagster's one-by-one retry
            # repeats events in the run's log, never rows of the index's summary tables
            for shard in sorted(batch, key=lambda name: name == INDEX_SHARD_NAME):
                batch[shard][1].commit()
        finally:
            for conn, _ in batch.values():
                conn.close()
        for shard in batch:
            self._touch(shard)

    def store_event(self, event: dg.EventLogEntry) -> None:
        """Store ``event`` exactly as ``SqliteEventLogStorage.store_event`` does; log lines, step events, asset check
        events and a run's materializations and planned materializations through the DB-API cursor, the rest
        Dagster's own way (docs/concepts/dagster.md, "Storing an event"; ``tests/defs/test_sqlite_storage.py``
        compares every row).
        """
        kind = event.dagster_event_type
        if ((kind in ASSET_EVENTS and kind not in _ASSET_EVENTS_HERE) or kind in EVENT_TYPE_TO_PIPELINE_RUN_STATUS
                or (kind in ASSET_CHECK_EVENTS or kind in ASSET_EVENTS) and not event.run_id):
            super().store_event(event)
            return
        row = self._event_to_row(event)
        sql, processors = insert_statement(SqlEventLogStorageTable, tuple(row))
        values = row_values(row, processors)
        with self.run_connection(event.run_id) as conn:
            dbapi(conn).execute(sql, values)
        if kind in _ASSET_EVENTS_HERE:
            with self.index_connection() as conn:
                cursor = dbapi(conn).cursor()
                cursor.execute(sql, values)
                if cursor.lastrowid is None:
                    raise dg.DagsterInvariantViolationError("Cannot store asset event tags for null event id.")
                self._store_asset_entry(conn, cursor, event, cursor.lastrowid, row["event"])
            return
        if kind not in ASSET_CHECK_EVENTS:
            return
        if not self.supports_asset_checks:
            raise dg.DagsterInvariantViolationError(
                "Asset checks require a database schema migration. Run `dagster instance migrate`.")
        with self.index_connection() as conn:
            cursor = dbapi(conn).cursor()
            cursor.execute(sql, values)
            self._store_check_execution(cursor, event, row, cursor.lastrowid)

    def _store_asset_entry(self, conn: sa.Connection, cursor: Any, event: dg.EventLogEntry, event_id: int,
                           encoded: str) -> None:
        """The index rows of an asset event just inserted as ``event_id`` (``encoded``: its JSON), as Dagster's
        ``store_event`` writes them: its tags (``_store_asset_event_tags``), then the asset's ``asset_keys`` row
        inserted or updated with :meth:`_asset_entry_values` (Dagster's insert, then update on a conflict, as one
        upsert)."""
        self._store_asset_event_tags(conn, [event], [event_id])
        asset_key = event.get_dagster_event().asset_key
        if asset_key is None:
            return
        values = self._asset_entry_values(event, event_id, encoded, self._asset_key_index_cols(conn))
        if not values:
            return
        sql, processors = insert_statement(AssetKeyTable, ("asset_key", *values))
        updates = ", ".join(f"{name} = excluded.{name}" for name in values)
        cursor.execute(f"{sql} ON CONFLICT (asset_key) DO UPDATE SET {updates}",
                       row_values({"asset_key": asset_key.to_string(), **values}, processors))

    def _asset_key_index_cols(self, conn: sa.Connection) -> bool:
        """Dagster's answer whether ``asset_keys`` has its index columns, remembered once yes (a migration adds
        them; none removes them)."""
        if self._index_cols:
            return True
        self._index_cols = self._has_asset_key_index_cols_on_connection(conn)
        return self._index_cols

    def _asset_entry_values(self, event: dg.EventLogEntry, event_id: int, encoded: str,
                            has_asset_key_index_cols: bool) -> dict[str, Any]:
        """Dagster's values of the ``asset_keys`` row an asset event updates (``_get_asset_entry_values``); a
        materialization's ``last_materialization`` (the event as an ``EventLogRecord``) is composed from
        ``encoded``, the event's JSON just written to ``event_logs`` (:func:`_record_template`), not encoded
        again (docs/concepts/dagster.md, "A materialization's asset entry")."""
        template = _record_template()
        if template is None or not event.get_dagster_event().is_step_materialization:
            return self._get_asset_entry_values(event, event_id, has_asset_key_index_cols)
        head, middle, tail = template
        values: dict[str, Any] = {"last_materialization": f"{head}{encoded}{middle}{event_id}{tail}",
                                  "last_run_id": event.run_id}
        if has_asset_key_index_cols:
            values["last_materialization_timestamp"] = datetime_from_timestamp(event.timestamp)
        return values

    @staticmethod
    def _store_check_execution(cursor: Any, event: dg.EventLogEntry, row: dict[str, Any],
                               event_id: int | None) -> None:
        """The asset-check table's row(s) for a check event of a run, as Dagster's
        ``_store_asset_check_evaluation_planned`` and ``_update_asset_check_evaluation`` write them."""
        dagster_event, encoded = event.get_dagster_event(), row["event"]
        if event.dagster_event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED:
            planned = dagster_event.asset_check_planned_data
            asset_key = planned.asset_key.to_string()
            partitions: Iterable[str | None] = (planned.partitions_subset.get_partition_keys()
                                                if planned.partitions_subset else [None])
            sql, processors = insert_statement(AssetCheckExecutionsTable, (
                "asset_key", "check_name", "partition", "run_id", "execution_status", "evaluation_event",
                "evaluation_event_timestamp", "evaluation_event_storage_id"))
            cursor.executemany(sql, [row_values({"asset_key": asset_key, "check_name": planned.check_name,
                                              "partition": p, "run_id": event.run_id, "execution_status": "PLANNED",
                                              "evaluation_event": encoded, "evaluation_event_timestamp": row["timestamp"],
                                              "evaluation_event_storage_id": event_id}, processors)
                                     for p in partitions])
            return
        data = dagster_event.asset_check_evaluation_data
        asset_key = data.asset_key.to_string()
        target = data.target_materialization_data.storage_id if data.target_materialization_data else None
        columns = {"asset_key": asset_key, "check_name": data.check_name, "run_id": event.run_id,
                   "execution_status": _CHECK_STATUS[bool(data.passed)], "evaluation_event": encoded,
                   "evaluation_event_timestamp": row["timestamp"], "evaluation_event_storage_id": event_id,
                   "materialization_event_storage_id": target, "partition": data.partition}
        sql, processors = insert_statement(AssetCheckExecutionsTable, tuple(columns))
        values = row_values(columns, processors)
        cursor.execute(_UPDATE_CHECK_EXECUTION, (*values[3:], asset_key, data.check_name, event.run_id, data.partition))
        updated = cursor.rowcount
        if updated == 0:
            cursor.execute(sql, values)
        elif updated > 1:
            raise dg.DagsterInvariantViolationError(
                f"Updated {updated} rows for asset check evaluation {data.asset_check_key} as a result of duplicate "
                "AssetCheckPlanned events.")

    def has_table(self, table_name: str) -> bool:
        """Dagster's answer, remembered once a table is found (tables are only ever added, by
        migrations; :meth:`wipe` forgets). Dagster asks this for every asset check event it stores
        (``supports_asset_checks``) and each answer opens a new SQLite engine."""
        if table_name in self._tables:
            return True
        found = super().has_table(table_name)
        if found:
            self._tables.add(table_name)
        return found

    def fetch_materializations(self, records_filter: dg.AssetKey | dg.AssetRecordsFilter, limit: int,
                               cursor: str | None = None, ascending: bool = False) -> dg.EventRecordsResult:
        """Dagster's answer; the newest materialization of one asset partition is remembered and given again while
        one indexed read (:data:`_NEWEST_MATERIALIZATION`) shows it is still the newest (docs/concepts/dagster.md,
        "The materialization a check ran on").
        """
        if not (limit == 1 and cursor is None and not ascending and isinstance(records_filter, dg.AssetRecordsFilter)
                and records_filter.asset_partitions is not None and len(records_filter.asset_partitions) == 1
                and records_filter == dg.AssetRecordsFilter(records_filter.asset_key,
                                                            records_filter.asset_partitions)):
            return super().fetch_materializations(records_filter, limit, cursor, ascending)
        (partition,) = records_filter.asset_partitions
        key = (records_filter.asset_key, partition)
        with self.index_connection() as conn:  # read before Dagster's answer: a later write only forgets
            row = dbapi(conn).execute(_NEWEST_MATERIALIZATION, {
                "asset_key": records_filter.asset_key.to_string(), "partition": partition}).fetchone()
        signature = tuple(row) if row is not None else None
        remembered = self._newest.get(key)
        if remembered is not None and signature is not None and remembered[0] == signature:
            return remembered[1]
        result = super().fetch_materializations(records_filter, limit, cursor, ascending)
        with self._newest_lock:
            self._newest.pop(key, None)
            if signature is not None and result.records and result.records[0].storage_id == signature[0]:
                self._newest[key] = (signature, result)
                while len(self._newest) > self.max_remembered:
                    self._newest.popitem(last=False)
        return result

    def delete_events(self, run_id: str) -> None:
        self._forget()
        super().delete_events(run_id)

    def _forget(self) -> None:
        """Forget the tables found and the newest materializations (the index changed under them)."""
        self._tables.clear()
        with self._newest_lock:
            self._newest.clear()

    def _dispose_engines(self) -> None:
        with self._db_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()

    def wipe(self) -> None:
        self._dispose_engines()
        self._forget()
        super().wipe()

    def dispose(self) -> None:
        self._dispose_engines()
        super().dispose()


EVENT_BATCH_SIZE_ENV = "DAGSTER_EVENT_BATCH_SIZE"
EVENT_BATCH_SIZE = 1000


def enable_event_batches() -> None:
    """Let Dagster hand batches to :meth:`PooledSqliteEventLogStorage.store_event_batch`: it does only
    when ``DAGSTER_EVENT_BATCH_SIZE`` is set in the environment of the process running the run (which
    is where the storage is opened: the command line, or the run worker the daemon or the UI
    launches); set to :data:`EVENT_BATCH_SIZE` unless already set."""
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", str(EVENT_BATCH_SIZE))  # Dagster reads it, not us


def sqlite_storage_config(home: Path) -> str:
    """The ``run_storage``, ``event_log_storage`` and ``schedule_storage`` blocks of ``dagster.yaml``: files
    ``history/runs.db``, ``history/runs/<run_id>.db`` and ``index.db``, ``schedules/schedules.db`` under ``home``.
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
    """One line per name of :data:`PRIVATE_API` the installed Dagster no longer has (empty: all there), found by
    opening a storage in the scratch folder ``workdir``, and one if an ``EventLogRecord``'s JSON no longer has
    the layout :func:`_record_template` composes.
    """
    missing = [f"Dagster {dg.__version__}: {owner}.{name} is gone ({kind}); "
               "PooledSqliteEventLogStorage in rank_pipeline/defs/sqlite_storage.py relies on it"
               for kind, names in PRIVATE_API.items() if kind in _OWNERS
               for owner, has in [_OWNERS[kind]] for name in names if not has(name)]
    if _record_template() is None:
        missing.append(f"Dagster {dg.__version__}: an EventLogRecord's JSON is no longer its event's JSON and "
                       "storage id; _record_template in rank_pipeline/defs/sqlite_storage.py composes it")
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
