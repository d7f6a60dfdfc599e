"""Publish the build: the step behind the Dagster asset ``warehouse/published`` and the end of a rebuild.

DuckDB copies the build file over the published one atomically
(:meth:`rank_pipeline.warehouse.warehouse_file.Warehouse.publish`); Spark has nothing to copy (its tables are
written where readers find them).
"""

from __future__ import annotations

from pathlib import Path

from rank_pipeline.transform.primitives import ModelEngine

__all__ = ["publish"]


def publish(engine: ModelEngine) -> Path | None:
    """Make the engine's build visible to readers: the published file, or None when the tables are in place
    (``engine.written_to``). Raises rank_pipeline.warehouse.errors.PublishError: the copy failed (nothing changed).
    """
    return engine.publish()
