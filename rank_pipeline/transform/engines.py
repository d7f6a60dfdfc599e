"""Which engine runs the SQL models, and the one interface both engines offer (:class:`ModelEngine`).

=========================================  ============================================================
``RANK_PIPELINE_ENGINE``                   ``duckdb`` (default: :class:`.runner.DuckDBEngine` on the
                                           warehouse's build file) or ``spark``
                                           (:class:`.spark_engine.SparkEngine`)
``RANK_PIPELINE_SPARK_MASTER``             Spark master URL (default :data:`DEFAULT_SPARK_MASTER`)
``RANK_PIPELINE_SPARK_WAREHOUSE_URI``      where Spark writes model tables as Parquet (default
                                           ``<RANK_PIPELINE_DATA_DIR>/spark_warehouse``)
=========================================  ============================================================

:func:`open_engine` is the one place that turns the engine's name into an engine; everything else
(the step functions of :mod:`rank_pipeline.steps`, the Dagster assets, the command line) uses the
:class:`ModelEngine` it returns. An engine that is not :attr:`ModelEngine.incremental` builds every model
in full whatever days it is asked for, and its tests read the whole relations; both DuckDB and Spark
are incremental.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Protocol

# the engine is a setting: EngineSettings reads RANK_PIPELINE_ENGINE and the Spark variables
from rank_pipeline.settings import DEFAULT_SPARK_MASTER, EngineSettings
from rank_pipeline.settings import ENGINES as ENGINE_NAMES
from rank_pipeline.transform.project import Model, Project, Seed
from rank_pipeline.transform.runner import BuildResult
from rank_pipeline.transform.testing import TestResult

__all__ = ["DEFAULT_SPARK_MASTER", "ENGINES", "EngineKind", "EngineSettings", "ModelEngine", "describe",
           "needs_warehouse_uri", "open_engine"]




@dataclass(frozen=True)
class EngineKind:
    """What is known of an engine before it is opened (asset definitions, log lines).

    Attributes:
        description: one log line; ``{spark_master}`` and ``{spark_warehouse_uri}`` are filled in.
        catalog: the catalog its tables are named in (DuckDB: the published file's default name).
        raw_kinds: the Dagster kinds of its raw tables (where the raw rows are read from).
        writes_under_uri: its tables are written under ``spark_warehouse_uri`` (which is then required).
    """

    description: str
    catalog: str
    raw_kinds: frozenset[str]
    writes_under_uri: bool = False


ENGINES: dict[str, EngineKind] = {
    "duckdb": EngineKind("model engine: duckdb (the warehouse's build file)", "warehouse", frozenset({"duckdb"})),
    "spark": EngineKind("model engine: spark on {spark_master}, seeds and models as Parquet tables under "
                        "{spark_warehouse_uri}", "spark_catalog", frozenset({"spark", "parquet"}),
                        writes_under_uri=True),
}
"""The engines by name (:func:`open_engine` opens them)."""


class ModelEngine(Protocol):
    """What builds, tests and publishes the seeds and models (DuckDB or Spark; :func:`open_engine`).

    Attributes:
        name: ``duckdb`` or ``spark`` (asset kinds, metadata).
        incremental: True when a build of days rebuilds only those days (and the later days within the
            horizon); False when every build is a full build and tests read whole relations.
        catalog: the catalog readers see the tables in (``warehouse``, ``spark_catalog``).
        written_to: where the tables are written (the build file, the Spark warehouse URI).
        con: the DuckDB writer connection to the build file, for tables only DuckDB keeps
            (``raw.keywords_file``); None on an engine without one.
    """

    name: str
    incremental: bool
    catalog: str
    con: Any

    @property
    def written_to(self) -> str: ...

    def prepare(self, snapshots_uri: Any, project: Project | None = None) -> None:
        """Make the raw tables and the relations of earlier builds readable (once per engine)."""

    def load_partitions(self, snapshots_uri: Any, first: date, last: date) -> dict[date, dict[str, int]]:
        """Load the raw days ``first .. last`` (each committed); ``{day: {endpoint: rows}}``."""

    def reload_raw(self, snapshots_uri: Any, first: date | None = None,
                   last: date | None = None) -> dict[date, dict[str, int]]:
        """Make raw hold exactly the committed snapshots of ``first .. last`` (None: open bound)."""

    def affected_ranges(self, project: Project, first: date, last: date) -> dict[str, tuple[date, date]]:
        """The days each incremental model rebuilds after a load of ``first .. last`` ({} when not incremental)."""

    def build_seed(self, seed: Seed) -> BuildResult: ...

    def build(self, model: Model, partition_date: date | None = None, *, until: date | None = None,
              full_refresh: bool = False) -> BuildResult: ...

    def build_all(self, project: Project, partition_date: date | None = None, *, until: date | None = None,
                  full_refresh: bool = False) -> dict[str, BuildResult]: ...

    def run_tests(self, relation: Model | Seed, partition_date: date | None = None, *,
                  until: date | None = None) -> list[TestResult]: ...

    def failing_rows(self, duckdb_sql: str, sample_size: int = 5) -> tuple[int, list[dict]]:
        """``(rows, sample)`` of a SELECT written in DuckDB SQL."""

    def column_types(self, qualified: str) -> list[tuple[str, str]]: ...

    def row_count(self, qualified: str) -> int: ...

    def location(self, schema: str, name: str) -> str: ...

    def publish(self) -> Path | None:
        """Make the build visible to readers; the published file, or None when nothing needs copying."""

assert set(ENGINES) == set(ENGINE_NAMES), "every engine the settings accept has its EngineKind"


def needs_warehouse_uri(settings: EngineSettings) -> bool:
    """True when the engine writes its tables under ``settings.spark_warehouse_uri`` (which is then required)."""
    return ENGINES[settings.engine].writes_under_uri


def describe(settings: EngineSettings) -> str:
    """One log line: the engine, and where it writes (no secret)."""
    return ENGINES[settings.engine].description.format(spark_master=settings.spark_master,
                                                       spark_warehouse_uri=settings.spark_warehouse_uri)


@contextmanager
def open_engine(settings: EngineSettings, paths: Any) -> Iterator[ModelEngine]:
    """The engine ``settings`` names, for the duration of the ``with`` block (the one place that
    branches on the engine's name).

    ``duckdb``: a :class:`.runner.DuckDBEngine` on a writer connection to ``paths.build_db`` (published
    to ``paths.published_db``), closed at the end. ``spark``: a :class:`.spark_engine.SparkEngine` on one
    Spark session on ``settings.spark_master``, writing under ``settings.spark_warehouse_uri``; the
    session is stopped at the end unless it was already running in this process when the block began
    (Spark allows one session per process; a caller's session is left to its owner).

    Args:
        settings: the engine and its Spark settings.
        paths: the data folder's :class:`rank_pipeline.settings.DataPaths`.

    Raises:
        RuntimeError: on Spark, pyspark is not installed (``pip install 'rank-pipeline[spark]'``), or no
            Java 17+ (:func:`.spark_engine.java_home`).
        rank_pipeline.warehouse.database.WarehouseError: on DuckDB, the build file cannot be opened.
    """
    if settings.engine == "spark":
        try:
            from pyspark.sql import SparkSession
        except ImportError as exc:
            raise RuntimeError("RANK_PIPELINE_ENGINE=spark needs pyspark: install the project's spark extra "
                               "(pip install -e '.[spark]'), or unset RANK_PIPELINE_ENGINE for duckdb") from exc
        from rank_pipeline.transform.spark_engine import SparkEngine, spark_session

        already = SparkSession.getActiveSession()
        engine = SparkEngine(spark_session(settings.spark_master), settings.spark_warehouse_uri)
        try:
            yield engine
        finally:
            if already is None:
                engine.spark.stop()
        return
    from rank_pipeline.transform.runner import DuckDBEngine
    from rank_pipeline.warehouse.database import Warehouse

    warehouse = Warehouse(paths.build_db, paths.published_db)
    with warehouse.connect() as con:
        yield DuckDBEngine(con, warehouse)
