"""Build one seed or model and run its tests: the step behind each Dagster model asset; the test scope
rule is shared with :mod:`rank_pipeline.steps.rebuild`.

Which days a build covers: a seed, a full refresh and every build of a non-incremental engine
(:attr:`rank_pipeline.transform.engines.ModelEngine.incremental` False) are whole; otherwise a model rebuilds the run's days and, for an incremental model, every later loaded
day within its horizon (:func:`rank_pipeline.transform.horizon.affected_ranges`). Its tests then read the
rows rebuilt (incremental), the run's days (views, tables), or the whole relation (:func:`scope_of_tests`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

from rank_pipeline.transform import BuildResult, Model, Project, Seed, TestResult
from rank_pipeline.transform.engines import ModelEngine
from rank_pipeline.warehouse.engines import prepare

__all__ = ["RelationBuild", "build_relation", "scope_of_tests"]


@dataclass
class RelationBuild:
    """What :func:`build_relation` did: the build, the test results, and the days the tests read
    (``first`` None: the whole relation)."""

    built: BuildResult
    tests: list[TestResult]
    first: date | None
    last: date | None


def scope_of_tests(engine: ModelEngine, built: BuildResult | None, first: date | None,
               last: date | None) -> tuple[date | None, date | None]:
    """The days the tests of a relation read after ``built``: the days an incremental build rebuilt,
    else ``first .. last`` (None: the whole relation, as after any build of a non-incremental engine)."""
    if built is not None and built.partition_date is not None:
        return built.partition_date, built.until
    return (first, last) if engine.incremental else (None, None)


def build_relation(engine: ModelEngine, project: Project, relation: Model | Seed, first: date, last: date, *,
                   full_refresh: bool = False, snapshots_uri: Path | str | None = None) -> RelationBuild:
    """Build ``relation`` for the run's days ``first .. last`` and run its ``.yml`` tests (module docstring).

    Args:
        engine: the model engine (:func:`rank_pipeline.warehouse.engines.open_engine`).
        project: the models project (for the horizon, and to find earlier builds on Spark).
        full_refresh: build from scratch; the tests read the whole relation.
        snapshots_uri: where the committed snapshots are (Spark reads them in place).

    Raises:
        rank_pipeline.transform.BuildError: the build failed (the old relation is kept);
        rank_pipeline.transform.TestExecutionError: a test's SQL failed.
    """
    prepare(engine, snapshots_uri, project)
    if isinstance(relation, Seed):
        built = engine.build_seed(relation)
        scope: tuple[date | None, date | None] = (None, None)
    elif full_refresh:
        built = engine.build(relation, full_refresh=True)
        scope = (None, None)
    else:
        start, until = engine.affected_ranges(project, first, last).get(relation.qualified_name, (first, last))
        built = engine.build(relation, start, until=until)
        scope = scope_of_tests(engine, built, first, last)
    return RelationBuild(built, engine.run_tests(relation, scope[0], until=scope[1]), *scope)
