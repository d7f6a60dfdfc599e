"""Checkpoints of an unfinished day's extraction, so a retry re-fetches only the lists it did not finish:
``<snapshots root>/.resume-snapshot_date=YYYY-MM-DD/`` (:class:`ResumeArea`), valid for one day and source,
removed once the day commits. Layout and rules: docs/concepts/completeness.md, "Resume".
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import posixpath
import uuid
from collections.abc import Iterator, Mapping
from datetime import date
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

from rank_pipeline.settings import Shard
from rank_pipeline.snapshots.schema import DAY_FOLDER_PREFIX, DICTIONARY_COLUMNS, SCHEMA_VERSION, arrow_schema
from rank_pipeline.snapshots.storage import Store, store_for

__all__ = ["ListSpool", "ResumeArea", "fingerprint", "resume_dir"]

logger = logging.getLogger("rank_pipeline.extract.resume")

_LISTS = "lists.jsonl"
_META = "meta.json"
_ENTRY = ".entry.json"
_CODEC = "lz4"  # a checkpoint lives until the day commits: written fast rather than small


def resume_dir(root: Path | str | Store, snapshot_date: date, shard: Shard | None = None) -> Path | str:
    """``<root>/.resume-snapshot_date=YYYY-MM-DD``: the day's checkpoint folder (a :class:`Path` for a
    local root, a URI otherwise). A shard worker (:mod:`rank_pipeline.settings.sharding`) has its own,
    ``<root>/.resume-shard-<i>-of-<n>-snapshot_date=YYYY-MM-DD``."""
    store = store_for(root)
    folder = _dir_path(store, snapshot_date, shard)
    return Path(folder) if store.local else store.display(folder)


def _dir_path(store: Store, snapshot_date: date, shard: Shard | None) -> str:
    tag = "" if shard is None else f"shard-{shard.index}-of-{shard.count}-"
    return store.join(f".resume-{tag}{DAY_FOLDER_PREFIX}{snapshot_date.isoformat()}")


def fingerprint(record: Mapping[str, Any]) -> str:
    """A short hash of a record's ``attributes`` (how a parent is recognised as unchanged)."""
    text = json.dumps(record.get("attributes") or {}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


class ListSpool:
    """The rows of one list being read, written to ``<uuid>.part`` one page (row group) at a time."""

    def __init__(self, folder: Path | str, resource: str, store: Store | None = None):
        self.store = store or store_for(Path(folder))
        self.resource = resource
        self.name = uuid.uuid4().hex
        self.folder = str(folder)
        self.path = posixpath.join(self.folder, f"{self.name}.part")
        self.schema = arrow_schema(resource)
        self._writer: pq.ParquetWriter | None = None
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, self.schema, compression=_CODEC,
                                            use_dictionary=list(DICTIONARY_COLUMNS), filesystem=self.store.fs)
        self._writer.write_table(table)
        self.rows += table.num_rows

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def exists(self) -> bool:
        return self.store.is_file(self.path)

    def tables(self) -> Iterator[pa.Table]:
        """The rows written, one row group at a time (after :meth:`close`)."""
        yield from _row_groups(self.path if self.exists() else None, self.schema, self.store)

    def rewrite(self, excluded: set[str]) -> None:
        """Drop rows whose id is in ``excluded`` (ids the proven set does not hold), row group by row group."""
        self.close()
        if not self.exists():
            return
        tmp = self.path[: -len(".part")] + ".filtering"
        with pq.ParquetWriter(tmp, self.schema, compression=_CODEC, filesystem=self.store.fs) as out:
            for table in self.tables():
                keep = [i not in excluded for i in table.column("id").to_pylist()]
                out.write_table(table.filter(pa.array(keep, type=pa.bool_())))
        self.store.move(tmp, self.path)

    def delete(self) -> None:
        self.close()
        self.store.delete_file(self.path)


class ResumeArea:
    """The checkpoint folder of ``snapshot_date`` and ``source`` (the API's base address or ``sandbox``; never a
    key) under ``root`` (a folder, URI or Store); ``shard``: a worker's own checkpoints (:func:`resume_dir`).
    On an object store each finished list is a ``<uuid>.entry.json`` instead of a ``lists.jsonl`` line.
    """

    def __init__(self, root: Path | str | Store, snapshot_date: date, source: str, shard: Shard | None = None):
        self.store = store_for(root)
        self._dir = _dir_path(self.store, snapshot_date, shard)
        self.dir = resume_dir(self.store, snapshot_date, shard)
        self.meta = {"snapshot_date": snapshot_date.isoformat(), "source": source, "schema_version": SCHEMA_VERSION}
        self.finished: dict[str, dict[str, Any]] = {}
        self.reused = 0
        self._log: TextIO | None = None
        listing = self.store.listdir(self._dir)
        if listing and self._read_meta() != self.meta:
            logger.info("discarding the checkpoints in %s: they belong to another source or schema", self.dir)
            self.store.delete_dir(self._dir)
            listing = []
        names = {posixpath.basename(i.path) for i in listing}
        for leftover in sorted(n for n in names if n.endswith((".part", ".filtering"))):
            # a list that was being read when the run died
            self.store.delete_file(posixpath.join(self._dir, leftover))
        lines: list[str] = []
        if _LISTS in names:
            lines.extend(self.store.read_text(posixpath.join(self._dir, _LISTS)).splitlines())
        for name in sorted(n for n in names if n.endswith(_ENTRY)):
            try:
                lines.append(self.store.read_text(posixpath.join(self._dir, name)))
            except OSError:
                continue
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:  # a line cut by a kill: that list is read again
                continue
            if f"{entry['file']}.parquet" in names:
                self.finished[entry["key"]] = entry
        if self.finished:
            logger.info("resuming %s: %d list(s) already read", snapshot_date, len(self.finished))

    def _read_meta(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.store.read_text(posixpath.join(self._dir, _META)))
        except (OSError, ValueError):
            return None

    def lookup(self, key: str, parent: str | None = None) -> dict[str, Any] | None:
        """The checkpoint of list ``key`` if finished earlier and its parent is unchanged, else None."""
        entry = self.finished.get(key)
        if entry is None or entry.get("parent") != parent:
            return None
        return entry

    def _ensure(self) -> None:
        # made with the first list read, so a run that fails before reading any list leaves nothing
        meta = posixpath.join(self._dir, _META)
        if not self.store.is_file(meta):
            text = json.dumps(self.meta, sort_keys=True)
            if self.store.local:
                Path(self._dir).mkdir(parents=True, exist_ok=True)
                _write_atomic(Path(meta), text)
            else:
                self.store.write_text(meta, text)

    def spool(self, resource: str) -> ListSpool:
        """A new spool for a list about to be read."""
        self._ensure()
        return ListSpool(self._dir, resource, self.store)

    def finish(self, key: str, spool: ListSpool, entry: Mapping[str, Any]) -> None:
        """Make a proven list's spool its checkpoint (``entry``: the list's report fields, parent)."""
        spool.close()
        final = posixpath.join(self._dir, f"{spool.name}.parquet")
        if spool.exists():
            self.store.move(spool.path, final)
        else:  # an empty list: an empty file, so the checkpoint is self-contained
            pq.write_table(spool.schema.empty_table(), final, filesystem=self.store.fs)
        line = json.dumps({**entry, "key": key, "file": spool.name}, sort_keys=True, default=str)
        if not self.store.local:
            self.store.write_text(posixpath.join(self._dir, f"{spool.name}{_ENTRY}"), line)
        else:
            if self._log is None:
                self._log = open(Path(self._dir) / _LISTS, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
            # flushed to the OS at once: a killed process loses nothing; a line cut by a crash is skipped
            self._log.write(line + "\n")
            self._log.flush()
        self.finished[key] = {**entry, "key": key, "file": spool.name}

    def tables(self, entry: Mapping[str, Any], resource: str) -> Iterator[pa.Table]:
        """A finished list's rows, one row group at a time."""
        self.reused += 1
        yield from _row_groups(posixpath.join(self._dir, f"{entry['file']}.parquet"), arrow_schema(resource),
                               self.store)

    def close(self) -> None:
        """Close the list log (the checkpoints stay for a retry)."""
        if self._log is not None:
            self._log.close()
            self._log = None

    def discard(self) -> None:
        """Remove the folder (the day is committed)."""
        self.close()
        self.store.delete_dir(self._dir)


def _row_groups(path: str | None, schema: pa.Schema, store: Store) -> Iterator[pa.Table]:
    if path is None:
        return
    source = pq.ParquetFile(store.fs.open_input_file(path))
    try:
        for index in range(source.num_row_groups):
            yield source.read_row_group(index).cast(schema)
    finally:
        source.close()


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
