"""Errors of the SQL model runner, one hierarchy.

::

    SqlModelError
     +-- ProjectError            the project cannot load (raised by load_project, i.e. when Dagster
     |    |                      definitions load); the message names the file, model and what is wrong
     |    +-- ModelConfigError   a .yml file is malformed (unknown key, wrong type, bad test, ...)
     |    +-- ModelSqlError      a .sql file is not a single DuckDB SELECT, or references a relation badly
     |    +-- DependencyError    a reference to a missing model, seed or raw table, or a dependency cycle
     +-- BuildError              a model or seed failed to build; the target keeps its previous state
     +-- TestExecutionError      a data test's SQL could not run (not: the test found failing rows)
     +-- RawLoadError            the files handed for a raw table could not be loaded; nothing was changed
"""

from __future__ import annotations

from rank_pipeline.errors import EXIT_USAGE, RankPipelineError

__all__ = [
    "BuildError",
    "DependencyError",
    "ModelConfigError",
    "ModelSqlError",
    "ProjectError",
    "RawLoadError",
    "SqlModelError",
    "TestExecutionError",
]


class SqlModelError(RankPipelineError, RuntimeError):
    """Base of every error of :mod:`rank_pipeline.transform`."""


class ProjectError(SqlModelError):
    """The dbt_like_sql project is invalid; raised while loading it (exit 2: configuration).

    Its message may list several problems, one a line; :meth:`one_line` gives the first and how many more.
    """

    exit_status = EXIT_USAGE

    def one_line(self) -> str:
        problems = [line.strip() for line in str(self).splitlines() if line.strip()]
        more = f" (and {len(problems) - 1} more line(s) of detail)" if len(problems) > 1 else ""
        return (problems[0] if problems else type(self).__name__) + more


class ModelConfigError(ProjectError):
    """A model or seed ``.yml`` is invalid."""


class ModelSqlError(ProjectError):
    """A model's ``.sql`` is not one plain DuckDB SELECT or references relations wrongly."""


class DependencyError(ProjectError):
    """A reference to something that does not exist, or a cycle between models."""


class BuildError(SqlModelError):
    """Building a model or loading a seed failed; the target relation is unchanged."""


class TestExecutionError(SqlModelError):
    """A data test's SQL failed to execute (for example: the model was never built).

    Attributes:
        index: the position of the SELECT that failed among those given to ``failing_rows``, if known.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, message: str, index: int | None = None):
        super().__init__(message)
        self.index = index


class RawLoadError(SqlModelError):
    """The files handed for a raw table could not be loaded (unreadable, or their rows disagree with their
    manifest or day); the raw tables keep their previous state. The pipeline raises it as
    ``rank_pipeline.warehouse.LoadError``."""
