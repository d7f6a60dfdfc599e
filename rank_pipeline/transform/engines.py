"""Which engine runs the SQL models, and the one interface both engines offer (:class:`ModelEngine`).

=========================================  ============================================================
``RANK_PIPELINE_ENGINE``                   ``duckdb`` (default: :class:`.runner.DuckDBEngine` on the
                                           warehouse's build file) or ``spark``
                                           (:class:`.spark_engine.SparkEngine`)
``RANK_PIPELINE_SPARK_MASTER``             Spark master URL (default :data:`DEFAULT_SPARK_MASTER`)
``RANK_PIPELINE_SPARK_WAREHOUSE_URI``      where Spark writes model tables as Parquet (default
                                           ``<RANK_PIPELINE_DATA_DIR>/spark_warehouse``)
=========================================  ============================================================

:func:`rank_pipeline.warehouse.engines.open_engine` is the one place that turns the engine's name into an engine (and
loads its raw tables); everything else
(the step functions of :mod:`rank_pipeline.steps`, the Dagster assets, the command line) uses the
:class:`ModelEngine` it returns. An engine that is not :attr:`ModelEngine.incremental` builds every model
in full whatever days it is asked for, and its tests read the whole relations; both DuckDB and Spark
are incremental.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Protocol

# the engine is a setting: EngineSettings reads RANK_PIPELINE_ENGINE and the Spark variables
from rank_pipeline.settings import DEFAULT_SPARK_MASTER, EngineSettings
from rank_pipeline.settings import ENGINES as ENGINE_NAMES
from rank_pipeline.transform.project import Model, Project, Seed
from rank_pipeline.transform.testing import TestResult

__all__ = ["BuildResult", "DEFAULT_SPARK_MASTER", "ENGINES", "EngineKind", "EngineSettings", "ModelEngine", "describe",
           "needs_warehouse_uri"]




@dataclass(frozen=True)
class BuildResult:
    """What a build did.

    Attributes:
        rows: rows written (a table: all rows; an incremental partition build: rows of that partition;
            a seed: all rows); None for views.
        seconds: wall time of the build, for metadata (never asserted).
        sql: the SELECT that ran (for an incremental partition build, the rewritten one).
        mode: ``view``, ``table``, ``full_refresh``, ``incremental`` or ``seed``.
        partition_date: the first day built incrementally, else None.
        until: the last day built incrementally (``partition_date`` for a one-day build), else None.
    """

    rows: int | None
    seconds: float
    sql: str
    mode: str
    partition_date: date | None = None
    until: date | None = None


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
"""The engines by name (:func:`rank_pipeline.warehouse.engines.open_engine` opens them)."""


class ModelEngine(Protocol):
    """What builds, tests and publishes the seeds and models (DuckDB or Spark; :func:`rank_pipeline.warehouse.engines.open_engine`).

    Attributes:
        name: ``duckdb`` or ``spark`` (asset kinds, metadata).
        incremental: True when a build of days rebuilds only those days (and the later days within the
            horizon); False when every build is a full build and tests read whole relations.
        catalog: the catalog readers see the tables in (``warehouse``, ``spark_catalog``).
        written_to: where the tables are written (the build file, the Spark warehouse URI).

    The raw tables are not the engine's: whoever opens it loads them (the pipeline:
    :mod:`rank_pipeline.warehouse.engines`) through what each engine offers (DuckDB: its connection; Spark:
    ``register_raw`` over Parquet files).
    """

    name: str
    incremental: bool
    catalog: str

    @property
    def written_to(self) -> str: ...

    def prepare(self, project: Project) -> None:
        """Make the relations of earlier builds readable (once per engine)."""

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
