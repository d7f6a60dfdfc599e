"""Errors of the warehouse, one hierarchy; each message names the file or partition and what to do.

::

    WarehouseError               base (also a ``RuntimeError``): an unknown resource, an empty range, a
     |                           storage version DuckDB does not know, a build file that cannot be opened
     +-- SnapshotMissingError    a requested resource has no committed snapshot for the partition
     +-- LoadError               a partition could not be loaded; the transaction was rolled back
     +-- PublishError            the build file could not be published; the published file is untouched
"""

from __future__ import annotations

from rank_pipeline.errors import RankPipelineError

__all__ = ["LoadError", "PublishError", "SnapshotMissingError", "WarehouseError"]


class WarehouseError(RankPipelineError, RuntimeError):
    """Base of the warehouse's errors; the message names the file or partition and what to do."""


class SnapshotMissingError(WarehouseError):
    """A requested resource has no committed snapshot (no ``_manifest.json``) for the partition."""


class LoadError(WarehouseError):
    """A partition could not be loaded; the transaction was rolled back, previous state kept."""


class PublishError(WarehouseError):
    """The build file could not be published; the previously published file is untouched."""
