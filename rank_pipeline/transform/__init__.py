"""The dbt-like SQL model runner: discover ``dbt_like_sql/`` (:func:`load_project`), order by dependencies,
build and test on any engine (:mod:`~rank_pipeline.transform.materialize`). No Dagster; it imports only
:mod:`rank_pipeline.errors` and :mod:`rank_pipeline.settings`. Modules and a typical use:
docs/concepts/models.md, "Using the runner".
"""

from rank_pipeline.transform import materialize
from rank_pipeline.transform.dependencies import sql_dependencies
from rank_pipeline.transform.duckdb_engine import DuckDBEngine, incremental_sql
from rank_pipeline.transform.errors import (
    BuildError,
    DependencyError,
    ModelConfigError,
    ModelSqlError,
    ProjectError,
    RawLoadError,
    SqlModelError,
    TestExecutionError,
)
from rank_pipeline.transform.nodes import ColumnSpec, IncrementalConfig, Model, PipelineTable, Seed, TestSpec
from rank_pipeline.transform.primitives import BuildResult, ModelEngine, RawDay, RawTable
from rank_pipeline.transform.project import Project, load_project, loaded_project
from rank_pipeline.transform.testing import TestResult, run_tests, test_sql

__all__ = [
    "BuildError",
    "BuildResult",
    "ColumnSpec",
    "DependencyError",
    "DuckDBEngine",
    "IncrementalConfig",
    "Model",
    "ModelConfigError",
    "ModelEngine",
    "ModelSqlError",
    "Project",
    "ProjectError",
    "RawDay",
    "RawLoadError",
    "RawTable",
    "Seed",
    "PipelineTable",
    "SqlModelError",
    "TestExecutionError",
    "TestResult",
    "TestSpec",
    "incremental_sql",
    "load_project",
    "loaded_project",
    "materialize",
    "run_tests",
    "sql_dependencies",
    "test_sql",
]
