"""The dbt-like SQL model runner: discover ``dbt_like_sql/``, order by dependencies, build, test.

No Dagster here: ``rank_pipeline/defs`` turns each model into an asset and each test into an asset
check. Typical use::

    project = load_project("dbt_like_sql")            # validates; raises ProjectError subclasses
    for model in project.topological_order():
        result = build(con, model, partition_date=day) # BuildResult(rows, seconds, sql, mode, ...)
        for check in run_tests(con, model, partition_date=day):
            ...                                        # TestResult(name, passed, failures, ...)

See :mod:`.project` for the project layout and ``.yml`` format (the raw sources too: ``sources:`` in
``sources/raw.yml``, each table with its columns and types), :mod:`.materialize` for the one materialization
flow, :mod:`.duckdb_engine` and :mod:`.spark_engine` for the engines' primitives, :mod:`.rewrite` for the SQL both engines run, :mod:`.testing` for the tests, :mod:`.docs` for the data
dictionary, and :mod:`.errors` for the error hierarchy.

The runner stands alone: it imports nothing of the pipeline but :mod:`rank_pipeline.errors` and
:mod:`rank_pipeline.settings`. Its caller loads the raw tables (the pipeline:
:mod:`rank_pipeline.warehouse.engines`).
"""

from rank_pipeline.transform.dependencies import sql_dependencies
from rank_pipeline.transform.duckdb_engine import build, build_all, build_seed, incremental_sql
from rank_pipeline.transform.errors import (
    BuildError,
    DependencyError,
    ModelConfigError,
    ModelSqlError,
    ProjectError,
    SqlModelError,
    TestExecutionError,
)
from rank_pipeline.transform.nodes import ColumnSpec, IncrementalConfig, Model, PipelineTable, Seed, TestSpec
from rank_pipeline.transform.primitives import BuildResult
from rank_pipeline.transform.project import Project, load_project, loaded_project
from rank_pipeline.transform.testing import TestResult, run_test, run_tests, test_sql

__all__ = [
    "BuildError",
    "BuildResult",
    "ColumnSpec",
    "DependencyError",
    "IncrementalConfig",
    "Model",
    "ModelConfigError",
    "ModelSqlError",
    "Project",
    "ProjectError",
    "Seed",
    "PipelineTable",
    "SqlModelError",
    "TestExecutionError",
    "TestResult",
    "TestSpec",
    "build",
    "build_all",
    "build_seed",
    "incremental_sql",
    "load_project",
    "loaded_project",
    "run_test",
    "run_tests",
    "sql_dependencies",
    "test_sql",
]
