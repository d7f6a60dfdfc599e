"""Per-list checkpoints of one day's extraction, so a failed or killed run retried for the same day
re-fetches only the lists it did not finish (issue 12, "Resume").

Where: ``<snapshots root>/.resume-snapshot_date=YYYY-MM-DD/`` (one folder per day, beside the
resource folders; a name distinct from the snapshot writers' ``.staging-*`` folders, which a new run
may delete as leftovers of dead runs: this one must be kept until the day commits)::

    meta.json       {"snapshot_date", "source", "schema_version"}: what the checkpoints are valid for
    lists.jsonl     one JSON line per finished list (appended and flushed when the list is proven)
    <uuid>.parquet  that list's rows in the snapshot schema (``rank_pipeline.snapshots.arrow_schema``)
    <uuid>.part     rows of a list still being read (ignored, and removed, by the next run)

Validity: a checkpoint serves only a run of the same snapshot date and the same source (the API's
base address, or ``sandbox``; never a key); otherwise the folder is emptied first. Only lists proven
complete are checkpointed. A child list (keywords, competitors of a domain) is reused only while its
parent's record is unchanged (``parent`` fingerprint); top-level lists (domains, tags) and the usage
read are always fetched again, so the combined result is complete by the same rules as a fresh run.
The folder is removed once the day's snapshots are committed (:meth:`ResumeArea.discard`).

Nothing here holds a key. Memory: rows go to disk page by page; a resumed list is read back one row
group at a time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from datetime import date
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rank_pipeline.snapshots import SCHEMA_VERSION, arrow_schema

__all__ = ["ListSpool", "ResumeArea", "fingerprint", "resume_dir"]

logger = logging.getLogger("rank_pipeline.resume")

_LISTS = "lists.jsonl"
_META = "meta.json"


def resume_dir(root: Path | str, snapshot_date: date) -> Path:
    """``<root>/.resume-snapshot_date=YYYY-MM-DD``: the day's checkpoint folder."""
    return Path(root) / f".resume-snapshot_date={snapshot_date.isoformat()}"


def fingerprint(record: Mapping[str, Any]) -> str:
    """A short hash of a record's ``attributes`` (how a parent is recognised as unchanged)."""
    text = json.dumps(record.get("attributes") or {}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


class ListSpool:
    """The rows of one list being read, written to ``<uuid>.part`` one page (row group) at a time."""

    def __init__(self, folder: Path, resource: str):
        self.resource = resource
        self.name = uuid.uuid4().hex
        self.path = folder / f"{self.name}.part"
        self.schema = arrow_schema(resource)
        self._writer: pq.ParquetWriter | None = None
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, self.schema, compression="zstd")
        self._writer.write_table(table)
        self.rows += table.num_rows

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def tables(self) -> Iterator[pa.Table]:
        """The rows written, one row group at a time (after :meth:`close`)."""
        yield from _row_groups(self.path if self.path.exists() else None, self.schema)

    def rewrite(self, excluded: set[str]) -> None:
        """Drop rows whose id is in ``excluded`` (ids the proven set does not hold), row group by row group."""
        self.close()
        if not self.path.exists():
            return
        tmp = self.path.with_suffix(".filtering")
        with pq.ParquetWriter(tmp, self.schema, compression="zstd") as out:
            for table in self.tables():
                keep = [i not in excluded for i in table.column("id").to_pylist()]
                out.write_table(table.filter(pa.array(keep, type=pa.bool_())))
        os.replace(tmp, self.path)

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)


class ResumeArea:
    """The checkpoint folder of one snapshot date and source (see the module docstring).

    Args:
        root: the snapshots folder (``data/snapshots``).
        snapshot_date: the day being extracted.
        source: what the records come from: the API's base address, or ``sandbox`` (never a key).
    """

    def __init__(self, root: Path | str, snapshot_date: date, source: str):
        self.dir = resume_dir(root, snapshot_date)
        self.meta = {"snapshot_date": snapshot_date.isoformat(), "source": source, "schema_version": SCHEMA_VERSION}
        self.finished: dict[str, dict[str, Any]] = {}
        self.reused = 0
        self._log = None
        if self.dir.is_dir() and self._read_meta() != self.meta:
            logger.info("discarding the checkpoints in %s: they belong to another source or schema", self.dir)
            shutil.rmtree(self.dir, ignore_errors=True)
        for leftover in self.dir.glob("*.part") if self.dir.is_dir() else ():  # a list that was being read when the run died
            leftover.unlink(missing_ok=True)
        lists = self.dir / _LISTS
        if lists.is_file():
            for line in lists.read_text().splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:  # a line cut by a kill: that list is read again
                    continue
                if (self.dir / f"{entry['file']}.parquet").is_file():
                    self.finished[entry["key"]] = entry
        if self.finished:
            logger.info("resuming %s: %d list(s) already read", snapshot_date, len(self.finished))

    def _read_meta(self) -> dict[str, Any] | None:
        try:
            return json.loads((self.dir / _META).read_text())
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
        if not (self.dir / _META).is_file():
            self.dir.mkdir(parents=True, exist_ok=True)
            _write_atomic(self.dir / _META, json.dumps(self.meta, sort_keys=True))

    def spool(self, resource: str) -> ListSpool:
        """A new spool for a list about to be read."""
        self._ensure()
        return ListSpool(self.dir, resource)

    def finish(self, key: str, spool: ListSpool, entry: Mapping[str, Any]) -> None:
        """Make a proven list's spool its checkpoint (``entry``: the list's report fields, parent)."""
        spool.close()
        final = self.dir / f"{spool.name}.parquet"
        if spool.path.exists():
            os.replace(spool.path, final)
        else:  # an empty list: an empty file, so the checkpoint is self-contained
            pq.write_table(spool.schema.empty_table(), final)
        line = json.dumps({**entry, "key": key, "file": spool.name}, sort_keys=True, default=str)
        if self._log is None:
            self._log = open(self.dir / _LISTS, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        # flushed to the OS at once: a killed process loses nothing; a line cut by a crash is skipped
        self._log.write(line + "\n")
        self._log.flush()
        self.finished[key] = {**entry, "key": key, "file": spool.name}

    def tables(self, entry: Mapping[str, Any], resource: str) -> Iterator[pa.Table]:
        """A finished list's rows, one row group at a time."""
        self.reused += 1
        yield from _row_groups(self.dir / f"{entry['file']}.parquet", arrow_schema(resource))

    def close(self) -> None:
        """Close the list log (the checkpoints stay for a retry)."""
        if self._log is not None:
            self._log.close()
            self._log = None

    def discard(self) -> None:
        """Remove the folder (the day is committed)."""
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _row_groups(path: Path | None, schema: pa.Schema) -> Iterator[pa.Table]:
    if path is None:
        return
    source = pq.ParquetFile(path)
    try:
        for index in range(source.num_row_groups):
            yield source.read_row_group(index).cast(schema)
    finally:
        source.close()


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
