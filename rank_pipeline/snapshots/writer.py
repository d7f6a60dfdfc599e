"""Writing one resource's snapshot of one day: streamed to Parquet (row groups of ``row_group_size`` rows per
account), committed whole, or aborted leaving the previous snapshot of the day untouched.

On local disk a staged folder is renamed into place; on an object store or for a shard, files get unique
names and the manifest is written last (readers trust only listed files). How a commit works, per store:
docs/concepts/operations.md, "The snapshot writer".
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rank_pipeline.settings import Shard
from rank_pipeline.snapshots.manifest import ListsReport, SnapshotManifest
from rank_pipeline.snapshots.reader import load_manifest_json
from rank_pipeline.snapshots.schema import (
    DAY_FOLDER_PREFIX,
    MANIFEST_NAME,
    MANIFEST_PREFIX,
    PARQUET_OPTIONS,
    SCHEMA_VERSION,
    SnapshotError,
    arrow_schema,
    check_resource,
    current_columns,
    day_folder,
    partition_dir,
    records_table,
)
from rank_pipeline.snapshots.storage import Store, store_for

__all__ = ["REPLACED_PREFIX", "STAGING_PREFIX", "SnapshotWriter", "replaced_day_folder"]

_ACCOUNT_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

STAGING_PREFIX = f".staging-{DAY_FOLDER_PREFIX}"
"""A day being written on local disk: ``<resource>/.staging-snapshot_date=<day>-<token>/``, renamed into place by the
commit. A writer that dies before its commit leaves it (removed by :mod:`rank_pipeline.folder_lock.leftovers`)."""

REPLACED_PREFIX = ".replaced-"
"""The previous snapshot of a day, set aside by a commit: ``<resource>/.replaced-snapshot_date=<day>-<token>/``, removed
after the commit. A writer killed between the commit's two renames leaves it as the day's only copy
(:func:`replaced_day_folder` names the day it is restored to)."""


def replaced_day_folder(name: str) -> str | None:
    """The day folder (``snapshot_date=<day>``) whose previous snapshot the entry ``name`` holds, when ``name`` is a
    :data:`REPLACED_PREFIX` leftover of a day; else None."""
    if not name.startswith(REPLACED_PREFIX + DAY_FOLDER_PREFIX):
        return None
    return name[len(REPLACED_PREFIX):].rsplit("-", 1)[0]


@dataclass
class _AccountPart:
    writer: pq.ParquetWriter | None = None
    files: list[str] = field(default_factory=list)
    rows: int = 0
    buffered: int = 0  # rows appended and not yet flushed


class SnapshotWriter:
    """Streams one resource's records for one snapshot date into Parquet, committed atomically
    (docs/concepts/operations.md, "The snapshot writer")::

        writer = SnapshotWriter(root, "keywords", date(2026, 11, 21))
        writer.write("acme", page_records, parent_id=domain_id)   # any number of times, any accounts
        writer.set_report("acme", {"complete": True, "expected": 120, "delivered": 120, ...})
        manifest = writer.commit()          # or writer.abort() on failure

    Args:
        root: a folder, a URI (``s3://bucket/prefix``) or a :class:`rank_pipeline.snapshots.storage.Store`.
        resource: one of :data:`~rank_pipeline.snapshots.schema.ENDPOINTS`.
        snapshot_date: the partition (UTC day of the extraction).
        row_group_size: rows in each row group of a file but its last (fewer where the commit drops excluded
            rows); an account buffers fewer than this many rows plus the last page appended (memory bound).
        shard: this worker's shard: its manifest is ``_manifest.shard-<i>-of-<n>.json``.
    Raises:
        SnapshotError: unknown resource, a bad account name, or writing after commit/abort.
    """

    def __init__(self, root: Path | str | Store, resource: str, snapshot_date: date, *,
                 row_group_size: int = 20_000, shard: Shard | None = None):
        check_resource(resource)
        self.store = store_for(root)
        self.root = Path(self.store.root) if self.store.local else self.store.uri
        self.resource = resource
        self.snapshot_date = snapshot_date
        self.row_group_size = row_group_size
        self.schema = arrow_schema(resource)
        self.shard = shard
        self.final_dir = partition_dir(self.store, resource, snapshot_date)
        self._folder = day_folder(self.store, resource, snapshot_date)
        self._manifest_name = MANIFEST_NAME if shard is None else shard.manifest_name
        self._in_place = shard is not None or not self.store.atomic_rename
        self._token = uuid.uuid4().hex[:8]
        if self._in_place:
            self._stage = self._folder
            self.store.makedirs(self._stage)
        else:
            staging = f"{STAGING_PREFIX}{snapshot_date.isoformat()}-{self._token}"
            self._stage = self.store.join(resource, staging)
            Path(self._stage).mkdir(parents=True, exist_ok=False)
        self._parts: dict[str, _AccountPart] = {}
        self._buffers: dict[str, list[pa.Table]] = {}
        self._reports: dict[str, dict[str, Any]] = {}
        self._excluded: dict[str, set[tuple[str | None, str]]] = {}
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
        from a checkpoint; columns beyond the schema, an earlier version's, are dropped); returns rows added."""
        self._check_open()
        if not _ACCOUNT_RE.match(account):
            raise SnapshotError(f"account name {account!r} must match {_ACCOUNT_RE.pattern}")
        buf = self._buffers.get(account)
        if buf is None:
            buf = self._buffers[account] = []
            self._parts[account] = _AccountPart()
        part = self._parts[account]
        if table.num_rows:
            buf.append(current_columns(table) if table.schema != self.schema else table)
        part.rows += table.num_rows
        part.buffered += table.num_rows
        if part.buffered >= self.row_group_size:
            self._flush(account, whole_groups=True)
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
        """Record an account's :class:`~rank_pipeline.snapshots.manifest.ListsReport` (complete, expected, ...)
        for the manifest."""
        self._check_open()
        self._reports[account] = (report.model_dump(exclude_unset=True) if isinstance(report, ListsReport)
                                  else dict(report))
        self._parts.setdefault(account, _AccountPart())
        self._buffers.setdefault(account, [])

    def _parquet_writer(self, path: str) -> pq.ParquetWriter:
        """A snapshot file at ``path`` on this writer's store, written as :data:`PARQUET_OPTIONS` says."""
        return pq.ParquetWriter(path, self.schema, filesystem=self.store.fs, **PARQUET_OPTIONS)

    def _file_name(self, account: str, index: int) -> str:
        if self._in_place:  # unique per commit: never overwrites a file a committed manifest lists
            return f"part-{account}-{index:04d}-{self._token}.parquet"
        return f"part-{account}-{index:04d}.parquet"

    def _flush(self, account: str, *, whole_groups: bool = False) -> None:
        """Write ``account``'s buffered rows as row groups of :attr:`row_group_size` rows; with ``whole_groups``
        the rows past the last whole group stay buffered for the next (pages seldom end on a group's edge: a
        group and a remainder written each time would leave a small row group beside every full one)."""
        buf = self._buffers[account]
        if not buf:
            return
        table = pa.concat_tables(buf)
        rest = table.num_rows % self.row_group_size if whole_groups else 0
        part = self._parts[account]
        if part.writer is None:
            name = self._file_name(account, len(part.files))
            part.files.append(name)
            part.writer = self._parquet_writer(posixpath.join(self._stage, name))
        part.writer.write_table(table.slice(0, table.num_rows - rest), row_group_size=self.row_group_size)
        buf.clear()
        if rest:
            buf.append(table.slice(table.num_rows - rest))
        part.buffered = rest

    def commit(self) -> SnapshotManifest:
        """Flush, write the manifest and put the snapshot in place; returns the manifest
        (:class:`~rank_pipeline.snapshots.manifest.SnapshotManifest`, per account a ``ListsReport`` with ``rows``).
        A previous snapshot of the same day (and shard) is replaced whole (docs/concepts/operations.md).
        """
        self._check_open()
        self._close_files()
        manifest = self._manifest()
        text = manifest.to_json()
        if self._in_place:
            self._commit_in_place(manifest, text)
        else:
            self._commit_by_rename(text)
        self._closed = True
        return manifest

    def _close_files(self) -> None:
        """Flush and close every account's files (an empty file for an account with no rows, so readers
        see its schema) and drop the excluded rows."""
        for account in self._parts:
            self._flush(account)
            part = self._parts[account]
            if part.writer is None and part.rows == 0:
                name = self._file_name(account, 0)
                # no row group (schema.empty_table's reason: no pandas)
                self._parquet_writer(posixpath.join(self._stage, name)).close()
                part.files.append(name)
            if part.writer is not None:
                part.writer.close()
                part.writer = None
            if self._excluded.get(account):
                self._drop_excluded(account, part)

    def _manifest(self) -> SnapshotManifest:
        """The manifest of what :meth:`_close_files` left: files, rows and each account's report."""
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
        return manifest

    def _commit_by_rename(self, text: str) -> None:
        """Local disk: the manifest into the staging folder, then the folder renamed into place (the
        previous version of the day set aside first and removed after)."""
        staging = Path(self._stage)
        tmp = staging / (MANIFEST_NAME + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, staging / MANIFEST_NAME)
        final_dir = Path(self._folder)
        old = None
        if final_dir.exists():
            old = final_dir.parent / f"{REPLACED_PREFIX}{final_dir.name}-{uuid.uuid4().hex[:8]}"
            os.replace(final_dir, old)
        os.replace(staging, final_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def _commit_in_place(self, manifest: SnapshotManifest, text: str) -> None:
        """Manifest last (data files are already in the day's folder), then remove what it replaced."""
        path = posixpath.join(self._folder, self._manifest_name)
        previous: list[str] = []
        if self.store.is_file(path):
            try:
                previous = list(load_manifest_json(self.store, path).get("files") or [])
            except SnapshotError:
                previous = []
        self._write_manifest(path, text)
        # the commit point has passed: what follows only frees space (readers no longer list these files)
        self._delete_unlisted(previous, set(manifest.files))

    def _delete_unlisted(self, previous: list[str], keep: set[str]) -> None:
        """Delete the files of the version this commit replaced (``previous`` minus ``keep``), and this
        writer's accounts' data files no manifest in the folder lists (an interrupted commit's)."""
        for name in previous:
            if name not in keep:
                self.store.delete_file(posixpath.join(self._folder, name))
        listed: set[str] = set(keep)
        names = [posixpath.basename(i.path) for i in self.store.listdir(self._folder)]
        for name in names:
            if name.startswith(MANIFEST_PREFIX) and name.endswith(".json") and name != self._manifest_name:
                try:
                    listed.update(load_manifest_json(self.store, posixpath.join(self._folder, name)).get("files") or [])
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
            with self._parquet_writer(tmp) as out:
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
