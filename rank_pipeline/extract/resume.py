"""Checkpoints of an unfinished day's extraction, so a retry re-fetches only the lists it did not finish:
``<snapshots root>/.resume-snapshot_date=YYYY-MM-DD/`` (:class:`ResumeArea`), valid for one day and source,
removed once the day commits. A list's checkpoint is the response bodies of its pages that delivered records
(on local disk in the run's one page stream, at the offsets its ``lists.jsonl`` line holds), replayed on resume.
Layout and rules: docs/concepts/completeness.md, "Resume".
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import posixpath
import uuid
from array import array
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.ipc as ipc

from rank_pipeline.api.listing import decode_raw_page, page_records, record_id
from rank_pipeline.settings import Shard
from rank_pipeline.snapshots.schema import DAY_FOLDER_PREFIX, SCHEMA_VERSION
from rank_pipeline.snapshots.storage import Store, store_for

__all__ = ["ListSpool", "ResumeArea", "fingerprint", "resume_dir"]

logger = logging.getLogger("rank_pipeline.extract.resume")

_LISTS = "lists.jsonl"
_META = "meta.json"
_ENTRY = ".entry.json"
_PAGES = ".pages"
_FORMAT = 3  # 1: a Parquet file of a list's rows; 2: an Arrow IPC stream of its pages' bodies; 3: pages at offsets
_PAGE_SCHEMA = pa.schema([("extracted_at_us", pa.int64()), ("body", pa.large_binary())])  # us since the epoch, UTC
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)


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


class _PageStream:
    """An Arrow IPC stream of pages, ``<uuid>.pages``, one batch a page: when it arrived and its response body as
    received. On local disk uncompressed and written unbuffered: a batch is in the file when :meth:`write`
    returns, so a killed process leaves every page it wrote readable at its offset. On an object store lz4, the
    object written when the stream is closed."""

    def __init__(self, store: Store, folder: str):
        self.store = store
        self.name = uuid.uuid4().hex
        self.path = posixpath.join(folder, f"{self.name}{_PAGES}")
        options = ipc.IpcWriteOptions(compression=None if store.local else "lz4")
        self._out = store.fs.open_output_stream(self.path)
        self._writer: ipc.RecordBatchStreamWriter | None = ipc.new_stream(self._out, _PAGE_SCHEMA, options=options)

    def write(self, extracted_at: datetime, body: bytes) -> int:
        """Append a page; returns its offset in the file (bytes; the stream's schema may come first)."""
        assert self._writer is not None  # not closed
        offset = self._out.tell()
        # from buffers (the body not copied): pa.array would import pandas to check its argument
        at = pa.Array.from_buffers(pa.int64(), 1, [None, pa.py_buffer(array("q", [(extracted_at - _EPOCH) // _US]))])
        page = pa.Array.from_buffers(pa.large_binary(), 1, [None, pa.py_buffer(array("q", [0, len(body)])),
                                                            pa.py_buffer(body)])
        self._writer.write_batch(pa.RecordBatch.from_arrays([at, page], schema=_PAGE_SCHEMA))
        return offset

    def close(self) -> None:
        """Finish the stream (idempotent)."""
        if self._writer is not None:
            self._writer.close()
            self._out.close()
            self._writer = None


class ListSpool:
    """The pages of one list being read: written to ``stream`` (on local disk the run's one stream, shared by
    its lists; on an object store, where nothing can be appended to, the list's own), their offsets kept for
    the list's checkpoint entry."""

    def __init__(self, stream: _PageStream, own: bool):
        self.stream = stream
        self.own = own
        self.offsets: list[int] = []

    def write(self, extracted_at: datetime, body: bytes) -> None:
        """Append a page that delivered records: when it arrived and its response body."""
        self.offsets.append(self.stream.write(extracted_at, body))

    def close(self) -> None:
        """Finish the list's own stream (the run's shared one stays open)."""
        if self.own:
            self.stream.close()

    def delete(self) -> None:
        """Drop an unfinished list: its own stream's file; pages in the run's stream are never referenced."""
        if self.own:
            self.stream.close()
            self.stream.store.delete_file(self.stream.path)


class ResumeArea:
    """The checkpoint folder of ``snapshot_date`` and ``source`` (the API's base address or ``sandbox``; never a
    key) under ``root`` (a folder, URI or Store); ``shard``: a worker's own checkpoints (:func:`resume_dir`).
    On local disk a run's pages go to one stream and each finished list is a ``lists.jsonl`` line; on an object
    store each list has its own stream and its line is a ``<uuid>.entry.json``.
    """

    def __init__(self, root: Path | str | Store, snapshot_date: date, source: str, shard: Shard | None = None):
        self.store = store_for(root)
        self._dir = _dir_path(self.store, snapshot_date, shard)
        self.dir = resume_dir(self.store, snapshot_date, shard)
        self.meta = {"snapshot_date": snapshot_date.isoformat(), "source": source, "schema_version": SCHEMA_VERSION,
                     "checkpoint_format": _FORMAT}
        self.finished: dict[str, dict[str, Any]] = {}
        self.reused = 0
        self._log: TextIO | None = None
        self._stream: _PageStream | None = None  # the run's pages, on local disk
        self._ready = False
        listing = self.store.listdir(self._dir)
        if listing and self._read_meta() != self.meta:
            logger.info("discarding the checkpoints in %s: they belong to another source, schema or format", self.dir)
            self.store.delete_dir(self._dir)
            listing = []
        names = {posixpath.basename(i.path) for i in listing}
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
            if f"{entry['file']}{_PAGES}" in names:
                self.finished[entry["key"]] = entry
        used = {f"{e['file']}{_PAGES}" for e in self.finished.values()}
        for leftover in sorted(n for n in names if n.endswith(_PAGES) and n not in used):
            # pages of lists that were being read when a run died, and of no finished list
            self.store.delete_file(posixpath.join(self._dir, leftover))
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
        if self._ready:
            return
        meta = posixpath.join(self._dir, _META)
        if not self.store.is_file(meta):
            text = json.dumps(self.meta, sort_keys=True)
            if self.store.local:
                Path(self._dir).mkdir(parents=True, exist_ok=True)
                _write_atomic(Path(meta), text)
            else:
                self.store.write_text(meta, text)
        self._ready = True

    def spool(self) -> ListSpool:
        """A new spool for a list about to be read."""
        self._ensure()
        if not self.store.local:
            return ListSpool(_PageStream(self.store, self._dir), own=True)
        if self._stream is None:
            self._stream = _PageStream(self.store, self._dir)
        return ListSpool(self._stream, own=False)

    def finish(self, key: str, spool: ListSpool, entry: Mapping[str, Any]) -> None:
        """Make a proven list's pages its checkpoint (``entry``: the list's report fields, parent, and
        ``excluded``: the ids delivered that its proven set does not hold)."""
        spool.close()
        done = {**entry, "key": key, "file": spool.stream.name, "pages": spool.offsets}
        line = json.dumps(done, sort_keys=True, default=str)
        if not self.store.local:
            self.store.write_text(posixpath.join(self._dir, f"{spool.stream.name}{_ENTRY}"), line)
        else:
            if self._log is None:
                self._log = open(Path(self._dir) / _LISTS, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
            # flushed to the OS at once, after the pages (written unbuffered): a killed process loses nothing;
            # a line cut by a crash is skipped
            self._log.write(line + "\n")
            self._log.flush()
        self.finished[key] = done

    def records(self, entry: Mapping[str, Any]) -> Iterator[tuple[datetime, list[Any]]]:
        """A finished list's records as its read delivered them, page by page: ``(extracted_at, records)``,
        each record once (:func:`~rank_pipeline.api.listing.record_id`), none of ``entry["excluded"]``;
        the records as the raw reading decodes them (:func:`~rank_pipeline.api.listing.decode_raw_page`)."""
        self.reused += 1
        excluded = set(entry.get("excluded") or ())
        seen: set[Any] = set()
        path = posixpath.join(self._dir, f"{entry['file']}{_PAGES}")
        with self.store.fs.open_input_file(path) as source:
            for offset in entry["pages"]:
                batch = _batch_at(source, offset)
                us, body = batch.column(0)[0].as_py(), batch.column(1)[0].as_py()
                new = []
                for record in page_records(decode_raw_page(body)):
                    rid = record_id(record)
                    if rid not in seen:
                        seen.add(rid)
                        if rid not in excluded:
                            new.append(record)
                if new:
                    yield _EPOCH + us * _US, new

    def close(self) -> None:
        """Close the run's stream and the list log (the checkpoints stay for a retry)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def discard(self) -> None:
        """Remove the folder (the day is committed)."""
        self.close()
        self.store.delete_dir(self._dir)


def _batch_at(source: pa.NativeFile, offset: int) -> pa.RecordBatch:
    """The page written at ``offset`` of a :class:`_PageStream`'s file (the stream's schema, written with its
    first page, is skipped)."""
    source.seek(offset)
    message = ipc.read_message(source)
    if message.type == "schema":
        message = ipc.read_message(source)
    return ipc.read_record_batch(message, _PAGE_SCHEMA)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
