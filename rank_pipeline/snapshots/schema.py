"""The snapshot schema: the columns of a snapshot file (:data:`SCHEMA_VERSION` 2) and where a day's files live.

``<root>/<resource>/snapshot_date=YYYY-MM-DD/part-<account>-NNNN.parquet``, ``_manifest.json`` (or one
``_manifest.shard-<i>-of-<n>.json`` per shard). Columns: ``snapshot_date``, ``account``, ``id``, ``type``,
``parent_id``, ``extracted_at`` (timestamp[us, UTC]), ``attributes`` (JSON text). Every earlier version
stays readable (:func:`current_columns`). Why: docs/concepts/operations.md, "The snapshot schema".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from rank_pipeline.api.endpoints import endpoint_names
from rank_pipeline.errors import RankPipelineError
from rank_pipeline.snapshots.storage import Store, store_for

__all__ = [
    "COMPRESSION",
    "DAY_FOLDER_PREFIX",
    "ENDPOINTS",
    "MANIFEST_NAME",
    "MANIFEST_PREFIX",
    "SCHEMA_VERSION",
    "READABLE_VERSIONS",
    "SHARD_MANIFEST_RE",
    "SnapshotError",
    "arrow_schema",
    "check_resource",
    "check_version",
    "current_columns",
    "day_folder",
    "partition_dir",
    "records_table",
]

ENDPOINTS: tuple[str, ...] = endpoint_names()
"""Every resource the pipeline snapshots, in extraction order (declared in :data:`rank_pipeline.api.endpoints.CATALOG`)."""

COMPRESSION = "zstd"
"""The Parquet codec of every snapshot file (and of the resume checkpoints, :mod:`rank_pipeline.extract.resume`)."""
DAY_FOLDER_PREFIX = "snapshot_date="
"""The start of a day's folder name: ``snapshot_date=YYYY-MM-DD`` (the Hive-style partition key)."""

SCHEMA_VERSION = 2
"""The version of the columns below, written into every manifest (``schema_version``; docs/concepts/operations.md)."""
READABLE_VERSIONS: tuple[int, ...] = (1, 2)
"""The snapshot versions this version reads (docs/concepts/operations.md, "The snapshot schema"): every one
written so far."""
MANIFEST_NAME = "_manifest.json"
"""The manifest of a day written by one writer."""
MANIFEST_PREFIX = "_manifest"
"""The start of every manifest's file name, a single writer's or a shard's."""
SHARD_MANIFEST_RE = re.compile(r"^_manifest\.shard-(\d+)-of-(\d+)\.json$")
"""A shard's manifest (:attr:`rank_pipeline.settings.Shard.manifest_name`): groups ``i`` and ``n``."""

_COMMON: list[tuple[str, pa.DataType]] = [
    ("snapshot_date", pa.date32()),
    ("account", pa.string()),
    ("id", pa.string()),
    ("type", pa.string()),
    ("parent_id", pa.string()),
    ("extracted_at", pa.timestamp("us", tz="UTC")),
    ("attributes", pa.string()),
]
_SCHEMA = pa.schema(_COMMON)


class SnapshotError(RankPipelineError, RuntimeError):
    """A snapshot could not be written or read; the message names the path and what to do."""


def check_resource(resource: str) -> None:
    """Raises:
        SnapshotError: ``resource`` is not one of :data:`ENDPOINTS`.
    """
    if resource not in ENDPOINTS:
        raise SnapshotError(f"unknown resource {resource!r}; expected one of {', '.join(ENDPOINTS)}")


def check_version(version: int, where: object) -> None:
    """Raises:
        SnapshotError: ``version`` (a manifest's ``schema_version``, of the snapshot at ``where``) is not one
            of :data:`READABLE_VERSIONS`: written by a later version of the package.
    """
    if version not in READABLE_VERSIONS:
        raise SnapshotError(f"{where}: snapshot schema_version {version} is not one this rank-pipeline reads "
                            f"({', '.join(map(str, READABLE_VERSIONS))}): it was written by a later version; "
                            "upgrade rank-pipeline to read it")


def arrow_schema(resource: str) -> pa.Schema:
    """The Arrow schema of ``resource``'s snapshot files (module doc; the same columns for every resource).

    Raises:
        SnapshotError: ``resource`` is not one of :data:`ENDPOINTS`.
    """
    check_resource(resource)
    return _SCHEMA


def current_columns(table: pa.Table) -> pa.Table:
    """``table`` (rows of a snapshot file of any of :data:`READABLE_VERSIONS`) with the columns of
    :func:`arrow_schema` only, in its order: version 1's flattened copies of ``attributes`` fields are dropped.

    Raises:
        SnapshotError: a column of the schema is missing (not a snapshot file).
    """
    missing = [name for name in _SCHEMA.names if name not in table.column_names]
    if missing:
        raise SnapshotError(f"not a snapshot's rows: no column {', '.join(missing)}")
    table = table.select(_SCHEMA.names)
    return table if table.schema == _SCHEMA else table.cast(_SCHEMA)


def day_folder(store: Store, resource: str, snapshot_date: date) -> str:
    """``<resource>/snapshot_date=YYYY-MM-DD`` joined to the store's root, in the store's file system."""
    return store.join(resource, f"{DAY_FOLDER_PREFIX}{snapshot_date.isoformat()}")


def partition_dir(root: Path | str | Store, resource: str, snapshot_date: date) -> Path | str:
    """``<root>/<resource>/snapshot_date=YYYY-MM-DD``: where one day's snapshot of a resource lives.

    A :class:`pathlib.Path` for a local root, a URI string (``s3://bucket/prefix/...``) otherwise.

    Raises:
        SnapshotError: ``resource`` is not one of :data:`ENDPOINTS`.
    """
    check_resource(resource)
    store = store_for(root)
    folder = day_folder(store, resource, snapshot_date)
    return Path(folder) if store.local else store.display(folder)


def records_table(
    resource: str,
    snapshot_date: date,
    account: str,
    records: Iterable[Mapping[str, Any]],
    *,
    parent_id: str | None = None,
    extracted_at: datetime | None = None,
) -> pa.Table:
    """JSON:API records as rows of ``resource``'s snapshot (:func:`arrow_schema`), ``attributes`` as a JSON
    string."""
    schema = arrow_schema(resource)
    at = extracted_at or datetime.now(UTC)
    columns: dict[str, list[Any]] = {name: [] for name in schema.names}
    for record in records:
        attributes = record.get("attributes") or {}
        columns["snapshot_date"].append(snapshot_date)
        columns["account"].append(account)
        columns["id"].append(str(record.get("id")) if record.get("id") is not None else None)
        columns["type"].append(record.get("type"))
        columns["parent_id"].append(parent_id)
        columns["extracted_at"].append(at)
        columns["attributes"].append(json.dumps(attributes, separators=(",", ":"), ensure_ascii=False))
    return pa.Table.from_pydict(columns, schema=schema)
