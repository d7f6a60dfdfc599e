"""Build one seed or model and run its tests (:func:`rank_pipeline.transform.materialize.build_and_test`), the
raw tables and earlier builds made readable first: the step behind each Dagster model asset.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path

from rank_pipeline.transform import Model, Project, Seed
from rank_pipeline.transform.materialize import RelationBuild, build_and_test
from rank_pipeline.transform.primitives import ModelEngine
from rank_pipeline.warehouse.engines import prepare

__all__ = ["RelationBuild", "build_relation"]


def build_relation(engine: ModelEngine, project: Project, relation: Model | Seed, first: date, last: date, *,
                   full_refresh: bool = False, snapshots_uri: Path | str | None = None,
                   progress: Callable[[str], None] | None = None) -> RelationBuild:
    """Build ``relation`` for the run's days ``first .. last`` on ``engine`` and run its ``.yml`` tests
    (``full_refresh``: from scratch, tests read all; ``snapshots_uri``: read in place on Spark; ``progress``: a
    line per step of a full refresh in steps of days).

    Raises rank_pipeline.transform.BuildError (the old relation kept) or TestExecutionError (a test's SQL failed).
    """
    prepare(engine, snapshots_uri, project)
    return build_and_test(engine, project, relation, first, last, full_refresh=full_refresh, progress=progress)
