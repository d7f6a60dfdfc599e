"""Reading committed snapshots (days, manifests, files, rows): only files a committed manifest lists, one
writer's ``_manifest.json`` or a full set of shard manifests (docs/concepts/operations.md).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pydantic import ValidationError

from rank_pipeline.snapshots.manifest import SnapshotManifest
from rank_pipeline.snapshots.schema import (
    DAY_FOLDER_PREFIX,
    MANIFEST_NAME,
    MANIFEST_PREFIX,
    SHARD_MANIFEST_RE,
    SnapshotError,
    check_version,
    current_columns,
    day_folder,
    empty_table,
)
from rank_pipeline.snapshots.storage import Store, store_for

__all__ = ["committed_manifest", "list_snapshot_dates", "load_manifest_json", "read_manifest", "read_snapshot",
           "snapshot_files"]


def _merge_shards(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    """One manifest for a day committed by ``n`` shards: their files, rows and accounts together."""
    merged = dict(manifests[0])
    merged["files"] = [f for m in manifests for f in m.get("files", [])]
    merged["row_count"] = sum(int(m.get("row_count", 0)) for m in manifests)
    merged["complete"] = all(m.get("complete", True) for m in manifests)
    merged["written_at"] = max(str(m.get("written_at", "")) for m in manifests)
    merged["accounts"] = {k: v for m in manifests for k, v in sorted((m.get("accounts") or {}).items())}
    merged["shards"] = len(manifests)
    return merged


def committed_manifest(store: Store, folder: str, names: Iterable[str] | None = None) -> dict[str, Any] | None:
    """The manifest a reader trusts in ``folder`` (None: nothing committed): ``_manifest.json``, or the union of a
    full set of ``_manifest.shard-<i>-of-<n>.json``, the newer when both; ``names``: the folder's, if listed.
    Raises SnapshotError: a manifest is not readable JSON.
    """
    if names is None:
        names = [posixpath.basename(i.path) for i in store.listdir(folder)]
    names = set(names)
    candidates: list[dict[str, Any]] = []
    if MANIFEST_NAME in names:
        candidates.append(load_manifest_json(store, posixpath.join(folder, MANIFEST_NAME)))
    by_count: dict[int, dict[int, str]] = {}
    for name in names:
        match = SHARD_MANIFEST_RE.match(name)
        if match:
            by_count.setdefault(int(match.group(2)), {})[int(match.group(1))] = name
    for count, shards in by_count.items():
        if len(shards) == count:
            candidates.append(_merge_shards([load_manifest_json(store, posixpath.join(folder, shards[i]))
                                             for i in range(count)]))
    if not candidates:
        return None
    return max(candidates, key=lambda m: str(m.get("written_at", "")))


def load_manifest_json(store: Store, path: str) -> dict[str, Any]:
    """One manifest file as a JSON object. Raises SnapshotError: not readable, not JSON, or not an object."""
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
        if name.startswith(MANIFEST_PREFIX) and name.endswith(".json"):
            folders.setdefault(parent, set()).add(name)
    out = []
    for folder, names in folders.items():
        day = posixpath.basename(folder)
        if posixpath.dirname(folder).rstrip("/") != base.rstrip("/") or not day.startswith(DAY_FOLDER_PREFIX):
            continue
        if MANIFEST_NAME in names or committed_manifest(store, folder, names) is not None:
            out.append(date.fromisoformat(day.split("=", 1)[1]))
    return sorted(out)


def read_manifest(root: Path | str | Store, resource: str, snapshot_date: date) -> SnapshotManifest:
    """The :class:`~rank_pipeline.snapshots.manifest.SnapshotManifest` of one committed snapshot (a day of ``n``
    shards: their union, ``shards`` = n). Raises SnapshotError: no committed snapshot of ``resource`` for
    ``snapshot_date``, or an unreadable manifest.
    """
    store = store_for(root)
    folder = day_folder(store, resource, snapshot_date)
    manifest = committed_manifest(store, folder)
    if manifest is None:
        raise SnapshotError(
            f"no {resource} snapshot for {snapshot_date} at {store.display(folder)}: extract that day first "
            f"(a past day cannot be fetched from the real API again)"
        )
    try:
        parsed = SnapshotManifest.model_validate(manifest)
    except ValidationError as exc:
        raise SnapshotError(
            f"cannot read the manifest in {store.display(folder)} (not a snapshot manifest: "
            f"{exc.errors()[0]['loc']} {exc.errors()[0]['msg']}); re-extract that day"
        ) from exc
    check_version(parsed.schema_version, store.display(folder))
    return parsed


def snapshot_files(root: Path | str | Store, resource: str, snapshot_date: date,
                   manifest: SnapshotManifest | None = None) -> list[str]:
    """Full paths, in the store's file system, of the files one committed snapshot's manifest lists.
    Raises SnapshotError: no ``manifest`` given and no committed snapshot for that day.
    """
    store = store_for(root)
    manifest = manifest if manifest is not None else read_manifest(store, resource, snapshot_date)
    folder = day_folder(store, resource, snapshot_date)
    return [posixpath.join(folder, name) for name in manifest.files]


def read_snapshot(root: Path | str | Store, resource: str, snapshot_date: date) -> pa.Table:
    """Every row of one committed snapshot (all accounts, only the files its manifest lists) as an Arrow table
    with :func:`~rank_pipeline.snapshots.schema.arrow_schema`, whichever version wrote it.

    Raises SnapshotError: no committed snapshot for that day, or one written by a later version.
    """
    store = store_for(root)
    tables = [current_columns(pq.read_table(path, filesystem=store.fs))
              for path in snapshot_files(store, resource, snapshot_date)]
    if not tables:
        return empty_table(resource)
    return pa.concat_tables(tables)
