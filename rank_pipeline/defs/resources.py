"""Dagster resources: the rank-tracking source (vendor API or embedded sandbox), the warehouse paths, and
the engine that builds the SQL models (DuckDB, or Spark: :class:`ModelEngineResource`).

The ``source`` resource is the :class:`rank_pipeline.extract.source.Source` itself
(:func:`source_from_env`: its accounts are the settings' :class:`~rank_pipeline.settings.AccountConfig`,
its pacing and shard from the settings), the same object the command line extracts from. Keys never
reach Dagster: an account holds its name and the *name* of its key's environment variable, and
:func:`rank_pipeline.extract.source.read_keys` reads the value when the extraction step opens the source, so
run configuration, the UI and run metadata never see a key.
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
    """Paths of the snapshots and the DuckDB files, under ``data_dir`` (docs/concepts/architecture.md).

    While a run (or, with a multiprocess executor, a step) uses this resource, its process holds the
    data folder's writer lock (:func:`rank_pipeline.folder_lock.hold_writer`, an OS lock released when
    the process dies, which first removes the leftovers of dead runs): one run at a time extracts, loads,
    builds and publishes; a second one waits, saying so in its log, and fails with a one-line message
    after ``RANK_PIPELINE_LOCK_TIMEOUT_S``. The steps the assets call hold it too (it is re-entrant).
    A run of one shard partition (``RANK_PIPELINE_SHARDS``, tagged ``dagster/partition/shard``) holds that
    shard's writer lock instead (:func:`rank_pipeline.folder_lock.hold_shard_writer`), so the shards
    of a day extract at once.
    Before waiting for the lock the run is tagged with its process
    (:func:`rank_pipeline.defs.process_tags.record_process_tags`), so it is marked failed if that is killed.
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
    """Which engine builds the seeds and SQL models (:mod:`rank_pipeline.settings.engine`).

    ``engine`` is ``duckdb`` (default: the models are built in the warehouse's DuckDB build file, which
    the ``warehouse/published`` asset publishes) or ``spark``: the model assets run on ONE Spark session
    per run on ``spark_master``, through :class:`rank_pipeline.transform.spark_engine.SparkEngine`, which
    reads the committed snapshots in place and writes every seed and model as Parquet under
    ``spark_warehouse_uri`` (``<uri>/<schema>/<name>``; a folder, ``file:///...``, ``s3a://bucket/prefix``,
    ``hdfs://...``). On Spark, as on DuckDB, a run of days rebuilds those days of each incremental model
    (and its later loaded days within the horizon), tables whole, and its tests read the rows rebuilt.

    :meth:`open` gives the run's :class:`~rank_pipeline.transform.primitives.ModelEngine`
    (:func:`~rank_pipeline.warehouse.engines.open_engine`), opened at the run's first use (a run that builds
    no model, or Dagster re-initializing the resources after a run to read its outputs, opens nothing)
    and closed when the run's steps end (:meth:`yield_for_execution`; with a multiprocess executor, one
    per step process): one DuckDB writer connection, or one Spark session.

    From the environment: :func:`model_engine_from_env` (``RANK_PIPELINE_ENGINE``,
    ``RANK_PIPELINE_SPARK_MASTER``, ``RANK_PIPELINE_SPARK_WAREHOUSE_URI``).
    """

    engine: str = "duckdb"
    spark_master: str = DEFAULT_SPARK_MASTER
    spark_warehouse_uri: str = ""
    """Required with ``engine=spark`` (:func:`model_engine_from_env` defaults it to ``<data dir>/spark_warehouse``)."""

    _engine: Any = PrivateAttr(default=None)
    _stack: ExitStack | None = PrivateAttr(default=None)
    _log: Any = PrivateAttr(default=None)

    def settings(self) -> EngineSettings:
        """These settings as :class:`rank_pipeline.settings.EngineSettings`.

        Raises:
            ConfigurationError: an unknown engine, a malformed ``spark_master``, or ``engine=spark`` without
                ``spark_warehouse_uri``.
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
        """The run's engine over ``warehouse``'s data folder, opened at the first call of the run.

        Raises:
            RuntimeError: called outside a run, or (Spark) pyspark/Java missing.
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
    """The model-engine resource described by the environment (:meth:`EngineSettings.from_env`).

    Raises:
        ConfigurationError: ``RANK_PIPELINE_ENGINE`` is not ``duckdb`` or ``spark``.
    """
    engine = (settings or Settings.from_env(env)).engine
    return ModelEngineResource(engine=engine.engine, spark_master=engine.spark_master,
                               spark_warehouse_uri=engine.spark_warehouse_uri)
