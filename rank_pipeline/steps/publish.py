"""Publish the build (the step behind ``warehouse/published``): DuckDB's build file copied over the published
one atomically; on Spark nothing to copy.
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
