"""The raw layer of the warehouse, loaded from the Parquet snapshots: one table per resource in ``raw``.

Implements docs/concepts/architecture.md, "Warehouse and the dbt-like runner": the snapshots as the system of record.
No Dagster here; ``rank_pipeline/defs`` wires these functions into assets. The file they write, and its
publishing, is :mod:`rank_pipeline.warehouse.warehouse_file`; the errors are :mod:`rank_pipeline.warehouse.errors`.

Raw layer
    One table per resource in schema ``raw`` (``raw.domains``, ``raw.keywords``, ``raw.competitors``,
    ``raw.tags``, ``raw.usage``, ``raw.locations``, ``raw.languages``). Columns: the snapshot columns of
    docs/concepts/completeness.md, "Snapshots" (``snapshot_date DATE``, ``account``, ``id``, ``type``,
    ``parent_id``, ``extracted_at TIMESTAMPTZ``, ``attributes JSON``) plus ``loaded_at TIMESTAMPTZ`` (the start
    of the load's transaction; the same for every row of a load). The fields of ``attributes`` the models read
    are typed by the vendor's contract in ``vendor.<endpoint>`` (:mod:`rank_pipeline.transform.flatten`).

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
    manifest lists are read (:mod:`rank_pipeline.snapshots.writer`, "Commit"). Local files are read with DuckDB's
    ``read_parquet``; files on an object store are read through pyarrow (a ``pyarrow.dataset`` over the
    store's pyarrow file system, registered in DuckDB as an Arrow scan), because DuckDB's ``httpfs`` is
    not bundled with the ``duckdb`` wheel and would be downloaded at run time: nothing is downloaded.

Snapshot versions
    Files of every snapshot version (:data:`rank_pipeline.snapshots.schema.READABLE_VERSIONS`) load into the
    same tables: the columns of the snapshot schema are read BY NAME, and any other column of a file (version
    1's flattened copies of fields of ``attributes``) is left out, never added to the raw table, so a history
    written by an earlier version rebuilds into the same warehouse. A snapshot of a later version (its
    manifest's ``schema_version``) fails the load with a clear error: upgrade to read it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

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
from rank_pipeline.transform.sql import one_row, table_columns
from rank_pipeline.transform.sql import quote_ident as _qi
from rank_pipeline.warehouse.errors import LoadError, SnapshotMissingError, WarehouseError

__all__ = [
    "ENDPOINTS",
    "KEYWORDS_FILE_COLUMNS",
    "KEYWORDS_FILE_TABLE",
    "RAW_SCHEMA",
    "RAW_TABLES",
    "SOURCE_TABLES",
    "ensure_keywords_file_table",
    "ensure_raw_table",
    "load_partition",
    "load_partitions",
    "reload_raw_from_snapshots",
    "snapshot_dates",
]

RAW_SCHEMA = "raw"

RAW_TABLES: tuple[str, ...] = tuple(f"{RAW_SCHEMA}.{r}" for r in ENDPOINTS)
"""Qualified names of the raw tables, one per snapshot resource."""

log = logging.getLogger(__name__)

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
        if any(text in str(exc) for text in ("cannot read the manifest", "not a JSON object", "schema_version")):
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


def _table_columns(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> dict[str, str] | None:
    return table_columns(con, schema, table) or None


def ensure_raw_table(con: duckdb.DuckDBPyConnection, resource: str) -> dict[str, str]:
    """Create ``raw.<resource>`` from the snapshot schema if absent (and the keywords file's table,
    :func:`ensure_keywords_file_table`, so every loaded warehouse has every source); return its columns.

    A table an earlier version created with columns beyond the schema (version 1's flattened copies of
    fields of ``attributes``) loses them here, so no stale copy of a field outlives the upgrade."""
    con.execute(f"create schema if not exists {RAW_SCHEMA}")
    ensure_keywords_file_table(con)
    cols = _table_columns(con, RAW_SCHEMA, resource)
    if cols is not None:
        stale = [c for c in cols if c not in arrow_schema(resource).names and c != "loaded_at"]
        for column in stale:
            con.execute(f"alter table {RAW_SCHEMA}.{_qi(resource)} drop column {_qi(column)}")
        if stale:
            log.info("raw.%s: dropped %s (copies of attributes fields an earlier version kept)",
                     resource, ", ".join(stale))
            cols = _table_columns(con, RAW_SCHEMA, resource) or {}
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


def _file_schemas(store: Store, resource: str, snapshot_date: date, files: Sequence[str]) -> list[pa.Schema]:
    """The Arrow schema of each of ``files`` (from its Parquet footer), in order.

    Raises:
        LoadError: a file the manifest lists is missing, or its footer is not readable Parquet.
    """
    schemas: list[pa.Schema] = []
    for path in files:
        shown = store.display(path)
        if not store.is_file(path):
            raise LoadError(
                f"partition {snapshot_date} of raw.{resource}: file {shown} is listed in {MANIFEST_NAME} but "
                f"missing; re-extract {resource} for {snapshot_date} (or restore the file)"
            )
        try:
            schemas.append(pq.read_metadata(path, filesystem=store.fs).schema.to_arrow_schema())
        except Exception as exc:  # pyarrow raises several types for a damaged footer
            raise LoadError(
                f"partition {snapshot_date} of raw.{resource}: {shown} is not a readable Parquet file ({exc}); "
                f"re-extract {resource} for {snapshot_date} or restore the file from a backup"
            ) from exc
    return schemas


def _insert_files(con: duckdb.DuckDBPyConnection, store: Store, resource: str, snapshot_date: date, folder: str,
                  files: Sequence[str], file_schemas: list[pa.Schema], columns: dict[str, str]) -> int:
    """Insert the rows of ``files`` into ``raw.<resource>`` by name, the columns of the snapshot schema only
    (module doc, "Snapshot versions"); the number of rows inserted.

    Local files are read by DuckDB's ``read_parquet``; files on an object store through a
    :class:`pyarrow.dataset.Dataset` registered in DuckDB as an Arrow scan (no DuckDB extension is loaded).

    Raises:
        LoadError: DuckDB or pyarrow could not read the files or insert their rows.
    """
    table = f"{RAW_SCHEMA}.{_qi(resource)}"
    file_names = {name for schema in file_schemas for name in schema.names}
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
    read = [name for name in arrow_schema(resource).names if name in file_names and name in columns]
    select = ", ".join("cast(attributes as json) as attributes" if name == "attributes" else _qi(name)
                       for name in read)
    try:
        (inserted,) = one_row(
            con, f"insert into {table} by name select {select}, current_timestamp as loaded_at from {source}")
    except (duckdb.Error, pa.ArrowException, OSError) as exc:
        raise LoadError(
            f"partition {snapshot_date} of raw.{resource}: reading {folder} failed: {exc}. The load was rolled "
            f"back and raw tables keep their previous state; fix or re-extract the snapshot, then reload"
        ) from exc
    finally:
        if registered is not None:
            con.unregister(registered)
    return int(inserted)


def _load_resource(
    con: duckdb.DuckDBPyConnection, snapshots_uri: Path | str | Store, resource: str, snapshot_date: date
) -> int:
    """Delete and insert one resource's partition, then check its row count; caller holds the transaction.

    Only the files the committed manifest lists are read (:func:`_insert_files`). Returns the rows now in
    ``raw.<resource>`` for ``snapshot_date``.

    Raises:
        LoadError: a file is missing or unreadable, rows carry another date, or the count disagrees with
            the manifest.
    """
    store = store_for(snapshots_uri)
    folder, manifest = _read_manifest(store, resource, snapshot_date)
    files = snapshot_files(store, resource, snapshot_date, manifest)
    file_schemas = _file_schemas(store, resource, snapshot_date, files)
    columns = ensure_raw_table(con, resource)
    table = f"{RAW_SCHEMA}.{_qi(resource)}"
    con.execute(f"delete from {table} where snapshot_date = ?", [snapshot_date])
    if not files:
        return 0
    inserted = _insert_files(con, store, resource, snapshot_date, folder, files, file_schemas, columns)
    (loaded,) = one_row(con, f"select count(*) from {table} where snapshot_date = ?", [snapshot_date])
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


def snapshot_dates(snapshots_uri: Path | str | Store) -> dict[date, list[str]]:
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
