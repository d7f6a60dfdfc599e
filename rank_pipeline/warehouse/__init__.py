"""The DuckDB warehouse: the raw layer loaded from snapshots (:mod:`~rank_pipeline.warehouse.raw_load`), the
build and published files and publishing (:mod:`~rank_pipeline.warehouse.warehouse_file`), their errors
(:mod:`~rank_pipeline.warehouse.errors`), and the engine adapters (:mod:`~rank_pipeline.warehouse.engines`).

The names of the first three are re-exported here (import them from their module or from
``rank_pipeline.warehouse``); :mod:`~rank_pipeline.warehouse.engines` is imported by its own name.
"""

from __future__ import annotations

from rank_pipeline.warehouse.errors import LoadError, PublishError, SnapshotMissingError, WarehouseError
from rank_pipeline.warehouse.raw_load import (
    ENDPOINTS,
    KEYWORDS_FILE_COLUMNS,
    KEYWORDS_FILE_TABLE,
    RAW_SCHEMA,
    RAW_TABLES,
    SOURCE_TABLES,
    ensure_keywords_file_table,
    ensure_raw_table,
    load_partition,
    load_partitions,
    reload_raw_from_snapshots,
    snapshot_dates,
)
from rank_pipeline.warehouse.warehouse_file import (
    DEFAULT_STORAGE_VERSION,
    SCHEMAS,
    STORAGE_VERSION_ENV,
    Warehouse,
)

__all__ = [
    "DEFAULT_STORAGE_VERSION",
    "ENDPOINTS",
    "KEYWORDS_FILE_COLUMNS",
    "KEYWORDS_FILE_TABLE",
    "RAW_SCHEMA",
    "RAW_TABLES",
    "SCHEMAS",
    "SOURCE_TABLES",
    "STORAGE_VERSION_ENV",
    "LoadError",
    "PublishError",
    "SnapshotMissingError",
    "Warehouse",
    "WarehouseError",
    "ensure_keywords_file_table",
    "ensure_raw_table",
    "load_partition",
    "load_partitions",
    "reload_raw_from_snapshots",
    "snapshot_dates",
]
