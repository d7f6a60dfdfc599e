"""Where the pipeline hands snapshots and the warehouse file to the model runner: :func:`open_engine` (the one
branch on ``RANK_PIPELINE_ENGINE``: DuckDB on the build file, or Spark on one session) and the raw loads
over any engine, recorded in the data folder's :class:`~rank_pipeline.warehouse.raw_days.RawDays`
(docs/concepts/models.md, "Opening an engine").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date
from pathlib import Path

from rank_pipeline.settings import DataPaths, EngineSettings
from rank_pipeline.transform.duckdb_engine import DuckDBEngine
from rank_pipeline.transform.primitives import ModelEngine
from rank_pipeline.transform.project import Project
from rank_pipeline.transform.spark_engine import SparkEngine
from rank_pipeline.warehouse.raw_days import RawDays
from rank_pipeline.warehouse.raw_load import KEYWORDS_FILE, held_days, load_raw, raw_columns, restore_raw
from rank_pipeline.warehouse.warehouse_file import Warehouse

__all__ = ["KEYWORDS_FILE", "load_partitions", "open_engine", "prepare", "raw_columns", "reload_raw"]


@contextmanager
def _recorded(engine: ModelEngine, ledger: RawDays) -> Iterator[ModelEngine]:
    """``engine``, its raw loads recorded in ``ledger`` (its ``raw_ledger``) while the block runs."""
    engine.raw_ledger = ledger
    try:
        yield engine
    finally:
        engine.raw_ledger = None


@contextmanager
def open_engine(settings: EngineSettings, paths: DataPaths) -> Iterator[ModelEngine]:
    """The engine ``settings`` names, for the ``with`` block: ``duckdb``, a
    :class:`rank_pipeline.transform.duckdb_engine.DuckDBEngine` on a writer connection to ``paths.build_db``
    (published to ``paths.published_db``), closed at the end; ``spark``, a
    :class:`rank_pipeline.transform.spark_engine.SparkEngine` on one session, stopped at the end unless it ran
    before the block. Either records its raw loads in the data folder's ledger (its ``raw_ledger``).

    Raises RuntimeError (Spark: no pyspark, or no Java 17+) or rank_pipeline.warehouse.errors.WarehouseError
    (DuckDB: the build file cannot be opened).
    """
    if settings.engine == "spark":
        try:
            from pyspark.sql import SparkSession
        except ImportError as exc:
            raise RuntimeError("RANK_PIPELINE_ENGINE=spark needs pyspark: install the project's spark extra "
                               "(pip install -e '.[spark]'), or unset RANK_PIPELINE_ENGINE for duckdb") from exc
        from rank_pipeline.transform.spark_session import spark_session

        already = SparkSession.getActiveSession()
        engine = SparkEngine(spark_session(settings.spark_master), settings.spark_warehouse_uri)
        try:
            with _recorded(engine, RawDays.of(paths.data_dir)):  # no ledger yet: every committed day
                yield engine
        finally:
            if already is None:
                engine.spark.stop()
        return
    warehouse = Warehouse(paths.build_db, paths.published_db)
    with warehouse.connect() as con:
        # no ledger yet (a folder from before it): the days the build file's raw tables hold
        with _recorded(DuckDBEngine(con, warehouse), RawDays.of(paths.data_dir, lambda: held_days(con))) as duck:
            yield duck


def prepare(engine: ModelEngine, snapshots_uri: Path | str | None, project: Project) -> None:
    """Make the raw tables and the relations of earlier builds readable before a build (once per engine):
    the raw tables given the days its ``raw_ledger`` holds (:func:`rank_pipeline.warehouse.raw_load.restore_raw`)
    when the engine has none readable yet (Spark's new session; DuckDB's build file keeps
    them), then :meth:`~rank_pipeline.transform.primitives.ModelEngine.prepare`."""
    if not engine.raw_loaded and snapshots_uri is not None:
        restore_raw(engine, snapshots_uri)
    engine.prepare(project)


def load_partitions(engine: ModelEngine, snapshots_uri: Path | str, first: date, last: date) -> dict[date, dict[str, int]]:
    """Load the raw days ``first .. last``, each committed and passed by the shape check
    (:func:`rank_pipeline.warehouse.raw_load.load_raw`, recorded in the engine's ``raw_ledger``); ``{day: {endpoint: rows}}``.
    DuckDB replaces the days' rows in one transaction; Spark registers its raw views again over the snapshots of
    the days held (read in place) and counts the rows of ``first .. last``.

    Raises:
        rank_pipeline.warehouse.errors.SnapshotMissingError, LoadError: a day is not committed or its
            snapshot is damaged (nothing loaded).
    """
    return load_raw(engine, snapshots_uri, first, last, strict=True)


def reload_raw(engine: ModelEngine, snapshots: Path | str | Sequence[Path | str], first: date | None = None,
               last: date | None = None, *, count: bool = True) -> dict[date, dict[str, int]]:
    """Make raw hold exactly the committed snapshots of ``first .. last`` under ``snapshots`` (one root, or
    several whose days are combined; None: an open bound; both None: every raw table reloaded whole), each day
    passed by the shape check, recorded in the engine's ``raw_ledger``; ``{day: {endpoint: rows}}`` of those days (``{}``
    when not ``count``)."""
    return load_raw(engine, snapshots, first, last, count=count)
