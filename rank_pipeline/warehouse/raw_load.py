"""The raw tables, loaded from the committed Parquet snapshots: one per resource in ``raw`` (the snapshot
columns plus ``loaded_at``), and ``raw.keywords_file``; :func:`load_raw` and :func:`restore_raw` hand the days to
any engine (an engine that reads in place, the days :class:`~rank_pipeline.warehouse.raw_days.RawDays` records),
:func:`load_partition`, :func:`load_partitions` and :func:`reload_raw_from_snapshots` work on bare DuckDB.
A failure (:class:`SnapshotMissingError`, :class:`LoadError`) leaves every raw table as it was
(docs/concepts/operations.md, "The raw load").
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import date, timedelta
from functools import cache
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
    check_resource,
    empty_table,
    partition_dir,
)
from rank_pipeline.snapshots.storage import Store, store_for
from rank_pipeline.transform.duckdb_engine import DuckDBEngine
from rank_pipeline.transform.errors import RawLoadError
from rank_pipeline.transform.primitives import ModelEngine, RawDay, RawTable
from rank_pipeline.transform.sql import quote_ident as _qi
from rank_pipeline.transform.sql import table_columns
from rank_pipeline.warehouse.errors import LoadError, SnapshotMissingError, WarehouseError
from rank_pipeline.warehouse.raw_days import days_after_load

__all__ = [
    "ENDPOINTS",
    "KEYWORDS_FILE",
    "KEYWORDS_FILE_COLUMNS",
    "KEYWORDS_FILE_TABLE",
    "RAW_SCHEMA",
    "RAW_TABLES",
    "SOURCE_TABLES",
    "ensure_keywords_file_table",
    "ensure_raw_table",
    "held_days",
    "load_partition",
    "load_partitions",
    "load_raw",
    "raw_columns",
    "raw_tables",
    "reload_raw_from_snapshots",
    "restore_raw",
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
KEYWORDS_FILE = KEYWORDS_FILE_TABLE.removeprefix(f"{RAW_SCHEMA}.")
"""The keywords file's raw table, by its bare name (``keywords_file``)."""
SOURCE_TABLES: tuple[str, ...] = (*RAW_TABLES, KEYWORDS_FILE_TABLE)
"""Every ``raw`` table a model may read: the snapshot tables and :data:`KEYWORDS_FILE_TABLE`."""


def ensure_keywords_file_table(con: duckdb.DuckDBPyConnection) -> None:
    """Create :data:`KEYWORDS_FILE_TABLE` (empty) if it does not exist."""
    columns = ", ".join(f"{name} {kind}" for name, kind in KEYWORDS_FILE_COLUMNS)
    con.execute(f"create table if not exists {KEYWORDS_FILE_TABLE} ({columns})")


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
    empty = empty_table(resource)
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


def _raw_day(store: Store, resource: str, day: date, folder: str, manifest: SnapshotManifest, *,
             footers: bool) -> RawDay:
    """One committed day of ``resource`` as the engine is handed it (:class:`RawDay`); with ``footers``, the
    files' footers read (each listed file must exist and be Parquet) for the columns they hold, and on an
    object store a ``pyarrow.dataset`` over them.

    Raises:
        LoadError: a file the manifest lists is missing or not readable Parquet (``footers`` only).
    """
    paths = snapshot_files(store, resource, day, manifest)
    shown = tuple(f"{folder.rstrip('/')}/{name}" for name in manifest.files)
    files = tuple(paths) if store.local else shown
    if not footers:
        return RawDay(day, files, manifest.row_count, folder, complete=manifest.complete)
    schemas = _file_schemas(store, resource, day, paths)
    names = {name for schema in schemas for name in schema.names}
    dataset = None
    if not store.local and paths:
        import pyarrow.dataset as pads

        dataset = pads.dataset(paths, schema=pa.unify_schemas(schemas, promote_options="permissive"),
                               format="parquet", filesystem=store.fs)
    return RawDay(day, files, manifest.row_count, folder, tuple(n for n in arrow_schema(resource).names if n in names),
                  dataset, manifest.complete)


def raw_tables(roots: Sequence[Path | str | Store], first: date | None, last: date | None, *, strict: bool,
               footers: bool, resources: Sequence[str] | None = None) -> list[RawTable]:
    """The raw tables (each of ``resources``, default :data:`ENDPOINTS`, then the keywords file's) with their
    committed days ``first .. last`` (None: open) under ``roots``: what an engine's ``load_raw`` is handed.
    ``strict``: every day must have every resource committed; ``footers``: read the files' footers.

    Raises SnapshotMissingError (``strict``, a resource missing), LoadError (a damaged manifest or file) or
    WarehouseError (an unknown resource).
    """
    wanted = _check_resources(resources)
    stores = [store_for(root) for root in roots]
    tables = []
    for resource in wanted:
        days: list[RawDay] = []
        for store in stores:
            if strict:
                assert first is not None and last is not None
                listed = [first + timedelta(days=i) for i in range((last - first).days + 1)]
            else:
                listed = [d for d in list_snapshot_dates(store, resource)
                          if (first is None or d >= first) and (last is None or d <= last)]
            for day in listed:
                folder, manifest = _read_manifest(store, resource, day)
                days.append(_raw_day(store, resource, day, folder, manifest, footers=footers))
        tables.append(RawTable(resource, raw_columns(resource), tuple(sorted(days, key=lambda d: d.day))))
    return [*tables, RawTable(KEYWORDS_FILE, raw_columns(KEYWORDS_FILE))]


def raw_columns(table: str) -> tuple[tuple[str, str], ...]:
    """``((column, DuckDB type), ...)`` of ``raw.<table>`` as the warehouse creates it, in table order (the
    models folder declares the same in ``sources:`` (``sources/raw.yml``); a test holds the two equal).

    Raises:
        rank_pipeline.snapshots.schema.SnapshotError: ``table`` is neither an endpoint nor the keywords file's.
    """
    if table != KEYWORDS_FILE:
        check_resource(table)
    return _every_raw_table_s_columns()[table]


@cache
def _every_raw_table_s_columns() -> dict[str, tuple[tuple[str, str], ...]]:
    """:func:`raw_columns` of every raw table, all created once in one in-memory database (a connection costs
    tens of milliseconds, paid once a process)."""
    with duckdb.connect(":memory:") as con:
        con.execute(f"create schema {RAW_SCHEMA}")
        for resource in ENDPOINTS:
            ensure_raw_table(con, resource)  # the keywords file's table too
        names = [qualified.removeprefix(f"{RAW_SCHEMA}.") for qualified in SOURCE_TABLES]
        return {name: tuple(table_columns(con, RAW_SCHEMA, name).items()) for name in names}


def _roots(snapshots: Path | str | Store | Sequence[Path | str | Store]) -> list[Path | str | Store]:
    return [snapshots] if isinstance(snapshots, Path | str | Store) else list(snapshots)


def _listed(tables: Sequence[RawTable]) -> set[date]:
    """The committed days of ``tables``, whichever resource has them."""
    return {d.day for t in tables for d in t.days}


def _holding(tables: Sequence[RawTable], days: Collection[date]) -> list[RawTable]:
    """``tables`` with only their committed days among ``days``."""
    return [replace(t, days=tuple(d for d in t.days if d.day in days)) for t in tables]


def load_raw(engine: ModelEngine, snapshots: Path | str | Store | Sequence[Path | str | Store], first: date | None,
             last: date | None, *, strict: bool = False, resources: Sequence[str] | None = None,
             count: bool = True) -> dict[date, dict[str, int]]:
    """Make ``engine``'s raw tables hold the committed snapshots under ``snapshots`` (one root, or several whose
    days are combined): the days ``first .. last`` (None: an open bound; both None: every raw table reloaded
    whole) replaced, other days kept, in one step (:meth:`~rank_pipeline.transform.primitives.ModelEngine.load_raw`).
    An engine that reads in place is handed every day the raw tables then hold: with a ledger (the engine's
    ``raw_ledger``), the days it holds (:meth:`~rank_pipeline.warehouse.raw_days.RawDays.held`; every committed
    day when it cannot tell) outside ``first .. last`` and the range's committed days; without, every committed
    day. The ledger (the data folder's, whatever the engine) then records the days held. Returns ``{day: {resource: rows}}`` of ``first .. last``
    (``{}`` when not ``count``).

    The caller loads only days that passed the shape check (docs/concepts/shape-check.md, "The days the raw
    tables hold").

    Raises:
        SnapshotMissingError: ``strict`` and a day of ``first .. last`` lacks a resource's committed snapshot.
        LoadError: a snapshot is damaged; nothing is loaded and the ledger is left as it was.
        WarehouseError: an empty range or an unknown resource name.
    """
    if first is not None and last is not None and first > last:
        raise WarehouseError(f"empty range: {first} is after {last}")
    roots = _roots(snapshots)
    ledger = engine.raw_ledger
    held = ledger.held() if ledger is not None else None
    after: frozenset[date] | None = None  # the days held after this load, when recorded
    if engine.reads_raw_in_place:
        if strict:  # the days must be committed, even though they are read with the others
            raw_tables(roots, first, last, strict=True, footers=False, resources=resources)
        tables = raw_tables(roots, None, None, strict=False, footers=False, resources=resources)
        if ledger is not None:
            committed = _listed(tables)
            after = days_after_load(committed if held is None else held, committed, first, last)
            tables = _holding(tables, after)
    else:
        tables = raw_tables(roots, first, last, strict=strict, footers=True, resources=resources)
        if ledger is not None:
            before = held if held is not None else {d for root in roots for r in _check_resources(resources)
                                                    for d in list_snapshot_dates(root, r)}
            after = days_after_load(before, _listed(tables), first, last)
    try:
        counts = engine.load_raw(tables, first, last, count=count)
    except RawLoadError as exc:
        raise LoadError(str(exc)) from exc
    if ledger is not None and after is not None:
        ledger.write(after)
    return counts


def restore_raw(engine: ModelEngine, snapshots: Path | str | Store | Sequence[Path | str | Store]) -> None:
    """Make ``engine``'s raw tables hold the committed days its ``raw_ledger`` holds (every committed day when it
    cannot tell, or is None), loading no other day and writing nothing: an engine that reads in place, at the start of a
    session (:attr:`~rank_pipeline.transform.primitives.ModelEngine.raw_loaded` False).

    Raises LoadError (a damaged snapshot) as :func:`load_raw`.
    """
    roots = _roots(snapshots)
    tables = raw_tables(roots, None, None, strict=False, footers=not engine.reads_raw_in_place)
    held = engine.raw_ledger.held() if engine.raw_ledger is not None else None
    try:
        engine.load_raw(tables if held is None else _holding(tables, held), None, None, count=False)
    except RawLoadError as exc:
        raise LoadError(str(exc)) from exc


def load_partition(
    con: duckdb.DuckDBPyConnection,
    snapshots_uri: Path | str,
    snapshot_date: date,
    resources: Sequence[str] | None = None,
) -> dict[str, int]:
    """Replace one ``snapshot_date`` of the raw tables on the idle writer connection ``con`` from the snapshots
    under ``snapshots_uri``, in one transaction (idempotent); ``resources`` default: all of :data:`ENDPOINTS`.
    Returns ``{resource: rows now in raw.<resource> for that date}``.

    Raises SnapshotMissingError (a resource not committed that day), LoadError (a file missing, unreadable, of
    another date or disagreeing with its manifest) or WarehouseError (an unknown resource); rolled back.
    """
    counts = load_partitions(con, snapshots_uri, snapshot_date, snapshot_date, resources).get(snapshot_date, {})
    log.info("loaded partition %s: %s", snapshot_date, counts)
    return counts


def load_partitions(
    con: duckdb.DuckDBPyConnection,
    snapshots_uri: Path | str,
    first: date,
    last: date,
    resources: Sequence[str] | None = None,
) -> dict[date, dict[str, int]]:
    """:func:`load_partition` for every day ``first .. last`` in one transaction; ``{snapshot_date: {resource:
    rows}}``, ascending. Raises as :func:`load_partition`, the whole range rolled back.
    """
    return load_raw(DuckDBEngine(con), snapshots_uri, first, last, strict=True, resources=resources)


def held_days(con: duckdb.DuckDBPyConnection) -> frozenset[date]:
    """The snapshot days the raw tables of ``con`` hold (any resource's): the ledger's default on DuckDB
    (:class:`~rank_pipeline.warehouse.raw_days.RawDays`)."""
    tables = [r for r in ENDPOINTS if "snapshot_date" in table_columns(con, RAW_SCHEMA, r)]
    if not tables:
        return frozenset()
    union = " union ".join(f"select distinct snapshot_date from {RAW_SCHEMA}.{_qi(r)}" for r in tables)
    return frozenset(d for (d,) in con.execute(union).fetchall() if d is not None)


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
    """Make the raw tables of ``con`` hold exactly the committed snapshots, in one transaction: all of them (the
    tables dropped and reloaded), or the days ``first .. last`` (either bound None: open), other days kept; a day
    loads what was committed for it. Returns ``{snapshot_date: {resource: rows}}``.
    Raises LoadError as :func:`load_partition`, everything rolled back.
    """
    return load_raw(DuckDBEngine(con), snapshots_uri, first, last)
