"""DuckDB warehouse: the raw layer loaded from Parquet snapshots, and atomic publishing.

Implements docs/architecture.md, "Warehouse and the dbt-like runner": one writer, and the snapshots as the
system of record. No Dagster here; ``rank_pipeline/defs`` wires these functions into assets.

Raw layer
    One table per resource in schema ``raw`` (``raw.domains``, ``raw.keywords``, ``raw.competitors``,
    ``raw.tags``, ``raw.usage``, ``raw.locations``, ``raw.languages``). Columns: the snapshot columns of
    docs/architecture.md "Snapshots" (``snapshot_date DATE``, ``account``, ``id``, ``type``,
    ``parent_id``, ``extracted_at TIMESTAMPTZ``, the spec's flattened fields, ``attributes JSON``) plus
    ``loaded_at TIMESTAMPTZ`` (the start of the load's transaction; the same for every row of a load).

Partition replacement (:func:`load_partition`)
    A load replaces one ``snapshot_date`` of the requested resources in ONE transaction: for every
    resource, delete the rows of that date, insert the rows of the committed snapshot's files, check the
    row count against the snapshot manifest; then commit. Any failure (missing snapshot, missing or
    corrupt file, row count disagreeing with the manifest, rows of another date in the files) rolls the
    whole transaction back, so every raw table keeps its previous state, and raises :class:`LoadError`
    naming the partition and file. Re-running a load is idempotent.

Missing snapshots
    Every requested resource must have a committed snapshot (a ``_manifest.json``) for the date: the
    extraction writes all seven resources every day, so a missing one means extraction failed or has not
    run, and loading a partial day would publish an inconsistent warehouse. It raises
    :class:`SnapshotMissingError` naming the expected path. To load a subset on purpose, pass
    ``resources=``. (:func:`reload_raw_from_snapshots` is the one exception: it loads whatever was committed
    for each date, because history may predate a resource.)

Snapshots on object storage
    ``snapshots_uri`` may be a folder, a URI (``s3://bucket/prefix``) or a
    :class:`rank_pipeline.snapshots.storage.Store` (``RANK_PIPELINE_SNAPSHOTS_URI``). Only the files a committed
    manifest lists are read (:mod:`rank_pipeline.snapshots.parquet`, "Commit"). Local files are read with DuckDB's
    ``read_parquet``; files on an object store are read through pyarrow (a ``pyarrow.dataset`` over the
    store's pyarrow file system, registered in DuckDB as an Arrow scan), because DuckDB's ``httpfs`` is
    not bundled with the ``duckdb`` wheel and would be downloaded at run time: nothing is downloaded.

Schema evolution
    A column that appears in the Parquet files but not in the raw table (a field the API added and the
    snapshot writer flattened) never fails a load: the files are read with ``union_by_name`` and the new
    column is added to the raw table (``ALTER TABLE ... ADD COLUMN``, inside the load's transaction, type
    taken from Parquet); older rows hold NULL there. Columns the table has but a file lacks are NULL for
    that file's rows. Rows are inserted BY NAME, never by position. Unknown fields that are not flattened
    stay inside ``attributes`` as always. A column whose type changes incompatibly fails the load with a
    clear error (rebuild from snapshots after deciding the new type).

Concurrency model
    DuckDB allows one writing process or many reading ones per file. The pipeline has exactly one writer:
    the private build file (``data/warehouse.build.duckdb``), opened by :meth:`Warehouse.connect`; every
    run holds the data folder's writer lock (:mod:`rank_pipeline.warehouse.locks`) while it writes. Readers (analysts, BI tools) open
    only the published file (``data/warehouse.duckdb``) with :meth:`Warehouse.read_only_connect`.
    :meth:`Warehouse.publish` checkpoints the build file, copies it byte for byte into a new temporary file
    beside the published one (a streamed file copy: the run's memory does not grow with the warehouse),
    fsyncs it and ``os.replace``-s it in: an atomic rename on POSIX file systems. A reader that had the
    old published file open keeps reading the old, complete file (its open file handle still points at
    it) and never blocks the load; a connection opened afterwards sees the new complete state. Nobody may
    open the published file for writing. (On Windows an open file cannot be replaced; not supported.)

Storage version of the published file
    The build file is written in the running DuckDB's own storage format (duckdb 2.x: newer than the
    versions 64-68 that DuckDB 1.x reads), which 1.x readers (drivers, BI tools bundling a 1.x DuckDB)
    refuse. The published file is written in the storage format of :data:`DEFAULT_STORAGE_VERSION`
    (``v1.0.0``: storage version 64, which DuckDB 1.0 and every later release open; our SQL uses nothing
    that needs a newer one; tests/dashboards/test_duckdb1_reader.py reads it with duckdb 1.4), or the one named
    in ``RANK_PIPELINE_STORAGE_VERSION`` (a DuckDB release such as ``v1.4.0``; ``latest`` writes the
    running DuckDB's own format). A value DuckDB does not know fails the publish with a clear error.
    The build file is created in that same storage version (DuckDB keeps a file's version for its
    whole life), so the published file is a plain copy of it. A build file in another version (created
    before the setting changed) is published through ``ATTACH ... (STORAGE_VERSION ...)`` and
    ``COPY FROM DATABASE`` instead, which buffers several times the file in memory; a full rebuild
    (``rank-pipeline rebuild --full-refresh``) recreates the build file in the set version.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Sequence
from datetime import date
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from rank_pipeline.errors import RankPipelineError
from rank_pipeline.settings import DEFAULT_STORAGE_VERSION, STORAGE_VERSION_ENV, storage_version_from_env
from rank_pipeline.snapshots.manifest import SnapshotManifest
from rank_pipeline.snapshots.reader import list_snapshot_dates, read_manifest, snapshot_files
from rank_pipeline.snapshots.schema import (
    ENDPOINTS,
    MANIFEST_NAME,
    SnapshotError,
    arrow_schema,
    partition_dir,
)
from rank_pipeline.snapshots.storage import Store, store_for
from rank_pipeline.transform.sql import quote_ident as _qi
from rank_pipeline.transform.sql import table_columns

__all__ = [
    "DEFAULT_STORAGE_VERSION",
    "RAW_SCHEMA",
    "STORAGE_VERSION_ENV",
    "KEYWORDS_FILE_COLUMNS",
    "KEYWORDS_FILE_TABLE",
    "RAW_TABLES",
    "SOURCE_TABLES",
    "ENDPOINTS",
    "SCHEMAS",
    "LoadError",
    "PublishError",
    "SnapshotMissingError",
    "Warehouse",
    "WarehouseError",
    "ensure_keywords_file_table",
    "ensure_raw_table",
    "load_partition",
    "load_partitions",
    "reload_raw_from_snapshots",
]

log = logging.getLogger(__name__)

RAW_SCHEMA = "raw"
SCHEMAS: tuple[str, ...] = ("raw", "seeds", "staging", "marts")
"""Schemas of the warehouse (docs/architecture.md, "Warehouse")."""

RAW_TABLES: tuple[str, ...] = tuple(f"{RAW_SCHEMA}.{r}" for r in ENDPOINTS)

KEYWORDS_FILE_TABLE = f"{RAW_SCHEMA}.keywords_file"
"""The keywords file's planned rows (``rank_pipeline.keywords``), one per wanted combination, written by
the ``raw/keywords_file`` asset from ``RANK_PIPELINE_KEYWORDS_FILE``; empty when it is unset. Not a
snapshot of the API, so it is not rebuilt from snapshots: it always holds the file as last planned."""
KEYWORDS_FILE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("account", "varchar"), ("domain_id", "varchar"), ("domain", "varchar"), ("keyword", "varchar"),
    ("search_engine", "varchar"), ("device", "varchar"), ("location", "varchar"), ("location_code", "varchar"),
    ("language_code", "varchar"), ("frequency", "varchar"), ("tags", "varchar[]"), ("file", "varchar"),
    ("file_line", "integer"), ("planned_at", "timestamp with time zone"),
)
SOURCE_TABLES: tuple[str, ...] = (*RAW_TABLES, KEYWORDS_FILE_TABLE)
"""Every ``raw`` table a model may read: the snapshot tables and :data:`KEYWORDS_FILE_TABLE`."""


def ensure_keywords_file_table(con: duckdb.DuckDBPyConnection) -> None:
    """Create :data:`KEYWORDS_FILE_TABLE` (empty) if it does not exist."""
    columns = ", ".join(f"{name} {kind}" for name, kind in KEYWORDS_FILE_COLUMNS)
    con.execute(f"create table if not exists {KEYWORDS_FILE_TABLE} ({columns})")
"""Qualified names of the raw tables, one per snapshot resource."""


class WarehouseError(RankPipelineError, RuntimeError):
    """Base of this module's errors; the message names the file or partition and what to do."""


class SnapshotMissingError(WarehouseError):
    """A requested resource has no committed snapshot (no ``_manifest.json``) for the partition."""


class LoadError(WarehouseError):
    """A partition could not be loaded; the transaction was rolled back, previous state kept."""


class PublishError(WarehouseError):
    """The build file could not be published; the previously published file is untouched."""


def _sql_list(values: Iterable[str]) -> str:
    return "[" + ", ".join("'" + str(v).replace("'", "''") + "'" for v in values) + "]"


def _check_resources(resources: Sequence[str] | None) -> tuple[str, ...]:
    if resources is None:
        return ENDPOINTS
    if isinstance(resources, str):
        resources = [resources]
    unknown = [r for r in resources if r not in ENDPOINTS]
    if unknown:
        raise WarehouseError(f"unknown resource(s) {unknown}; expected some of {', '.join(ENDPOINTS)}")
    return tuple(dict.fromkeys(resources))


def _read_manifest(snapshots_uri: Path | str | Store, resource: str,
                   snapshot_date: date) -> tuple[str, SnapshotManifest]:
    """(the partition's folder as a user reads it, its committed manifest); see :func:`load_partition`."""
    store = store_for(snapshots_uri)
    folder = partition_dir(store, resource, snapshot_date)
    try:
        manifest = read_manifest(store, resource, snapshot_date)
    except SnapshotError as exc:
        if "cannot read the manifest" in str(exc) or "not a JSON object" in str(exc):
            raise LoadError(f"{exc} ({resource} for {snapshot_date})") from exc
        listing = store.listdir(store.join(resource, f"snapshot_date={snapshot_date.isoformat()}"))
        shards = sorted(i.path.rsplit("/", 1)[-1] for i in listing if "/_manifest.shard-" in i.path)
        hint = (
            f"only some shard workers committed it ({', '.join(shards)}): wait for the others"
            if shards
            else "its Parquet files exist but it was never committed (extraction was interrupted)"
            if any(i.path.endswith(".parquet") for i in listing)
            else "no snapshot was extracted for that day"
        )
        manifest_path = f"{folder}/{MANIFEST_NAME}"
        raise SnapshotMissingError(
            f"no committed {resource} snapshot for partition {snapshot_date}: expected {manifest_path} "
            f"({hint}). Run the extraction for {snapshot_date} first, or pass resources= to load a subset."
        ) from None
    return str(folder), manifest


def _duckdb_type_of(con: duckdb.DuckDBPyConnection, source: str) -> dict[str, str]:
    """Column name -> DuckDB type of ``source`` (``read_parquet(...)`` by name, or a registered Arrow scan)."""
    rows = con.execute(f"describe select * from {source}").fetchall()
    return {r[0]: r[1] for r in rows}


def _table_columns(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> dict[str, str] | None:
    return table_columns(con, schema, table) or None


def ensure_raw_table(con: duckdb.DuckDBPyConnection, resource: str) -> dict[str, str]:
    """Create ``raw.<resource>`` from the snapshot contract if absent (and the keywords file's table,
    :func:`ensure_keywords_file_table`, so every loaded warehouse has every source); return its columns."""
    con.execute(f"create schema if not exists {RAW_SCHEMA}")
    ensure_keywords_file_table(con)
    cols = _table_columns(con, RAW_SCHEMA, resource)
    if cols is not None:
        return cols
    empty: pa.Table = arrow_schema(resource).empty_table()
    con.register("__snapshot_contract", empty)
    try:
        con.execute(
            f"create table {RAW_SCHEMA}.{_qi(resource)} as "
            "select * replace (cast(attributes as json) as attributes), "
            "cast(null as timestamptz) as loaded_at from __snapshot_contract"
        )
    finally:
        con.unregister("__snapshot_contract")
    return _table_columns(con, RAW_SCHEMA, resource) or {}


def _load_resource(
    con: duckdb.DuckDBPyConnection, snapshots_uri: Path | str | Store, resource: str, snapshot_date: date
) -> int:
    """Delete and insert one resource's partition; caller holds the transaction.

    Local snapshots are read by DuckDB's ``read_parquet``. Snapshots on an object store are read through
    pyarrow (:mod:`rank_pipeline.snapshots.storage`): a :class:`pyarrow.dataset.Dataset` over exactly the files the
    manifest lists, registered in DuckDB as an Arrow scan, so no DuckDB extension (httpfs) is loaded or
    downloaded at run time.
    """
    store = store_for(snapshots_uri)
    folder, manifest = _read_manifest(store, resource, snapshot_date)
    files = snapshot_files(store, resource, snapshot_date, manifest)
    file_names: set[str] = set()
    file_schemas: list[pa.Schema] = []
    for path in files:
        shown = store.display(path)
        if not store.is_file(path):
            raise LoadError(
                f"partition {snapshot_date} of raw.{resource}: file {shown} is listed in {MANIFEST_NAME} but "
                f"missing; re-extract {resource} for {snapshot_date} (or restore the file)"
            )
        try:
            schema = pq.read_metadata(path, filesystem=store.fs).schema.to_arrow_schema()
        except Exception as exc:  # pyarrow raises several types for a damaged footer
            raise LoadError(
                f"partition {snapshot_date} of raw.{resource}: {shown} is not a readable Parquet file ({exc}); "
                f"re-extract {resource} for {snapshot_date} or restore the file from a backup"
            ) from exc
        file_names.update(schema.names)
        file_schemas.append(schema)
    columns = ensure_raw_table(con, resource)
    table = f"{RAW_SCHEMA}.{_qi(resource)}"
    con.execute(f"delete from {table} where snapshot_date = ?", [snapshot_date])
    if not files:
        return 0
    registered = None
    if store.local:
        names = list(files)
        source = f"read_parquet({_sql_list(names)}, union_by_name = true, hive_partitioning = false)"
    else:
        import pyarrow.dataset as pads

        unified = pa.unify_schemas(file_schemas, promote_options="permissive")
        registered = f"__snapshot_{resource}_{uuid.uuid4().hex[:8]}"
        con.register(registered, pads.dataset(files, schema=unified, format="parquet", filesystem=store.fs))
        source = registered
    try:
        if file_names - set(columns) - {"loaded_at"}:  # a new column: its DuckDB type from the files
            for name, typ in _duckdb_type_of(con, source).items():
                if name not in columns and name != "loaded_at":
                    log.warning("raw.%s: new column %s %s found in %s; adding it", resource, name, typ, folder)
                    con.execute(f"alter table {table} add column {_qi(name)} {typ}")
        select = "select * replace (cast(attributes as json) as attributes)" if "attributes" in file_names \
            else "select *"
        (inserted,) = con.execute(
            f"insert into {table} by name {select}, current_timestamp as loaded_at from {source}"
        ).fetchone()
    except (duckdb.Error, pa.ArrowException, OSError) as exc:
        raise LoadError(
            f"partition {snapshot_date} of raw.{resource}: reading {folder} failed: {exc}. The load was rolled "
            f"back and raw tables keep their previous state; fix or re-extract the snapshot, then reload"
        ) from exc
    finally:
        if registered is not None:
            con.unregister(registered)
    (loaded,) = con.execute(f"select count(*) from {table} where snapshot_date = ?", [snapshot_date]).fetchone()
    if inserted != loaded:
        raise LoadError(
            f"partition {snapshot_date} of raw.{resource}: {inserted - loaded} row(s) in {folder} carry another "
            f"snapshot_date; the files do not belong to this partition. Re-extract {resource} for {snapshot_date}"
        )
    expected = manifest.row_count
    if expected != loaded:
        raise LoadError(
            f"partition {snapshot_date} of raw.{resource}: {loaded} rows read from {folder} but its manifest "
            f"says {expected}; the snapshot is damaged. Re-extract {resource} for {snapshot_date}"
        )
    if not manifest.complete:
        log.warning(
            "raw.%s partition %s: the snapshot manifest says extraction was incomplete; loaded %d rows anyway",
            resource, snapshot_date, loaded,
        )
    return int(loaded)


def load_partition(
    con: duckdb.DuckDBPyConnection,
    snapshots_uri: Path | str,
    snapshot_date: date,
    resources: Sequence[str] | None = None,
) -> dict[str, int]:
    """Replace one ``snapshot_date`` of the raw tables from its Parquet snapshots, in one transaction.

    Args:
        con: the writer connection (:meth:`Warehouse.connect`), not inside a transaction.
        snapshots_uri: the snapshots root (``data/snapshots``).
        snapshot_date: the partition (UTC day).
        resources: the resources to load (default: all of :data:`ENDPOINTS`).

    Returns:
        ``{resource: rows now in raw.<resource> for that date}``.

    Raises:
        SnapshotMissingError: a requested resource has no committed snapshot for that date.
        LoadError: a file is missing, unreadable, of another date, or disagrees with its manifest.
        WarehouseError: an unknown resource name.
        In every case the transaction is rolled back: each raw table keeps its previous state.
    """
    wanted = _check_resources(resources)
    root = store_for(snapshots_uri)
    # fail fast, before touching the database, when a whole snapshot is missing
    for resource in wanted:
        _read_manifest(root, resource, snapshot_date)
    con.begin()
    try:
        counts = {resource: _load_resource(con, root, resource, snapshot_date) for resource in wanted}
        con.commit()
    except BaseException:
        con.rollback()
        raise
    log.info("loaded partition %s: %s", snapshot_date, counts)
    return counts


def load_partitions(
    con: duckdb.DuckDBPyConnection,
    snapshots_uri: Path | str,
    first: date,
    last: date,
    resources: Sequence[str] | None = None,
) -> dict[date, dict[str, int]]:
    """:func:`load_partition` for every day ``first .. last`` (a backfill), all in ONE transaction.

    Returns:
        ``{snapshot_date: {resource: rows}}``, ascending.

    Raises:
        SnapshotMissingError, LoadError, WarehouseError: as :func:`load_partition`, for any day; checked
            before any write where possible, and the whole range is rolled back otherwise.
    """
    from datetime import timedelta

    if first > last:
        raise WarehouseError(f"empty range: {first} is after {last}")
    wanted = _check_resources(resources)
    root = store_for(snapshots_uri)
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    for day in days:
        for resource in wanted:
            _read_manifest(root, resource, day)
    con.begin()
    try:
        counts = {day: {r: _load_resource(con, root, r, day) for r in wanted} for day in days}
        con.commit()
    except BaseException:
        con.rollback()
        raise
    log.info("loaded partitions %s .. %s", first, last)
    return counts


def snapshot_dates(snapshots_uri: Path | str) -> dict[date, list[str]]:
    """``{date: [resources with a committed snapshot that day]}`` under ``snapshots_uri``, ascending."""
    found: dict[date, list[str]] = {}
    for resource in ENDPOINTS:
        for d in list_snapshot_dates(snapshots_uri, resource):
            found.setdefault(d, []).append(resource)
    return dict(sorted(found.items()))


def reload_raw_from_snapshots(
    con: duckdb.DuckDBPyConnection,
    snapshots_uri: Path | str,
    first: date | None = None,
    last: date | None = None,
) -> dict[date, dict[str, int]]:
    """Make the raw tables hold exactly the committed snapshots, in one transaction.

    Without ``first``/``last``: drop the raw tables and reload every committed snapshot partition. With
    them: delete every raw row dated ``first .. last`` (either bound may be None: open) and reload the
    committed snapshots of those days; rows of other days are kept. A date loads the resources committed
    for it (history may predate a resource). Staging and marts are not rebuilt here: see
    :mod:`rank_pipeline.steps.rebuild` (``rank-pipeline rebuild``).

    Returns:
        ``{snapshot_date: {resource: rows}}`` for the days reloaded.

    Raises:
        LoadError: as :func:`load_partition`; the whole rebuild is rolled back.
    """
    root = store_for(snapshots_uri)
    whole = first is None and last is None
    lo, hi = first or date.min, last or date.max
    result: dict[date, dict[str, int]] = {}
    con.begin()
    try:
        for resource in ENDPOINTS:
            if whole:
                con.execute(f"drop table if exists {RAW_SCHEMA}.{_qi(resource)}")
            ensure_raw_table(con, resource)
            if not whole:
                con.execute(f"delete from {RAW_SCHEMA}.{_qi(resource)} where snapshot_date between ? and ?", [lo, hi])
        for d, resources in snapshot_dates(root).items():
            if lo <= d <= hi:
                result[d] = {r: _load_resource(con, root, r, d) for r in resources}
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return result


class Warehouse:
    """The build file (one writer) and the published file (readers); see the module docstring.

    Args:
        build_path: the private working DuckDB file (``data/warehouse.build.duckdb``).
        published_path: the file analysts open read-only (``data/warehouse.duckdb``).
    """

    def __init__(self, build_path: Path | str, published_path: Path | str, storage_version: str | None = None):
        self.build_path = Path(build_path)
        self.published_path = Path(published_path)
        version = storage_version or storage_version_from_env()
        if not re.fullmatch(r"latest|v\d+\.\d+\.\d+", version):
            raise WarehouseError(
                f"{STORAGE_VERSION_ENV}={version!r} is not a DuckDB release: set it to one such as "
                f"{DEFAULT_STORAGE_VERSION} or v1.4.0 (the oldest DuckDB that must read the published file), "
                "or to latest"
            )
        self.storage_version = version
        """DuckDB release whose storage format the published file is written in, or ``latest``."""
        if self.build_path.resolve() == self.published_path.resolve():
            raise WarehouseError(
                f"build and published paths are the same file ({self.build_path}); readers would block the load"
            )

    def connect(self) -> duckdb.DuckDBPyConnection:
        """Open the writer connection to the build file, creating it and the schemas if needed.

        Close it when done (it is a context manager). Within one process, several calls share one
        database instance; a second process gets a lock error, which is the one-writer rule at work.

        Raises:
            WarehouseError: the build file is locked by another process or cannot be opened.
        """
        self.build_path.parent.mkdir(parents=True, exist_ok=True)
        # a new build file is created in the published storage version, so publishing is a byte copy, then
        # reopened like any existing one (which keeps its own version): every connection of the process has
        # the same configuration, which DuckDB requires of connections sharing a file
        if not self.build_path.exists() and self.storage_version != "latest":
            try:
                duckdb.connect(str(self.build_path),
                               config={"storage_compatibility_version": self.storage_version}).close()
            except duckdb.InvalidInputException as exc:
                self.build_path.unlink(missing_ok=True)
                raise WarehouseError(
                    f"{STORAGE_VERSION_ENV}={self.storage_version} is not a storage version this DuckDB writes "
                    f"({_first_sentence(exc)}): set it to a DuckDB release such as {DEFAULT_STORAGE_VERSION}"
                ) from exc
        try:
            con = duckdb.connect(str(self.build_path))
        except duckdb.Error as exc:
            raise WarehouseError(
                f"cannot open the build warehouse {self.build_path} for writing ({exc}). Only one process may "
                "write it: take the data folder's writer lock (rank_pipeline.warehouse.locks) first, and let "
                "readers open the published file instead"
            ) from exc
        for schema in SCHEMAS:
            con.execute(f"create schema if not exists {schema}")
        ensure_keywords_file_table(con)
        return con

    def read_only_connect(self) -> duckdb.DuckDBPyConnection:
        """Open the published file read-only (for analysts, BI, asset checks that only read).

        Raises:
            WarehouseError: nothing has been published yet.
        """
        if not self.published_path.is_file():
            raise WarehouseError(
                f"no published warehouse at {self.published_path} yet: load a partition and publish first "
                "(e.g. `rank-pipeline demo`)"
            )
        return duckdb.connect(str(self.published_path), read_only=True)

    def reload_raw_from_snapshots(self, snapshots_uri: Path | str) -> dict[date, dict[str, int]]:
        """:func:`reload_raw_from_snapshots` on a fresh writer connection (closed afterwards)."""
        with self.connect() as con:
            return reload_raw_from_snapshots(con, snapshots_uri)

    def publish(self, con: duckdb.DuckDBPyConnection | None = None) -> Path:
        """Checkpoint the build file and atomically replace the published file with a copy of it.

        The copy is in :attr:`storage_version` (module docstring, "Storage version of the published
        file"): a streamed byte copy when the build file is in that version, else ``COPY FROM DATABASE``.
        It goes into a temporary file beside the published one, fsynced, then renamed over it.

        Args:
            con: the open writer connection, if the caller holds one (it must be idle: no open
                transaction); otherwise a connection is opened and closed here.

        Returns:
            The published path.

        Raises:
            PublishError: the checkpoint failed (a transaction is still open), DuckDB cannot write that
                storage version, or the copy failed. The previously published file is untouched.
        """
        if not self.build_path.is_file():
            raise PublishError(f"nothing to publish: {self.build_path} does not exist; load a partition first")
        self.published_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.published_path.with_name(f".{self.published_path.name}.{uuid.uuid4().hex[:8]}.tmp")
        own = self.connect() if con is None else None
        writer = own or con
        try:
            try:
                writer.execute("checkpoint")
            except duckdb.Error as exc:
                raise PublishError(
                    f"cannot checkpoint {self.build_path} before publishing ({exc}); commit or roll back open "
                    "transactions on the writer connection and publish again"
                ) from exc
            self._write_copy(writer, tmp)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            # a stale WAL beside the published file would be replayed onto the new file: remove it
            stale_wal = self.published_path.with_name(self.published_path.name + ".wal")
            stale_wal.unlink(missing_ok=True)
            os.replace(tmp, self.published_path)
        except PublishError:
            _remove_tmp(tmp)
            raise
        except duckdb.Error as exc:
            _remove_tmp(tmp)
            raise PublishError(
                f"writing {self.published_path} in storage version {self.storage_version} failed ({exc}); the "
                f"published file is unchanged. If DuckDB does not know that version, set {STORAGE_VERSION_ENV} "
                f"to another (e.g. {DEFAULT_STORAGE_VERSION}) and publish again"
            ) from exc
        except OSError as exc:
            _remove_tmp(tmp)
            raise PublishError(
                f"copying {self.build_path} to {self.published_path} failed ({exc}); the published file is "
                "unchanged. Check free disk space and permissions, then publish again"
            ) from exc
        finally:
            if own is not None:
                own.close()
        try:
            dir_fd = os.open(self.published_path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError:  # pragma: no cover - some file systems refuse fsync on directories
            pass
        log.info("published %s -> %s (storage version %s)", self.build_path, self.published_path,
                 self.storage_version)
        return self.published_path

    def _write_copy(self, con: duckdb.DuckDBPyConnection, tmp: Path) -> None:
        """Copy the checkpointed build database into the new file ``tmp`` in :attr:`storage_version`.

        The caller holds the data folder's writer lock and ``con`` is idle after its checkpoint, so the
        build file does not change while it is read: a byte copy (``shutil.copyfile``, streamed by the
        kernel) is the database. When the build file is in another storage version, the database is
        copied through DuckDB instead (one transaction, buffered in memory).
        """
        (source,) = con.execute("select current_database()").fetchone()
        alias = f"publish_{uuid.uuid4().hex[:8]}"
        option = "" if self.storage_version == "latest" else f" (STORAGE_VERSION '{self.storage_version}')"
        con.execute(f"attach '{_sql_str(tmp)}' as {alias}{option}")
        try:
            build_version = _storage_tag(con, source)
            same_version = build_version == _storage_tag(con, alias)
            if not same_version:
                log.info("publishing %s through COPY FROM DATABASE: it is in storage %s, the setting asks %s "
                         "(a full rebuild recreates it in the set version)", self.build_path, build_version,
                         self.storage_version)
                con.execute(f"copy from database {_qi(source)} to {alias}")
        finally:
            con.execute(f"detach {alias}")
        if same_version:
            _remove_tmp(tmp)
            shutil.copyfile(self.build_path, tmp)


def _storage_tag(con: duckdb.DuckDBPyConnection, database: str) -> str:
    """The oldest DuckDB release that reads ``database`` (``duckdb_databases().tags['storage_version']``)."""
    (tags,) = con.execute("select tags from duckdb_databases() where database_name = ?", [database]).fetchone()
    return (tags or {}).get("storage_version", "")


def _first_sentence(exc: BaseException) -> str:
    return str(exc).split(", valid options")[0]


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")


def _remove_tmp(tmp: Path) -> None:
    tmp.unlink(missing_ok=True)
    tmp.with_name(tmp.name + ".wal").unlink(missing_ok=True)
