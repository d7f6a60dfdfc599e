"""The snapshot schema: the columns of a snapshot file (:data:`SCHEMA_VERSION` 2) and where a day's files live.

``<root>/<resource>/snapshot_date=YYYY-MM-DD/part-<account>-NNNN.parquet``, ``_manifest.json`` (or one
``_manifest.shard-<i>-of-<n>.json`` per shard). Columns: ``snapshot_date``, ``account``, ``id``, ``type``,
``parent_id``, ``extracted_at`` (timestamp[us, UTC]), ``attributes`` (JSON text). Every earlier version
stays readable (:func:`current_columns`). Why: docs/concepts/operations.md, "The snapshot schema".
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from itertools import accumulate
from pathlib import Path
from types import MappingProxyType
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from rank_pipeline.api.endpoints import endpoint_names
from rank_pipeline.api.listing import RawRecord
from rank_pipeline.errors import RankPipelineError
from rank_pipeline.snapshots.storage import Store, store_for

__all__ = [
    "DAY_FOLDER_PREFIX",
    "ENDPOINTS",
    "MANIFEST_NAME",
    "MANIFEST_PREFIX",
    "PARQUET_OPTIONS",
    "SCHEMA_VERSION",
    "READABLE_VERSIONS",
    "SHARD_MANIFEST_RE",
    "SnapshotError",
    "arrow_schema",
    "check_resource",
    "check_version",
    "current_columns",
    "day_folder",
    "empty_table",
    "partition_dir",
    "records_table",
]

ENDPOINTS: tuple[str, ...] = endpoint_names()
"""Every resource the pipeline snapshots, in extraction order (declared in :data:`rank_pipeline.api.endpoints.CATALOG`)."""

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

PARQUET_OPTIONS: Mapping[str, Any] = MappingProxyType({
    "compression": "zstd",
    "use_dictionary": ["snapshot_date", "account", "type", "parent_id"],
    "write_statistics": [name for name, _ in _COMMON if name != "attributes"],
})
"""How every snapshot file is written (``pyarrow.parquet.ParquetWriter``'s keyword arguments, read-only): zstd; a
dictionary for the few-valued columns only (``id`` and ``attributes`` differ per row); min/max statistics for
every column but ``attributes``, whose JSON text no reader filters by range (benchmarks/RESULTS.md, "Twelfth
pass"). The resume checkpoints (:mod:`rank_pipeline.extract.resume`) use lz4."""


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


def empty_table(resource: str) -> pa.Table:
    """A table of no row with :func:`arrow_schema`'s columns. Built from no batch: ``pa.Schema.empty_table()``
    imports pandas (about 0.3 CPU-seconds in a process that has not). Raises SnapshotError: ``resource`` is not
    one of :data:`ENDPOINTS`."""
    return pa.Table.from_batches([], schema=arrow_schema(resource))


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
    """``<root>/<resource>/snapshot_date=YYYY-MM-DD`` (a :class:`pathlib.Path` for a local root, else a URI string).
    Raises SnapshotError: ``resource`` is not one of :data:`ENDPOINTS`.
    """
    check_resource(resource)
    store = store_for(root)
    folder = day_folder(store, resource, snapshot_date)
    return Path(folder) if store.local else store.display(folder)


def records_table(
    resource: str,
    snapshot_date: date,
    account: str,
    records: Iterable[Mapping[str, Any] | RawRecord],
    *,
    parent_id: str | None = None,
    extracted_at: datetime | None = None,
) -> pa.Table:
    """JSON:API records (a list page's ``data``, spec "Pagination") as rows of ``resource``'s snapshot
    (:func:`arrow_schema`, one row a record), ``attributes`` as a JSON string: a
    :class:`~rank_pipeline.api.listing.RawRecord`'s as the vendor's bytes (an object; anything else as a dict's),
    a dict's serialized compactly (null or empty: ``{}``); an id that is not text as its ``str``;
    ``extracted_at`` (default now, UTC) to the microsecond. A page of ``RawRecord``s whose attributes are all
    objects is built from its bytes at once, any other record by record. Raises SnapshotError: ``resource`` is
    not one of :data:`ENDPOINTS`."""
    schema = arrow_schema(resource)
    at = extracted_at or datetime.now(UTC)
    if type(records) is list and all(type(r) is RawRecord for r in records):
        ids, types, texts = _raw_columns(records)
    else:
        ids, types, texts = _record_columns(records)
    n = len(texts)
    days = (snapshot_date - _EPOCH.date()).days
    micros = (at.astimezone(UTC) - _EPOCH) // timedelta(microseconds=1)
    columns = {
        "snapshot_date": pa.Array.from_buffers(pa.date32(), n, [None, pa.py_buffer(array("i", [days]) * n)]),
        "account": _constant(account, n),
        "id": ids,
        "type": types,
        "parent_id": _constant(parent_id, n),
        "extracted_at": pa.Array.from_buffers(schema.field("extracted_at").type, n,
                                              [None, pa.py_buffer(array("q", [micros]) * n)]),
        "attributes": texts,
    }
    return pa.Table.from_arrays([columns[name] for name in schema.names], schema=schema)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _raw_columns(records: list[RawRecord]) -> tuple[pa.Array, pa.Array, pa.Array]:
    """``id``, ``type`` and ``attributes`` of a page read raw, each built whole: the attributes from the
    vendor's bytes joined (not copied one by one); a page where some record's attributes are not an object
    (null, a list, ...) is built the record-by-record way (:func:`_record_columns`)."""
    attributes = _utf8([r.attributes for r in records])
    if not records or pc.all(pc.starts_with(attributes, "{")).as_py():
        return _strings([r.id for r in records], ids=True), _strings([r.type for r in records]), attributes
    return _record_columns(records)


def _record_columns(records: Iterable[Mapping[str, Any] | RawRecord]) -> tuple[pa.Array, pa.Array, pa.Array]:
    """``id``, ``type`` and ``attributes`` of any records, row by row: an id not text as its ``str``,
    attributes that are not an object's bytes serialized compactly (null: ``{}``)."""
    ids: list[Any] = []
    types: list[Any] = []
    texts: list[bytes] = []
    for record in records:
        if isinstance(record, RawRecord):
            rid, rtype, raw = record.id, record.type, bytes(record.attributes)
            texts.append(raw if raw[:1] == b"{" else _attributes_text(_JSON.decode(raw)))
        else:
            rid, rtype = record.get("id"), record.get("type")
            texts.append(_attributes_text(record.get("attributes")))
        ids.append(rid)
        types.append(rtype)
    return _strings(ids, ids=True), _strings(types), _utf8(texts)


def _utf8(values: Sequence[bytes | msgspec.Raw]) -> pa.Array:
    """A string array of UTF-8 ``values`` (bytes-like, none null), built from its two buffers."""
    data = b"".join(values)
    wide = len(data) >= 2**31  # past int32 offsets: built large, then cast (raises past a string array's limit)
    return _from_buffers(data, values, wide)


def _from_buffers(data: bytes, values: Sequence[Any], wide: bool) -> pa.Array:
    """A string array of ``data`` cut at the lengths of ``values`` (their lengths in bytes)."""
    offsets = array("q" if wide else "i", [0, *accumulate(map(len, values))])
    built = pa.Array.from_buffers(pa.large_string() if wide else pa.string(), len(values),
                                  [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return built.cast(pa.string()) if wide else built


def _constant(value: str | None, n: int) -> pa.Array:
    """A string array of ``n`` times ``value`` (None: all null). A page's (``n`` up to
    :data:`_SHARED_UP_TO`) is shared by the pages that repeat it (an account, a type): arrays are immutable."""
    if value is None:
        return pa.nulls(n, pa.string())
    return _shared_constant(value, n) if n <= _SHARED_UP_TO else _repeated(value, n)


_SHARED_UP_TO = 10_000
"""The longest constant column kept for reuse (16 kept, each ``n`` times the value's bytes)."""


@lru_cache(maxsize=16)
def _shared_constant(value: str, n: int) -> pa.Array:
    return _repeated(value, n)


def _repeated(value: str, n: int) -> pa.Array:
    """``n`` times ``value`` from two buffers, the value's bytes repeated and the offsets of their length (those of
    up to :data:`_SHARED_UP_TO` strings kept for reuse: a page's parent ids are all as long); ``pa.scalar`` or
    ``pa.array`` would import pandas. Past int32 offsets: built large, then cast (raises past a string's limit)."""
    raw = value.encode()
    wide = len(raw) * n >= 2**31
    offsets = _shared_offsets(len(raw), n) if n <= _SHARED_UP_TO and not wide else _offsets(len(raw), n, wide)
    built = pa.Array.from_buffers(pa.large_string() if wide else pa.string(), n,
                                  [None, offsets, pa.py_buffer(raw * n)])
    return built.cast(pa.string()) if wide else built


def _offsets(size: int, n: int, wide: bool) -> pa.Buffer:
    """The offsets of ``n`` strings of ``size`` bytes each (int64 when ``wide``, else int32)."""
    code = "q" if wide else "i"
    return pa.py_buffer(array(code, range(0, size * n + 1, size)) if size else array(code, [0]) * (n + 1))


@lru_cache(maxsize=16)
def _shared_offsets(size: int, n: int) -> pa.Buffer:
    return _offsets(size, n, False)


def _strings(values: list[Any], ids: bool = False) -> pa.Array:
    """A string array of ``values``: one value repeated, or text, or all None, from buffers; else converted by
    pyarrow (``pa.array``, which imports pandas). ``ids``: a value neither text nor None is its ``str`` (an id
    the vendor sent as a number)."""
    if not values:
        return _from_buffers(b"", values, False)
    first = values[0]
    if type(first) is str and values.count(first) == len(values):
        return _constant(first, len(values))
    try:
        text = "".join(values)  # raises unless every value is text
    except TypeError:
        if ids:
            return _strings([v if v is None or type(v) is str else str(v) for v in values])
    else:
        if text.isascii():  # a character is one byte: the lengths are the offsets, the data one encode
            return _from_buffers(text.encode(), values, len(text) >= 2**31)
        return _utf8([v.encode() for v in values])
    if all(v is None for v in values):
        n = len(values)
        return pa.Array.from_buffers(pa.string(), n, [pa.py_buffer(bytes((n + 7) // 8)),
                                                      pa.py_buffer(bytes(4 * (n + 1))), pa.py_buffer(b"")], null_count=n)
    return pa.array(values, pa.string())


_JSON = msgspec.json.Decoder()


def _attributes_text(attributes: Any) -> bytes:
    return json.dumps(attributes or {}, separators=(",", ":"), ensure_ascii=False).encode()
