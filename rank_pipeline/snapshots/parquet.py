"""Parquet snapshots: the system of record.

The API tells only the present, so a past day can never be fetched again: each daily run writes one
snapshot per resource, and every warehouse table can be rebuilt from them. A snapshot is immutable once
committed, except that re-extracting the same day (from the sandbox, or today again from the real API)
replaces it whole.

Layout (``docs/concepts/completeness.md``, "Snapshots")::

    <root>/<resource>/snapshot_date=YYYY-MM-DD/part-<account>-NNNN.parquet
    <root>/<resource>/snapshot_date=YYYY-MM-DD/_manifest.json

Columns: ``snapshot_date`` (date32), ``account``, ``id``, ``type``, ``parent_id`` (string, null),
``extracted_at`` (timestamp[us, UTC]), ``attributes`` (the record's full ``attributes`` as a JSON string),
then the fields the spec shows, flattened (:data:`SPEC_FIELDS`). Fields the spec marks "not shown" are
never flattened here: they stay in ``attributes`` and are read by the staging SQL models only.

Writing streams: records are buffered up to ``row_group_size`` rows and flushed as a Parquet row group,
so memory does not grow with the size of an account. Files are written into a hidden staging folder and
moved into place by :meth:`SnapshotWriter.commit`; a failed run calls :meth:`SnapshotWriter.abort` and
leaves the previous snapshot of that day (if any) untouched.

Where: ``root`` is a local folder or any store of :mod:`rank_pipeline.snapshots.storage`
(``RANK_PIPELINE_SNAPSHOTS_URI=s3://bucket/prefix``). Commit: where renames are not atomic (object
stores) and for shard workers (:mod:`rank_pipeline.snapshots.shards`), data files go straight into the day's
folder under unique names and the manifest is written last; readers (:func:`read_manifest`,
:func:`read_snapshot`, :func:`list_snapshot_dates`, the warehouse load) trust only files a manifest
lists. A day committed by ``n`` shards has ``_manifest.shard-<i>-of-<n>.json`` files and counts as
committed once all ``n`` are there (see :class:`SnapshotWriter`).

The API key is never passed to this module, so it cannot reach a snapshot or a manifest.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pydantic import ValidationError

from rank_pipeline.api.endpoints import CATALOG, endpoint_names
from rank_pipeline.errors import RankPipelineError
from rank_pipeline.snapshots.manifest import ListsReport, SnapshotManifest
from rank_pipeline.snapshots.shards import Shard
from rank_pipeline.snapshots.storage import Store, store_for

__all__ = [
    "ENDPOINTS",
    "SCHEMA_VERSION",
    "SPEC_FIELDS",
    "SnapshotError",
    "SnapshotWriter",
    "arrow_schema",
    "list_snapshot_dates",
    "partition_dir",
    "read_manifest",
    "read_snapshot",
    "records_table",
    "snapshot_files",
]

ENDPOINTS: tuple[str, ...] = endpoint_names()
"""Every resource the pipeline snapshots, in extraction order (declared in :data:`rank_pipeline.api.endpoints.CATALOG`)."""

SCHEMA_VERSION = 1
MANIFEST_NAME = "_manifest.json"
_MANIFEST_PREFIX = "_manifest"
_SHARD_MANIFEST_RE = re.compile(r"^_manifest\.shard-(\d+)-of-(\d+)\.json$")
_ACCOUNT_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

_ARROW_TYPES: dict[str, pa.DataType] = {"string": pa.string(), "int64": pa.int64(), "bool": pa.bool_()}
"""Arrow type of each field type a declaration may name (:data:`rank_pipeline.api.endpoints.FIELD_TYPES`)."""

SPEC_FIELDS: dict[str, list[tuple[str, pa.DataType, Callable[[Mapping[str, Any]], Any]]]] = {
    r.name: [(f.column, _ARROW_TYPES[f.type], f.get) for f in r.fields] for r in CATALOG
}
"""Per resource: (column, Arrow type, getter over ``attributes``) for each field the spec shows, derived
from the resource's declaration (:class:`rank_pipeline.api.endpoints.Endpoint` ``fields``)."""

_COMMON: list[tuple[str, pa.DataType]] = [
    ("snapshot_date", pa.date32()),
    ("account", pa.string()),
    ("id", pa.string()),
    ("type", pa.string()),
    ("parent_id", pa.string()),
    ("extracted_at", pa.timestamp("us", tz="UTC")),
    ("attributes", pa.string()),
]


class SnapshotError(RankPipelineError, RuntimeError):
    """A snapshot could not be written or read; the message names the path and what to do."""


def arrow_schema(resource: str) -> pa.Schema:
    """The Arrow schema of ``resource``'s snapshot files: the common columns, then :data:`SPEC_FIELDS`.

    Raises:
        SnapshotError: ``resource`` is not one of :data:`ENDPOINTS`.
    """
    _check_resource(resource)
    return pa.schema(_COMMON + [(name, typ) for name, typ, _ in SPEC_FIELDS[resource]])


def partition_dir(root: Path | str | Store, resource: str, snapshot_date: date) -> Path | str:
    """``<root>/<resource>/snapshot_date=YYYY-MM-DD``: where one day's snapshot of a resource lives.

    A :class:`pathlib.Path` for a local root, a URI string (``s3://bucket/prefix/...``) otherwise.
    """
    _check_resource(resource)
    store = store_for(root)
    folder = store.join(resource, f"snapshot_date={snapshot_date.isoformat()}")
    return Path(folder) if store.local else store.display(folder)


def _folder(store: Store, resource: str, snapshot_date: date) -> str:
    return store.join(resource, f"snapshot_date={snapshot_date.isoformat()}")


def _merge_shards(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    """One manifest for a day committed by ``n`` shards (:mod:`rank_pipeline.snapshots.shards`)."""
    merged = dict(manifests[0])
    merged["files"] = [f for m in manifests for f in m.get("files", [])]
    merged["row_count"] = sum(int(m.get("row_count", 0)) for m in manifests)
    merged["complete"] = all(m.get("complete", True) for m in manifests)
    merged["written_at"] = max(str(m.get("written_at", "")) for m in manifests)
    merged["accounts"] = {k: v for m in manifests for k, v in sorted((m.get("accounts") or {}).items())}
    merged["shards"] = len(manifests)
    return merged


def _committed_manifest(store: Store, folder: str, names: Iterable[str] | None = None) -> dict[str, Any] | None:
    """The manifest a reader trusts in ``folder``, or None when nothing there is committed.

    ``_manifest.json`` (one writer) or the union of a full set of shard manifests
    ``_manifest.shard-<i>-of-<n>.json`` (every ``i`` of one ``n``); when both exist the newer wins.

    Raises:
        SnapshotError: a manifest is not readable JSON.
    """
    if names is None:
        names = [posixpath.basename(i.path) for i in store.listdir(folder)]
    names = set(names)
    candidates: list[dict[str, Any]] = []
    if MANIFEST_NAME in names:
        candidates.append(_load_json(store, posixpath.join(folder, MANIFEST_NAME)))
    by_count: dict[int, dict[int, str]] = {}
    for name in names:
        match = _SHARD_MANIFEST_RE.match(name)
        if match:
            by_count.setdefault(int(match.group(2)), {})[int(match.group(1))] = name
    for count, shards in by_count.items():
        if len(shards) == count:
            candidates.append(_merge_shards([_load_json(store, posixpath.join(folder, shards[i]))
                                             for i in range(count)]))
    if not candidates:
        return None
    return max(candidates, key=lambda m: str(m.get("written_at", "")))


def _load_json(store: Store, path: str) -> dict[str, Any]:
    try:
        value = json.loads(store.read_text(path))
    except (OSError, ValueError) as exc:
        raise SnapshotError(f"cannot read the manifest {store.display(path)} ({exc}); re-extract that day") from exc
    if not isinstance(value, dict):
        raise SnapshotError(f"the manifest {store.display(path)} is not a JSON object; re-extract that day")
    return value


def list_snapshot_dates(root: Path | str | Store, resource: str) -> list[date]:
    """Dates with a committed snapshot (one holding a manifest, or a full set of shard manifests) of
    ``resource``, ascending. One listing of ``<root>/<resource>/`` (recursive), so it is cheap on S3."""
    store = store_for(root)
    base = store.join(resource)
    try:
        infos = store.fs.get_file_info(pafs.FileSelector(base, allow_not_found=True, recursive=True))
    except (FileNotFoundError, NotADirectoryError):
        return []
    folders: dict[str, set[str]] = {}
    for info in infos:
        parent, name = posixpath.split(info.path)
        if name.startswith(_MANIFEST_PREFIX) and name.endswith(".json"):
            folders.setdefault(parent, set()).add(name)
    out = []
    for folder, names in folders.items():
        day = posixpath.basename(folder)
        if posixpath.dirname(folder).rstrip("/") != base.rstrip("/") or not day.startswith("snapshot_date="):
            continue
        if MANIFEST_NAME in names or _committed_manifest(store, folder, names) is not None:
            out.append(date.fromisoformat(day.split("=", 1)[1]))
    return sorted(out)


def read_manifest(root: Path | str | Store, resource: str, snapshot_date: date) -> SnapshotManifest:
    """The manifest of one committed snapshot (:class:`~rank_pipeline.snapshots.manifest.SnapshotManifest`; a day
    committed by shards reads as one manifest, their union, with ``shards`` = n).

    Raises:
        SnapshotError: there is no committed snapshot of ``resource`` for ``snapshot_date``, or its
            manifest is not readable as one.
    """
    store = store_for(root)
    folder = _folder(store, resource, snapshot_date)
    manifest = _committed_manifest(store, folder)
    if manifest is None:
        raise SnapshotError(
            f"no {resource} snapshot for {snapshot_date} at {store.display(folder)}: extract that day first "
            f"(a past day cannot be fetched from the real API again)"
        )
    try:
        return SnapshotManifest.model_validate(manifest)
    except ValidationError as exc:
        raise SnapshotError(
            f"cannot read the manifest in {store.display(folder)} (not a snapshot manifest: "
            f"{exc.errors()[0]['loc']} {exc.errors()[0]['msg']}); re-extract that day"
        ) from exc


def snapshot_files(root: Path | str | Store, resource: str, snapshot_date: date,
                   manifest: SnapshotManifest | None = None) -> list[str]:
    """Full paths (in the store's file system) of the files one committed snapshot's manifest lists."""
    store = store_for(root)
    manifest = manifest if manifest is not None else read_manifest(store, resource, snapshot_date)
    folder = _folder(store, resource, snapshot_date)
    return [posixpath.join(folder, name) for name in manifest.files]


def read_snapshot(root: Path | str | Store, resource: str, snapshot_date: date) -> pa.Table:
    """Every row of one committed snapshot as an Arrow table (all accounts), with :func:`arrow_schema`.

    Only the files the manifest lists are read (on any store, :mod:`rank_pipeline.snapshots.storage`).

    Raises:
        SnapshotError: no committed snapshot for that day.
    """
    store = store_for(root)
    tables = [pq.read_table(path, filesystem=store.fs) for path in snapshot_files(store, resource, snapshot_date)]
    if not tables:
        return arrow_schema(resource).empty_table()
    return pa.concat_tables(tables, promote_options="default")


def records_table(
    resource: str,
    snapshot_date: date,
    account: str,
    records: Iterable[Mapping[str, Any]],
    *,
    parent_id: str | None = None,
    extracted_at: datetime | None = None,
) -> pa.Table:
    """JSON:API records as rows of ``resource``'s snapshot (:func:`arrow_schema`): the common columns,
    ``attributes`` as a JSON string and the :data:`SPEC_FIELDS` flattened."""
    schema = arrow_schema(resource)
    at = extracted_at or datetime.now(UTC)
    columns: dict[str, list[Any]] = {name: [] for name in schema.names}
    spec_fields = SPEC_FIELDS[resource]
    for record in records:
        attributes = record.get("attributes") or {}
        columns["snapshot_date"].append(snapshot_date)
        columns["account"].append(account)
        columns["id"].append(str(record.get("id")) if record.get("id") is not None else None)
        columns["type"].append(record.get("type"))
        columns["parent_id"].append(parent_id)
        columns["extracted_at"].append(at)
        columns["attributes"].append(json.dumps(attributes, separators=(",", ":"), ensure_ascii=False))
        for name, _typ, get in spec_fields:
            columns[name].append(get(attributes))
    return pa.Table.from_pydict(columns, schema=schema)


def _check_resource(resource: str) -> None:
    if resource not in SPEC_FIELDS:
        raise SnapshotError(f"unknown resource {resource!r}; expected one of {', '.join(ENDPOINTS)}")


@dataclass
class _AccountPart:
    writer: pq.ParquetWriter | None = None
    files: list[str] = field(default_factory=list)
    rows: int = 0


class SnapshotWriter:
    """Streams one resource's records for one snapshot date into Parquet, committed atomically.

    Usage::

        writer = SnapshotWriter(root, "keywords", date(2026, 11, 21))
        writer.write("acme", page_records, parent_id=domain_id)   # any number of times, any accounts
        writer.set_report("acme", {"complete": True, "expected": 120, "delivered": 120, ...})
        manifest = writer.commit()          # or writer.abort() on failure

    Commit. On local disk (one writer), the files go to a hidden staging folder that
    :meth:`commit` renames into place (an atomic rename). Where renames are not atomic (an object
    store, :attr:`rank_pipeline.snapshots.storage.Store.atomic_rename`) or when several shard workers share the
    day's folder (``shard``), the data files are written straight into the day's folder under names no
    other commit uses (``part-<account>-NNNN-<token>.parquet``) and the manifest is written last, in one
    PUT: readers trust only the files a manifest lists, so an interrupted commit leaves files nobody
    reads and the previous manifest (the previous version of the day, if any) in force until the new
    one replaces it. After that, files of the replaced version and unlisted leftovers of this writer's
    accounts are deleted.

    Args:
        root: the snapshots location: a folder, a URI (``s3://bucket/prefix``) or a
            :class:`rank_pipeline.snapshots.storage.Store`.
        resource: one of :data:`ENDPOINTS`.
        snapshot_date: the partition (UTC day of the extraction).
        row_group_size: rows buffered per account before a row group is flushed (memory bound).
        shard: this worker's shard (:mod:`rank_pipeline.snapshots.shards`): the manifest is
            ``_manifest.shard-<i>-of-<n>.json`` and the day is committed once every shard's is there.

    Raises:
        SnapshotError: unknown resource, a bad account name, or writing after commit/abort.
    """

    def __init__(self, root: Path | str | Store, resource: str, snapshot_date: date, *,
                 row_group_size: int = 20_000, shard: Shard | None = None):
        _check_resource(resource)
        self.store = store_for(root)
        self.root = Path(self.store.root) if self.store.local else self.store.uri
        self.resource = resource
        self.snapshot_date = snapshot_date
        self.row_group_size = row_group_size
        self.schema = arrow_schema(resource)
        self.shard = shard
        self.final_dir = partition_dir(self.store, resource, snapshot_date)
        self._folder = _folder(self.store, resource, snapshot_date)
        self._manifest_name = MANIFEST_NAME if shard is None else shard.manifest_name
        self._in_place = shard is not None or not self.store.atomic_rename
        self._token = uuid.uuid4().hex[:8]
        if self._in_place:
            self._stage = self._folder
            self.store.makedirs(self._stage)
        else:
            self._stage = self.store.join(resource, f".staging-snapshot_date={snapshot_date.isoformat()}-{self._token}")
            Path(self._stage).mkdir(parents=True, exist_ok=False)
        self._parts: dict[str, _AccountPart] = {}
        self._buffers: dict[str, list[pa.Table]] = {}
        self._reports: dict[str, dict[str, Any]] = {}
        self._excluded: dict[str, set[tuple[str | None, str]]] = {}
        self._spec_fields = SPEC_FIELDS[resource]
        self._closed = False

    @property
    def rows_written(self) -> int:
        """Rows accepted so far, all accounts, flushed or buffered."""
        return sum(p.rows for p in self._parts.values())

    def write(
        self,
        account: str,
        records: Iterable[Mapping[str, Any]],
        *,
        parent_id: str | None = None,
        extracted_at: datetime | None = None,
    ) -> int:
        """Append JSON:API records (``{"id", "type", "attributes"}``) of one account; returns rows added.

        ``parent_id`` is the domain id for keywords and competitors, the search engine for the lookups.
        """
        self._check_open()
        return self.append_table(account, records_table(self.resource, self.snapshot_date, account, records,
                                                        parent_id=parent_id, extracted_at=extracted_at))

    def append_table(self, account: str, table: pa.Table) -> int:
        """Append rows already in :func:`arrow_schema` form (from :func:`records_table`, or read back
        from a checkpoint); returns rows added."""
        self._check_open()
        if not _ACCOUNT_RE.match(account):
            raise SnapshotError(f"account name {account!r} must match {_ACCOUNT_RE.pattern}")
        buf = self._buffers.get(account)
        if buf is None:
            buf = self._buffers[account] = []
            self._parts[account] = _AccountPart()
        if table.num_rows:
            buf.append(table.cast(self.schema) if table.schema != self.schema else table)
        self._parts[account].rows += table.num_rows
        if sum(t.num_rows for t in buf) >= self.row_group_size:
            self._flush(account)
        return table.num_rows

    def exclude(self, account: str, ids: Iterable[str], *, parent_id: str | None = None) -> None:
        """Drop rows already written: ``account``'s records with these ids under ``parent_id``.

        For records a list delivered in an earlier pass that its proven id set no longer holds
        (deleted while the list was read; ``ListResult.excluded``). Nothing is buffered for this:
        rows stream to Parquet as usual and :meth:`commit` rewrites only the files of accounts with
        exclusions, one row group at a time (memory bounded by ``row_group_size``).
        """
        self._check_open()
        keys = {(parent_id, str(i)) for i in ids}
        if keys:
            self._excluded.setdefault(account, set()).update(keys)

    def set_report(self, account: str, report: ListsReport | Mapping[str, Any]) -> None:
        """Record an account's :class:`~rank_pipeline.snapshots.manifest.ListsReport` (complete, expected, ...) for the manifest."""
        self._check_open()
        self._reports[account] = (report.model_dump(exclude_unset=True) if isinstance(report, ListsReport)
                                  else dict(report))
        self._parts.setdefault(account, _AccountPart())
        self._buffers.setdefault(account, [])

    def _file_name(self, account: str, index: int) -> str:
        if self._in_place:  # unique per commit: never overwrites a file a committed manifest lists
            return f"part-{account}-{index:04d}-{self._token}.parquet"
        return f"part-{account}-{index:04d}.parquet"

    def _flush(self, account: str) -> None:
        buf = self._buffers[account]
        if not buf:
            return
        table = pa.concat_tables(buf)
        part = self._parts[account]
        if part.writer is None:
            name = self._file_name(account, len(part.files))
            part.files.append(name)
            part.writer = pq.ParquetWriter(posixpath.join(self._stage, name), self.schema, compression="zstd",
                                           filesystem=self.store.fs)
        part.writer.write_table(table, row_group_size=self.row_group_size)
        buf.clear()

    def commit(self) -> SnapshotManifest:
        """Flush, write the manifest and put the snapshot in place; returns the manifest.

        Manifest (:class:`~rank_pipeline.snapshots.manifest.SnapshotManifest`): resource, snapshot_date,
        schema_version, row_count, files, written_at, complete (all accounts), and per account its
        :class:`~rank_pipeline.snapshots.manifest.ListsReport` with ``rows`` (plus ``shard`` = "i/n" from a shard
        worker). A previous snapshot of the same day (of the same shard) is replaced whole; see the class
        docstring for how, per store.
        """
        self._check_open()
        for account in self._parts:
            self._flush(account)
            part = self._parts[account]
            if part.writer is None and part.rows == 0:
                # an account with no records still gets an empty file, so readers see its schema
                name = self._file_name(account, 0)
                pq.write_table(self.schema.empty_table(), posixpath.join(self._stage, name), compression="zstd",
                               filesystem=self.store.fs)
                part.files.append(name)
            if part.writer is not None:
                part.writer.close()
                part.writer = None
            if self._excluded.get(account):
                self._drop_excluded(account, part)
        accounts = {
            name: {**self._reports.get(name, {}), "rows": part.rows} for name, part in sorted(self._parts.items())
        }
        manifest = SnapshotManifest(
            resource=self.resource,
            snapshot_date=self.snapshot_date,
            schema_version=SCHEMA_VERSION,
            row_count=self.rows_written,
            files=[f for _, part in sorted(self._parts.items()) for f in part.files],
            written_at=datetime.now(UTC),
            complete=all(r.get("complete", True) for r in accounts.values()),
            accounts=accounts,
        )
        if self.shard is not None:
            manifest.shard = str(self.shard)
        text = manifest.to_json()
        if self._in_place:
            self._commit_in_place(manifest, text)
            self._closed = True
            return manifest
        staging = Path(self._stage)
        tmp = staging / (MANIFEST_NAME + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, staging / MANIFEST_NAME)
        final_dir = Path(self._folder)
        old = None
        if final_dir.exists():
            old = final_dir.parent / f".replaced-{final_dir.name}-{uuid.uuid4().hex[:8]}"
            os.replace(final_dir, old)
        os.replace(staging, final_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        self._closed = True
        return manifest

    def _commit_in_place(self, manifest: SnapshotManifest, text: str) -> None:
        """Manifest last (data files are already in the day's folder), then remove what it replaced."""
        path = posixpath.join(self._folder, self._manifest_name)
        previous: list[str] = []
        if self.store.is_file(path):
            try:
                previous = list(_load_json(self.store, path).get("files") or [])
            except SnapshotError:
                previous = []
        self._write_manifest(path, text)
        # the commit point has passed: what follows only frees space (readers no longer list these files)
        keep = set(manifest.files)
        for name in previous:
            if name not in keep:
                self.store.delete_file(posixpath.join(self._folder, name))
        listed: set[str] = set(keep)
        names = [posixpath.basename(i.path) for i in self.store.listdir(self._folder)]
        for name in names:
            if name.startswith(_MANIFEST_PREFIX) and name.endswith(".json") and name != self._manifest_name:
                try:
                    listed.update(_load_json(self.store, posixpath.join(self._folder, name)).get("files") or [])
                except SnapshotError:
                    continue
        mine = tuple(f"part-{account}-" for account in self._parts)
        for name in names:
            if name.startswith(mine) and name.endswith(".parquet") and name not in listed \
                    and _account_of(name) in self._parts:
                self.store.delete_file(posixpath.join(self._folder, name))

    def _write_manifest(self, path: str, text: str) -> None:
        """The commit point on an object store: one PUT of the whole manifest."""
        self.store.write_text(path, text)

    def _drop_excluded(self, account: str, part: _AccountPart) -> None:
        excluded = self._excluded[account]
        for position, name in enumerate(list(part.files)):
            path = posixpath.join(self._stage, name)
            source = pq.ParquetFile(self.store.fs.open_input_file(path))
            new_name = name if not self._in_place else name.replace(".parquet", "-x.parquet")
            tmp = path + ".filtering" if not self._in_place else posixpath.join(self._stage, new_name)
            with pq.ParquetWriter(tmp, self.schema, compression="zstd", filesystem=self.store.fs) as out:
                for index in range(source.num_row_groups):
                    table = source.read_row_group(index)
                    keep = [(p, i) not in excluded for p, i in zip(table.column("parent_id").to_pylist(),
                                                                    table.column("id").to_pylist(), strict=True)]
                    part.rows -= keep.count(False)
                    out.write_table(table.filter(pa.array(keep, type=pa.bool_())),
                                    row_group_size=self.row_group_size)
            source.close()
            if self._in_place:
                self.store.delete_file(path)
                part.files[position] = new_name
            else:
                os.replace(tmp, path)

    def abort(self) -> None:
        """Drop everything written so far; a previously committed snapshot of that day stays as it was."""
        if self._closed:
            return
        for part in self._parts.values():
            if part.writer is not None:
                try:
                    part.writer.close()
                except Exception:  # noqa: BLE001 - the store may be what failed; the files are dropped anyway
                    pass
        if self._in_place:
            for part in self._parts.values():
                for name in part.files:
                    try:
                        self.store.delete_file(posixpath.join(self._stage, name))
                    except OSError:  # unreachable store: unlisted files are ignored, and removed next commit
                        pass
        else:
            shutil.rmtree(self._stage, ignore_errors=True)
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise SnapshotError(f"snapshot writer for {self.final_dir} is already committed or aborted")


def _account_of(name: str) -> str:
    """The account of an in-place data file name ``part-<account>-NNNN-<token>[-x].parquet``."""
    stem = name[len("part-"):-len(".parquet")]
    if stem.endswith("-x"):
        stem = stem[:-2]
    return stem.rsplit("-", 2)[0]
