"""Which engine runs the SQL models, from the environment (issue 13 item 2).

=========================================  ============================================================
``RANK_PIPELINE_ENGINE``                   ``duckdb`` (default: :mod:`.runner` on the warehouse's build
                                           file) or ``spark`` (:mod:`.spark_engine`)
``RANK_PIPELINE_SPARK_MASTER``             Spark master URL (default ``local[2]``)
``RANK_PIPELINE_SPARK_WAREHOUSE_URI``      where Spark writes model tables as Parquet (default
                                           ``<RANK_PIPELINE_DATA_DIR>/spark_warehouse``)
=========================================  ============================================================

Both engines offer the same few operations: ``build_seed(seed)``, ``build(model, partition_date, until=,
full_refresh=)``, ``build_all(project, ...)`` and ``run_tests(relation, partition_date, until=)``; on DuckDB
they are the functions of :mod:`.runner` and :mod:`.testing` with a connection, on Spark the methods of
:class:`.spark_engine.SparkEngine` (incremental builds are full rebuilds there).

Who reads them: ``rank-pipeline rebuild`` (:func:`rank_pipeline.steps.rebuild.rebuild_on_spark`) and, in Dagster,
the ``model_engine`` resource (:func:`rank_pipeline.defs.resources.model_engine_from_env`), which opens
the session with :func:`open_spark_engine`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

# the engine is a setting: EngineSettings reads the variables above (rank_pipeline.settings)
from rank_pipeline.settings import ENGINES, EngineSettings

__all__ = ["ENGINES", "EngineSettings", "open_spark_engine", "spark_engine"]


def spark_engine(settings: EngineSettings):
    """A :class:`.spark_engine.SparkEngine` on a session for ``settings.spark_master``."""
    from rank_pipeline.models.spark_engine import SparkEngine, spark_session

    return SparkEngine(spark_session(settings.spark_master), settings.spark_warehouse_uri)


@contextmanager
def open_spark_engine(settings: EngineSettings) -> Iterator:
    """A :class:`.spark_engine.SparkEngine` for the duration of the ``with`` block (one Spark session);
    the session is stopped at the end unless it was already running in this process when the block began
    (Spark allows one session per process; a caller's session is left to its owner).

    Raises:
        RuntimeError: pyspark is not installed (``pip install 'rank-pipeline[spark]'``), or no Java 17+
            (:func:`.spark_engine.java_home`).
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise RuntimeError("RANK_PIPELINE_ENGINE=spark needs pyspark: install the project's spark extra "
                           "(pip install -e '.[spark]'), or unset RANK_PIPELINE_ENGINE for duckdb") from exc
    already = SparkSession.getActiveSession()
    engine = spark_engine(settings)
    try:
        yield engine
    finally:
        if already is None:
            engine.spark.stop()
