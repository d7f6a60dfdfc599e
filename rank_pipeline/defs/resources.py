"""Dagster resources: ``source`` (the :class:`rank_pipeline.extract.source.Source`), ``warehouse`` (paths; the
writer lock) and ``model_engine`` (DuckDB or Spark). Keys never reach Dagster: an account holds the name of
its key's variable. Details: docs/concepts/dagster.md, "Resources".
"""


from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import PrivateAttr

from rank_pipeline.defs.partitions import SHARD_TAG
from rank_pipeline.defs.process_tags import record_process_tags
from rank_pipeline.extract.source import Source
from rank_pipeline.folder_lock import hold_shard_writer, hold_writer
from rank_pipeline.settings import (
    ConfigurationError,
    DataPaths,
    Settings,
    Shard,
    check_spark_master,
)
from rank_pipeline.settings.engine import (
    DEFAULT_SPARK_MASTER,
    ENGINES,
    EngineSettings,
    describe,
    needs_warehouse_uri,
)
from rank_pipeline.transform.primitives import ModelEngine
from rank_pipeline.warehouse.engines import open_engine

__all__ = ["ModelEngineResource", "WarehouseResource", "model_engine_from_env", "source_from_env",
           "warehouse_from_env"]


def source_from_env(settings: Settings | None = None) -> Source:
    """The ``source`` resource the environment describes (:meth:`Source.from_settings`; see
    :mod:`rank_pipeline.settings`). Holds the key variables' names only; the keys are read when a run
    opens the source."""
    return Source.from_settings(settings or Settings.from_env())


class WarehouseResource(dg.ConfigurableResource):
    """Paths of the snapshots and the DuckDB files, under ``data_dir``.

    A run using it holds the data folder's writer lock (:func:`rank_pipeline.folder_lock.hold_writer`; a shard
    run its shard's, :func:`rank_pipeline.folder_lock.hold_shard_writer`), after tagging the run with its
    process; it fails in one line after ``RANK_PIPELINE_LOCK_TIMEOUT_S`` (docs/concepts/dagster.md, "Resources").
    """

    data_dir: str
    snapshots_uri: str = ""
    """Where the snapshots live (``RANK_PIPELINE_SNAPSHOTS_URI``): a folder or ``s3://bucket/prefix``
    (:mod:`rank_pipeline.snapshots.storage`); empty: ``<data_dir>/snapshots``."""

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator["WarehouseResource"]:
        log = context.log.info if context.log is not None else None
        run = context.run
        holder = f"Dagster run {run.run_id}" if run is not None else "a Dagster step"
        if run is not None and context.instance is not None:
            record_process_tags(context.instance, run)  # before waiting for the lock: a waiting run can die too
        shard = run.tags.get(SHARD_TAG) if run is not None else None
        # a shard's run holds its shard's writer lock only: the shards of a day run at once
        lock = (hold_writer(self.data_dir, holder=holder, log=log) if shard is None else
                hold_shard_writer(self.data_dir, Shard.from_key(shard), holder=holder, log=log))
        with lock:
            yield self

    @property
    def paths(self) -> DataPaths:
        """The data folder's layout: the snapshots location and the DuckDB files."""
        return DataPaths(Path(self.data_dir), self.snapshots_uri or None)

    @property
    def snapshot_store_uri(self) -> Path | str:
        """The snapshots location: a local folder, or the URI of an object store."""
        return self.paths.snapshot_store_uri

    def warehouse(self):
        """The :class:`rank_pipeline.warehouse.warehouse_file.Warehouse` over the build and published files."""
        from rank_pipeline.warehouse.warehouse_file import Warehouse

        paths = DataPaths(Path(self.data_dir))
        return Warehouse(paths.build_db, paths.published_db)


def warehouse_from_env(settings: Settings | None = None) -> WarehouseResource:
    settings = settings or Settings.from_env()
    return WarehouseResource(data_dir=str(settings.data_dir), snapshots_uri=settings.snapshots_uri or "")


class ModelEngineResource(dg.ConfigurableResource):
    """Which engine builds the seeds and SQL models: ``engine`` ``duckdb`` (the build file) or ``spark`` (one
    session per run on ``spark_master``, Parquet under ``spark_warehouse_uri``).

    :meth:`open` gives the run's :class:`~rank_pipeline.transform.primitives.ModelEngine`, opened at first use
    and closed when the run's steps end. From the environment: :func:`model_engine_from_env`. Details:
    docs/concepts/dagster.md, "The model_engine resource".
    """

    engine: str = "duckdb"
    spark_master: str = DEFAULT_SPARK_MASTER
    spark_warehouse_uri: str = ""
    """Required with ``engine=spark`` (:func:`model_engine_from_env` defaults it to ``<data dir>/spark_warehouse``)."""

    _engine: Any = PrivateAttr(default=None)
    _stack: ExitStack | None = PrivateAttr(default=None)
    _log: Any = PrivateAttr(default=None)

    def settings(self) -> EngineSettings:
        """These settings as :class:`rank_pipeline.settings.EngineSettings`. Raises ConfigurationError: an unknown
        engine, a malformed ``spark_master``, or ``engine=spark`` without ``spark_warehouse_uri``.
        """
        engine = self.engine.strip().lower() or "duckdb"
        if engine not in ENGINES:
            raise ConfigurationError(f"ModelEngineResource.engine={self.engine!r} is not one of {', '.join(ENGINES)} "
                                     "(RANK_PIPELINE_ENGINE); unset it for duckdb")
        settings = EngineSettings(engine=engine,
                                  spark_master=check_spark_master(self.spark_master.strip() or DEFAULT_SPARK_MASTER),
                                  spark_warehouse_uri=self.spark_warehouse_uri.strip())
        if needs_warehouse_uri(settings) and not settings.spark_warehouse_uri:
            raise ConfigurationError("ModelEngineResource.spark_warehouse_uri is empty: set "
                                     "RANK_PIPELINE_SPARK_WAREHOUSE_URI (where Spark writes the model tables)")
        return settings

    def describe(self) -> str:
        """One log line: the engine, and on Spark the master and the warehouse URI."""
        return describe(self.settings())

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator["ModelEngineResource"]:
        self.settings()  # a bad setting fails the run before any step, in one line
        self._log = context.log.info if context.log is not None else None
        self._stack, self._engine = ExitStack(), None
        try:
            yield self
        finally:
            stack, self._stack, self._engine = self._stack, None, None
            stack.close()

    def open(self, warehouse: "WarehouseResource") -> ModelEngine:
        """The run's engine over ``warehouse``'s data folder, opened at the run's first call.
        Raises RuntimeError: outside a run, or (Spark) pyspark or Java missing.
        """
        if self._stack is None:
            raise RuntimeError("ModelEngineResource.open() needs an open run "
                               "(the engine is scoped by yield_for_execution)")
        if self._engine is None:
            if self._log is not None:
                self._log(f"{self.describe()}: opening it once for this run")
            self._engine = self._stack.enter_context(open_engine(self.settings(), warehouse.paths))
        return self._engine


def model_engine_from_env(settings: Settings | None = None, env=None) -> ModelEngineResource:
    """The model-engine resource the environment describes (:meth:`EngineSettings.from_env`).
    Raises ConfigurationError: ``RANK_PIPELINE_ENGINE`` is not ``duckdb`` or ``spark``.
    """
    engine = (settings or Settings.from_env(env)).engine
    return ModelEngineResource(engine=engine.engine, spark_master=engine.spark_master,
                               spark_warehouse_uri=engine.spark_warehouse_uri)
