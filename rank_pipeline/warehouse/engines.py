"""The model engine on this data folder: opened by name, its raw tables loaded from the committed snapshots.

The model runner (:mod:`rank_pipeline.transform`) knows nothing of snapshots or of the warehouse file; this
module is where the pipeline hands them to it:

- :func:`open_engine` turns ``RANK_PIPELINE_ENGINE`` into an engine (the one place that branches on the
  engine's name): DuckDB on the warehouse's build file, or Spark on one session;
- :func:`load_partitions`, :func:`reload_raw` and :func:`prepare` load the raw tables the models read.
  DuckDB copies the days' rows into the build file (:mod:`rank_pipeline.warehouse.raw_load`); Spark reads
  every committed snapshot's Parquet files in place (the files their manifests list).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date
from functools import cache
from pathlib import Path

import duckdb

from rank_pipeline.settings import DataPaths, EngineSettings
from rank_pipeline.snapshots.reader import list_snapshot_dates, read_manifest
from rank_pipeline.snapshots.schema import ENDPOINTS, partition_dir
from rank_pipeline.transform.duckdb_engine import DuckDBEngine
from rank_pipeline.transform.primitives import ModelEngine
from rank_pipeline.transform.project import Project
from rank_pipeline.transform.spark_engine import SparkEngine
from rank_pipeline.transform.sql import table_columns
from rank_pipeline.warehouse import raw_load
from rank_pipeline.warehouse.warehouse_file import Warehouse

KEYWORDS_FILE = raw_load.KEYWORDS_FILE_TABLE.removeprefix(f"{raw_load.RAW_SCHEMA}.")
"""The keywords file's raw table, by its bare name (``keywords_file``)."""

__all__ = ["KEYWORDS_FILE", "build_file_connection", "load_partitions", "open_engine", "prepare", "raw_columns", "register_snapshots",
           "reload_raw"]


@contextmanager
def open_engine(settings: EngineSettings, paths: DataPaths) -> Iterator[ModelEngine]:
    """The engine ``settings`` names, for the duration of the ``with`` block.

    ``duckdb``: a :class:`rank_pipeline.transform.duckdb_engine.DuckDBEngine` on a writer connection to
    ``paths.build_db`` (published to ``paths.published_db``), closed at the end. ``spark``: a
    :class:`rank_pipeline.transform.spark_engine.SparkEngine` on one Spark session on
    ``settings.spark_master``, writing under ``settings.spark_warehouse_uri``; the session is stopped at
    the end unless it was already running in this process when the block began (Spark allows one
    session per process; a caller's session is left to its owner).

    Raises:
        RuntimeError: on Spark, pyspark is not installed (``pip install 'rank-pipeline[spark]'``), or no
            Java 17+ (:func:`rank_pipeline.transform.spark_session.java_home`).
        rank_pipeline.warehouse.errors.WarehouseError: on DuckDB, the build file cannot be opened.
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
            yield engine
        finally:
            if already is None:
                engine.spark.stop()
        return
    warehouse = Warehouse(paths.build_db, paths.published_db)
    with warehouse.connect() as con:
        yield DuckDBEngine(con, warehouse)


@cache
def raw_columns(table: str) -> tuple[tuple[str, str], ...]:
    """``((column, DuckDB type), ...)`` of ``raw.<table>`` as the warehouse creates it, in table order (the
    models folder declares the same in ``sources:`` (``sources/raw.yml``); a test holds the two equal).

    Raises:
        rank_pipeline.snapshots.schema.SnapshotError: ``table`` is neither an endpoint nor the keywords file's.
    """
    with duckdb.connect(":memory:") as con:
        con.execute(f"create schema {raw_load.RAW_SCHEMA}")
        if table == KEYWORDS_FILE:
            raw_load.ensure_keywords_file_table(con)
        else:
            raw_load.ensure_raw_table(con, table)
        return tuple(table_columns(con, raw_load.RAW_SCHEMA, table).items())


def register_snapshots(engine: SparkEngine, snapshot_roots: Path | str | Sequence[Path | str]) -> dict[str, int]:
    """On Spark: register every raw table over the Parquet files of every committed snapshot under
    ``snapshot_roots`` (one root, or several whose days are combined; only the files their manifests list)
    and the keywords file's table as an empty view (it is DuckDB's alone).

    Returns:
        ``{endpoint: number of Parquet files}``.
    """
    roots = [snapshot_roots] if isinstance(snapshot_roots, str | Path) else list(snapshot_roots)
    counts = {}
    for resource in ENDPOINTS:
        files: list[str] = []
        days: list[date] = []
        for root in roots:
            for day in list_snapshot_dates(root, resource):
                days.append(day)
                folder = partition_dir(root, resource, day)
                files += [f"{str(folder).rstrip('/')}/{name}" for name in read_manifest(root, resource, day).files]
        counts[resource] = engine.register_raw(resource, files, raw_columns(resource), max(days, default=None))
    engine.register_raw(KEYWORDS_FILE, [], raw_columns(KEYWORDS_FILE))
    return counts


def prepare(engine: ModelEngine, snapshots_uri: Path | str | None, project: Project) -> None:
    """Make the raw tables and the relations of earlier builds readable before a build (once per engine):
    on Spark the raw views over the committed snapshots (when not registered yet) and the tables earlier
    sessions wrote; on DuckDB both are in the build file already."""
    if isinstance(engine, SparkEngine) and not engine.raw_registered and snapshots_uri is not None:
        register_snapshots(engine, snapshots_uri)
    engine.prepare(project)


def load_partitions(engine: ModelEngine, snapshots_uri: Path | str, first: date, last: date) -> dict[date, dict[str, int]]:
    """Load the raw days ``first .. last`` (each committed); ``{day: {endpoint: rows}}``.

    DuckDB: the days' rows replaced in one transaction (:func:`rank_pipeline.warehouse.raw_load.load_partitions`).
    Spark: every raw view registered again over all committed snapshots (read in place; a raw view holds every
    committed day), and the rows of ``first .. last`` counted.

    Raises:
        rank_pipeline.warehouse.errors.SnapshotMissingError, LoadError: a day is not committed or its
            snapshot is damaged (nothing loaded).
    """
    if isinstance(engine, SparkEngine):
        return _register_all_and_count(engine, snapshots_uri, first, last)
    return raw_load.load_partitions(_duckdb(engine).con, snapshots_uri, first, last)


def reload_raw(engine: ModelEngine, snapshots_uri: Path | str, first: date | None = None,
               last: date | None = None) -> dict[date, dict[str, int]]:
    """Make raw hold exactly the committed snapshots of ``first .. last`` (None: open bound; both None: every
    raw table dropped and reloaded, :func:`rank_pipeline.warehouse.raw_load.reload_raw_from_snapshots`);
    ``{day: {endpoint: rows}}``. On Spark as :func:`load_partitions`."""
    if isinstance(engine, SparkEngine):
        return _register_all_and_count(engine, snapshots_uri, first, last)
    return raw_load.reload_raw_from_snapshots(_duckdb(engine).con, snapshots_uri, first, last)


def _register_all_and_count(engine: SparkEngine, snapshots_uri: Path | str, first: date | None,
                            last: date | None) -> dict[date, dict[str, int]]:
    """Spark: every raw view registered again over all committed snapshots (the last loaded day found
    afresh), then ``{day: {endpoint: rows}}`` of ``first .. last`` (None: open bound)."""
    engine.forget_last_loaded()
    register_snapshots(engine, snapshots_uri)
    return engine.raw_rows_by_day(first, last)


def build_file_connection(engine: ModelEngine) -> duckdb.DuckDBPyConnection | None:
    """The writer connection to the warehouse's build file when ``engine`` builds there (DuckDB), for the
    tables only the DuckDB warehouse keeps (``raw.keywords_file``'s planned rows); None on Spark, whose raw
    keywords file is an empty view (:func:`register_snapshots`)."""
    return engine.con if isinstance(engine, DuckDBEngine) else None


def _duckdb(engine: ModelEngine) -> DuckDBEngine:
    """``engine`` as the DuckDB engine it must be here.

    Raises:
        TypeError: another engine (the factory opens only DuckDB and Spark).
    """
    if not isinstance(engine, DuckDBEngine):
        raise TypeError(f"expected the duckdb engine, got {engine.name}")
    return engine
