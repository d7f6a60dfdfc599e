"""The snapshot schema: the columns of a snapshot file and where a day's files and manifests live.

Snapshots are the system of record. The API tells only the present, so a past day can never be fetched
again: each daily run writes one snapshot per resource, and every warehouse table can be rebuilt from
them. A snapshot is immutable once committed, except that re-extracting the same day (from the sandbox,
or today again from the real API) replaces it whole (:mod:`rank_pipeline.snapshots.writer`; read by
:mod:`rank_pipeline.snapshots.reader`).

Layout (``docs/architecture.md``, "Snapshots")::

    <root>/<resource>/snapshot_date=YYYY-MM-DD/part-<account>-NNNN.parquet
    <root>/<resource>/snapshot_date=YYYY-MM-DD/_manifest.json
    <root>/<resource>/snapshot_date=YYYY-MM-DD/_manifest.shard-<i>-of-<n>.json   (a day extracted by n shards)

Columns: ``snapshot_date`` (date32), ``account``, ``id``, ``type``, ``parent_id`` (string, null),
``extracted_at`` (timestamp[us, UTC]), ``attributes`` (the record's full ``attributes`` as a JSON string),
then the fields the spec shows, flattened (:data:`SPEC_FIELDS`). Fields the spec marks "not shown" are
never flattened here: they stay in ``attributes`` and are read by the staging SQL models only.

``root`` is a local folder or any store of :mod:`rank_pipeline.snapshots.storage`
(``RANK_PIPELINE_SNAPSHOTS_URI=s3://bucket/prefix``). The API key is never passed to the snapshot
modules, so it cannot reach a snapshot or a manifest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from rank_pipeline.api.endpoints import CATALOG, endpoint_names
from rank_pipeline.errors import RankPipelineError
from rank_pipeline.snapshots.storage import Store, store_for

__all__ = [
    "COMPRESSION",
    "DAY_FOLDER_PREFIX",
    "ENDPOINTS",
    "MANIFEST_NAME",
    "MANIFEST_PREFIX",
    "SCHEMA_VERSION",
    "SHARD_MANIFEST_RE",
    "SPEC_FIELDS",
    "SnapshotError",
    "arrow_schema",
    "check_resource",
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

SCHEMA_VERSION = 1
"""The version of the columns below, written into every manifest (``schema_version``)."""
MANIFEST_NAME = "_manifest.json"
"""The manifest of a day written by one writer."""
MANIFEST_PREFIX = "_manifest"
"""The start of every manifest's file name, a single writer's or a shard's."""
SHARD_MANIFEST_RE = re.compile(r"^_manifest\.shard-(\d+)-of-(\d+)\.json$")
"""A shard's manifest (:attr:`rank_pipeline.settings.Shard.manifest_name`): groups ``i`` and ``n``."""

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


def check_resource(resource: str) -> None:
    """Raises:
        SnapshotError: ``resource`` is not one of :data:`ENDPOINTS`.
    """
    if resource not in SPEC_FIELDS:
        raise SnapshotError(f"unknown resource {resource!r}; expected one of {', '.join(ENDPOINTS)}")


def arrow_schema(resource: str) -> pa.Schema:
    """The Arrow schema of ``resource``'s snapshot files: the common columns, then :data:`SPEC_FIELDS`.

    Raises:
        SnapshotError: ``resource`` is not one of :data:`ENDPOINTS`.
    """
    check_resource(resource)
    return pa.schema(_COMMON + [(name, typ) for name, typ, _ in SPEC_FIELDS[resource]])


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
