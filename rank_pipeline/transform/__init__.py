"""The dbt-like SQL model runner: discover ``dbt_like_sql/``, order by dependencies, build, test.

No Dagster here: ``rank_pipeline/defs`` turns each model into an asset and each test into an asset
check. Typical use::

    project = load_project("dbt_like_sql")              # validates; raises ProjectError subclasses
    engine = DuckDBEngine(duckdb.connect("build.duckdb")) # or any engine: warehouse.engines.open_engine
    built = materialize.build_all(engine, project, day)  # {qualified name: BuildResult(rows, seconds, ...)}
    for name, checks in materialize.run_all_tests(engine, project, built, day, day):
        ...                                              # [TestResult(name, passed, failures, ...)]

See :mod:`.project` for the project layout and ``.yml`` format (the raw sources too: ``sources:`` in
``sources/raw.yml``, each table with its columns and types), :mod:`.materialize` for the one materialization
flow, :mod:`.primitives` for the engine protocol and :mod:`.duckdb_engine` and :mod:`.spark_engine` for its
engines, :mod:`.rewrite` for the SQL both engines run, :mod:`.testing` for the tests, :mod:`.docs` for the data
dictionary, and :mod:`.errors` for the error hierarchy.

The runner stands alone: it imports nothing of the pipeline but :mod:`rank_pipeline.errors` and
:mod:`rank_pipeline.settings`. Its caller hands the engine the raw tables' files (``load_raw``; the
pipeline: :mod:`rank_pipeline.warehouse.raw_load`).
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
