"""Parquet snapshots: the system of record.

The API tells only the present, so a past day can never be fetched again: each daily run writes one
snapshot per resource, and every warehouse table can be rebuilt from them. A snapshot is immutable once
committed, except that re-extracting the same day (from the sandbox, or today again from the real API)
replaces it whole.

Layout (``docs/architecture.md``, "Snapshots")::

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

The API key is never passed to this module, so it cannot reach a snapshot or a manifest.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rank_pipeline.catalog import CATALOG, resource_names
from rank_pipeline.reports import ListsReport, SnapshotManifest

__all__ = [
    "RESOURCES",
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
]

RESOURCES: tuple[str, ...] = resource_names()
"""Every resource the pipeline snapshots, in extraction order (declared in :data:`rank_pipeline.catalog.CATALOG`)."""

SCHEMA_VERSION = 1
MANIFEST_NAME = "_manifest.json"
_ACCOUNT_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

_ARROW_TYPES: dict[str, pa.DataType] = {"string": pa.string(), "int64": pa.int64(), "bool": pa.bool_()}
"""Arrow type of each field type a declaration may name (:data:`rank_pipeline.catalog.FIELD_TYPES`)."""

SPEC_FIELDS: dict[str, list[tuple[str, pa.DataType, Callable[[Mapping[str, Any]], Any]]]] = {
    r.name: [(f.column, _ARROW_TYPES[f.type], f.get) for f in r.fields] for r in CATALOG
}
"""Per resource: (column, Arrow type, getter over ``attributes``) for each field the spec shows, derived
from the resource's declaration (:class:`rank_pipeline.catalog.ApiResource` ``fields``)."""

_COMMON: list[tuple[str, pa.DataType]] = [
    ("snapshot_date", pa.date32()),
    ("account", pa.string()),
    ("id", pa.string()),
    ("type", pa.string()),
    ("parent_id", pa.string()),
    ("extracted_at", pa.timestamp("us", tz="UTC")),
    ("attributes", pa.string()),
]


class SnapshotError(RuntimeError):
    """A snapshot could not be written or read; the message names the path and what to do."""


def arrow_schema(resource: str) -> pa.Schema:
    """The Arrow schema of ``resource``'s snapshot files: the common columns, then :data:`SPEC_FIELDS`.

    Raises:
        SnapshotError: ``resource`` is not one of :data:`RESOURCES`.
    """
    _check_resource(resource)
    return pa.schema(_COMMON + [(name, typ) for name, typ, _ in SPEC_FIELDS[resource]])


def partition_dir(root: Path | str, resource: str, snapshot_date: date) -> Path:
    """``<root>/<resource>/snapshot_date=YYYY-MM-DD``: where one day's snapshot of a resource lives."""
    _check_resource(resource)
    return Path(root) / resource / f"snapshot_date={snapshot_date.isoformat()}"


def list_snapshot_dates(root: Path | str, resource: str) -> list[date]:
    """Dates with a committed snapshot (one holding a manifest) of ``resource``, ascending."""
    base = Path(root) / resource
    out = []
    if base.is_dir():
        for child in base.iterdir():
            if child.name.startswith("snapshot_date=") and (child / MANIFEST_NAME).is_file():
                out.append(date.fromisoformat(child.name.split("=", 1)[1]))
    return sorted(out)


def read_manifest(root: Path | str, resource: str, snapshot_date: date) -> SnapshotManifest:
    """The manifest of one committed snapshot (:class:`~rank_pipeline.reports.SnapshotManifest`).

    Raises:
        SnapshotError: there is no committed snapshot of ``resource`` for ``snapshot_date``.
    """
    path = partition_dir(root, resource, snapshot_date) / MANIFEST_NAME
    if not path.is_file():
        raise SnapshotError(
            f"no {resource} snapshot for {snapshot_date} at {path.parent}: extract that day first "
            f"(a past day cannot be fetched from the real API again)"
        )
    return SnapshotManifest.from_json(path.read_text())


def read_snapshot(root: Path | str, resource: str, snapshot_date: date) -> pa.Table:
    """Every row of one committed snapshot as an Arrow table (all accounts), with :func:`arrow_schema`.

    Raises:
        SnapshotError: no committed snapshot for that day.
    """
    manifest = read_manifest(root, resource, snapshot_date)
    folder = partition_dir(root, resource, snapshot_date)
    tables = [pq.read_table(folder / name) for name in manifest.files]
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
        raise SnapshotError(f"unknown resource {resource!r}; expected one of {', '.join(RESOURCES)}")


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

    Args:
        root: the snapshots folder (``data/snapshots``).
        resource: one of :data:`RESOURCES`.
        snapshot_date: the partition (UTC day of the extraction).
        row_group_size: rows buffered per account before a row group is flushed (memory bound).

    Raises:
        SnapshotError: unknown resource, a bad account name, or writing after commit/abort.
    """

    def __init__(self, root: Path | str, resource: str, snapshot_date: date, *, row_group_size: int = 20_000):
        _check_resource(resource)
        self.root = Path(root)
        self.resource = resource
        self.snapshot_date = snapshot_date
        self.row_group_size = row_group_size
        self.schema = arrow_schema(resource)
        self.final_dir = partition_dir(root, resource, snapshot_date)
        self._staging = self.final_dir.parent / f".staging-{self.final_dir.name}-{uuid.uuid4().hex[:8]}"
        self._staging.mkdir(parents=True, exist_ok=False)
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
        """Record an account's :class:`~rank_pipeline.reports.ListsReport` (complete, expected, ...) for the manifest."""
        self._check_open()
        self._reports[account] = (report.model_dump(exclude_unset=True) if isinstance(report, ListsReport)
                                  else dict(report))
        self._parts.setdefault(account, _AccountPart())
        self._buffers.setdefault(account, [])

    def _flush(self, account: str) -> None:
        buf = self._buffers[account]
        if not buf:
            return
        table = pa.concat_tables(buf)
        part = self._parts[account]
        if part.writer is None:
            name = f"part-{account}-{len(part.files):04d}.parquet"
            part.files.append(name)
            part.writer = pq.ParquetWriter(self._staging / name, self.schema, compression="zstd")
        part.writer.write_table(table, row_group_size=self.row_group_size)
        buf.clear()

    def commit(self) -> SnapshotManifest:
        """Flush, write the manifest and move the snapshot into place; returns the manifest.

        Manifest (:class:`~rank_pipeline.reports.SnapshotManifest`): resource, snapshot_date,
        schema_version, row_count, files, written_at, complete (all accounts), and per account its
        :class:`~rank_pipeline.reports.ListsReport` with ``rows``. A previous snapshot of the same day
        is replaced whole.
        """
        self._check_open()
        for account in self._parts:
            self._flush(account)
            part = self._parts[account]
            if part.writer is None and part.rows == 0:
                # an account with no records still gets an empty file, so readers see its schema
                name = f"part-{account}-0000.parquet"
                pq.write_table(self.schema.empty_table(), self._staging / name, compression="zstd")
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
        tmp = self._staging / (MANIFEST_NAME + ".tmp")
        tmp.write_text(manifest.to_json())
        os.replace(tmp, self._staging / MANIFEST_NAME)
        old = None
        if self.final_dir.exists():
            old = self.final_dir.parent / f".replaced-{self.final_dir.name}-{uuid.uuid4().hex[:8]}"
            os.replace(self.final_dir, old)
        os.replace(self._staging, self.final_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        self._closed = True
        return manifest

    def _drop_excluded(self, account: str, part: _AccountPart) -> None:
        excluded = self._excluded[account]
        for name in part.files:
            path = self._staging / name
            source = pq.ParquetFile(path)
            tmp = path.with_suffix(".filtering")
            with pq.ParquetWriter(tmp, self.schema, compression="zstd") as out:
                for index in range(source.num_row_groups):
                    table = source.read_row_group(index)
                    keep = [(p, i) not in excluded for p, i in zip(table.column("parent_id").to_pylist(),
                                                                    table.column("id").to_pylist(), strict=True)]
                    part.rows -= keep.count(False)
                    out.write_table(table.filter(pa.array(keep, type=pa.bool_())),
                                    row_group_size=self.row_group_size)
            source.close()
            os.replace(tmp, path)

    def abort(self) -> None:
        """Drop everything written so far; a previously committed snapshot of that day stays as it was."""
        if self._closed:
            return
        for part in self._parts.values():
            if part.writer is not None:
                part.writer.close()
        shutil.rmtree(self._staging, ignore_errors=True)
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise SnapshotError(f"snapshot writer for {self.final_dir} is already committed or aborted")
