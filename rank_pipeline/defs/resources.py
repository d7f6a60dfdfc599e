"""Dagster resources: the rank-tracking source (vendor API or embedded sandbox), the warehouse paths, and
the engine that builds the SQL models (DuckDB, or Spark: :class:`ModelEngineResource`).

The source is resolved by :mod:`rank_pipeline.extract.source`, the same module the command line uses. Keys never
reach Dagster: the resource holds each account's name and the *name* of its key's environment variable,
and :func:`rank_pipeline.extract.source.read_keys` reads the value when the extraction step opens the source, so
run configuration, the UI and run metadata never see a key.
"""


from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, fields
from datetime import date
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import PrivateAttr

from rank_pipeline.api import ClientConfig
from rank_pipeline.defs.instance import record_process_tags
from rank_pipeline.extract.day import AccountSource
from rank_pipeline.extract.source import Source
from rank_pipeline.models.engines import ENGINES, EngineSettings, open_spark_engine
from rank_pipeline.settings import AccountConfig, ConfigurationError, DataPaths, RateSettings, Settings
from rank_pipeline.snapshots.shards import Shard, parse_shard
from rank_pipeline.warehouse.locks import remove_leftovers, writer_lock

__all__ = ["AccountKey", "ModelEngineResource", "RankTrackerResource", "WarehouseResource",
           "model_engine_from_env", "source_from_env", "warehouse_from_env"]


class AccountKey(dg.Config):
    """One account: its name (written to snapshots and the warehouse) and where its key is.

    ``api_key_env`` names the environment variable holding the key (read at run time). ``api_key`` is a
    literal key for tests against the sandbox only; leave it empty in deployments.
    """

    name: str
    api_key_env: str = ""
    api_key: str = ""


class RankTrackerResource(dg.ConfigurableResource):
    """Where the day's records come from (see :class:`rank_pipeline.extract.source.Source`).

    ``base_url`` None means the embedded sandbox (started on 127.0.0.1 in the run's process, its clock
    set to the partition date). Rates follow the spec's "Limits" section (per key and per IP address,
    per ``window_s`` seconds; defaults and meaning: :class:`rank_pipeline.settings.RateSettings`, whose
    fields these are, as Dagster configuration); ``per_page`` (at most 1000),
    ``max_passes`` and ``settle_budget_requests`` (re-reads of a list whose records shift between pages;
    None: the ClientConfig defaults) go to
    :class:`rank_pipeline.api.ClientConfig`.
    """

    base_url: str | None = None
    accounts: list[AccountKey] = []
    per_key_limit: int = RateSettings.per_key_limit
    per_ip_limit: int = RateSettings.per_ip_limit
    window_s: float = RateSettings.window_s
    max_in_flight: int = RateSettings.max_in_flight
    per_page: int = 1000
    max_passes: int | None = None
    settle_budget_requests: int | None = None
    shard: str = ""
    """``i/n``: extract only the accounts of shard ``i`` of ``n`` (:mod:`rank_pipeline.snapshots.shards`); empty: all."""

    @property
    def uses_sandbox(self) -> bool:
        return self.base_url is None

    def client_config(self) -> ClientConfig:
        """The extractor's pacing and pagination settings (:class:`rank_pipeline.api.ClientConfig`)."""
        optional = {k: v for k, v in (("max_passes", self.max_passes),
                                      ("settle_budget_requests", self.settle_budget_requests)) if v is not None}
        rates = RateSettings(**{f.name: getattr(self, f.name) for f in fields(RateSettings)})
        return ClientConfig.from_rates(rates, per_page=self.per_page, **optional)

    def source(self) -> Source:
        """The plain :class:`rank_pipeline.extract.source.Source` this resource describes."""
        accounts = tuple(AccountConfig(a.name, a.api_key_env or f"<literal key of {a.name}>")
                         for a in self.accounts)
        return Source(self.base_url, accounts, self.client_config())

    def open_source(self, snapshot_date: date, data_dir: str | Path | None = None,
                    snapshots_uri: Path | str | None = None) -> tuple[str, list[AccountSource]]:
        """``(base_url, accounts)`` to extract ``snapshot_date`` from (:meth:`rank_pipeline.extract.source.Source.open`).

        With ``data_dir``, the data folder's recorded source and the accounts' identity (against the
        snapshots at ``snapshots_uri``, the warehouse resource's location) are checked first.
        """
        literal = {a.name: a.api_key for a in self.accounts if a.api_key}
        opened = self.source().open(snapshot_date, Path(data_dir) if data_dir is not None else None,
                                    keys=literal or None, snapshots_uri=snapshots_uri)
        return opened.base_url, opened.accounts

    def describe(self) -> str:
        """A log-safe description of the source (no key)."""
        shard = self.shard_setting()
        return self.source().describe() + (f", shard {shard}" if shard is not None else "")

    def shard_setting(self) -> Shard | None:
        """:attr:`shard` parsed (:func:`rank_pipeline.snapshots.shards.parse_shard`).

        Raises:
            ValueError: not ``i/n`` with ``0 <= i < n``.
        """
        return parse_shard(self.shard, name="RankTrackerResource.shard")


class WarehouseResource(dg.ConfigurableResource):
    """Paths of the snapshots and the DuckDB files, under ``data_dir`` (docs/architecture.md).

    While a run (or, with a multiprocess executor, a step) uses this resource, its process holds the
    data folder's writer lock (:func:`rank_pipeline.warehouse.locks.writer_lock`, an OS lock released when the
    process dies): one run at a time extracts, loads, builds and publishes; a second one waits, saying
    so in its log, and fails with a one-line message after ``RANK_PIPELINE_LOCK_TIMEOUT_S``. Once the
    lock is held, the leftovers of dead runs are removed (:func:`rank_pipeline.warehouse.locks.remove_leftovers`).
    Before waiting for the lock the run is tagged with its process
    (:func:`rank_pipeline.defs.instance.record_process_tags`), so it is marked failed if that is killed.
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
        with writer_lock(self.data_dir, holder=holder, log=log):
            remove_leftovers(self.data_dir, log=log)
            yield self

    @property
    def snapshot_store_uri(self) -> Path | str:
        """The snapshots location: a local folder, or the URI of an object store."""
        return DataPaths(Path(self.data_dir), self.snapshots_uri or None).snapshot_store_uri

    def warehouse(self):
        """The :class:`rank_pipeline.warehouse.database.Warehouse` over the build and published files."""
        from rank_pipeline.warehouse.database import Warehouse

        paths = DataPaths(Path(self.data_dir))
        return Warehouse(paths.build_db, paths.published_db)


def source_from_env(settings: Settings | None = None) -> RankTrackerResource:
    """The source resource described by the environment (see :mod:`rank_pipeline.settings`).

    Holds the key variables' names only; the keys are read when a run opens the source.
    """
    settings = settings or Settings.from_env()
    common = dict(asdict(settings.rates), shard=str(settings.shard) if settings.shard is not None else "")
    if settings.uses_sandbox:
        return RankTrackerResource(**common)
    return RankTrackerResource(
        base_url=settings.base_url,
        accounts=[AccountKey(name=a.name, api_key_env=a.api_key_env) for a in settings.accounts],
        **common,
    )


def warehouse_from_env(settings: Settings | None = None) -> WarehouseResource:
    settings = settings or Settings.from_env()
    return WarehouseResource(data_dir=str(settings.data_dir), snapshots_uri=settings.snapshots_uri or "")


class ModelEngineResource(dg.ConfigurableResource):
    """Which engine builds the seeds and SQL models (issue 13 item 4; :mod:`rank_pipeline.models.engines`).

    ``engine`` is ``duckdb`` (default: the models are built in the warehouse's DuckDB build file, which
    the ``warehouse/published`` asset publishes) or ``spark``: the model assets run on ONE Spark session
    per run on ``spark_master`` (scoped by :meth:`yield_for_execution`: started at the run's first Spark
    step, stopped when the run's steps end; with a multiprocess executor, one per step process),
    through :class:`rank_pipeline.models.spark_engine.SparkEngine`, which reads the committed snapshots
    in place and writes every seed and model as Parquet under ``spark_warehouse_uri``
    (``<uri>/<schema>/<name>``; a folder, ``file:///...``, ``s3a://bucket/prefix``, ``hdfs://...``).
    On Spark every build is a full rebuild of the model from all committed snapshots, whatever the run's
    partitions (incremental models included), and its tests run on the whole relation.

    From the environment: :func:`model_engine_from_env` (``RANK_PIPELINE_ENGINE``,
    ``RANK_PIPELINE_SPARK_MASTER``, ``RANK_PIPELINE_SPARK_WAREHOUSE_URI``).
    """

    engine: str = "duckdb"
    spark_master: str = "local[2]"
    spark_warehouse_uri: str = ""
    """Required with ``engine=spark`` (:func:`model_engine_from_env` defaults it to ``<data dir>/spark_warehouse``)."""

    _spark: Any = PrivateAttr(default=None)
    _stack: ExitStack | None = PrivateAttr(default=None)
    _log: Any = PrivateAttr(default=None)
    _raw_loaded: bool = PrivateAttr(default=False)
    _attached: bool = PrivateAttr(default=False)

    @property
    def uses_spark(self) -> bool:
        return self.engine.strip().lower() == "spark"

    def settings(self) -> EngineSettings:
        """These settings as :class:`rank_pipeline.models.engines.EngineSettings`.

        Raises:
            ConfigurationError: an unknown engine, or ``engine=spark`` without ``spark_warehouse_uri``.
        """
        engine = self.engine.strip().lower() or "duckdb"
        if engine not in ENGINES:
            raise ConfigurationError(f"ModelEngineResource.engine={self.engine!r} is not one of {', '.join(ENGINES)} "
                                     "(RANK_PIPELINE_ENGINE); unset it for duckdb")
        if engine == "spark" and not self.spark_warehouse_uri.strip():
            raise ConfigurationError("ModelEngineResource.spark_warehouse_uri is empty: set "
                                     "RANK_PIPELINE_SPARK_WAREHOUSE_URI (where Spark writes the model tables)")
        return EngineSettings(engine=engine, spark_master=self.spark_master.strip() or "local[2]",
                              spark_warehouse_uri=self.spark_warehouse_uri.strip())

    def describe(self) -> str:
        """One log line: the engine, and on Spark the master and the warehouse URI."""
        if not self.uses_spark:
            return "model engine: duckdb (the warehouse's build file)"
        settings = self.settings()
        return (f"model engine: spark on {settings.spark_master}, seeds and models as Parquet tables under "
                f"{settings.spark_warehouse_uri}")

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator["ModelEngineResource"]:
        settings = self.settings()  # a bad setting fails the run before any step, in one line
        if settings.engine != "spark":
            yield self
            return
        # the session starts at the first use (a run that builds no model, or Dagster re-initializing the
        # resources after a run to read its outputs, starts no JVM) and stops when the run's steps end
        self._log = context.log.info if context.log is not None else None
        self._stack, self._spark, self._raw_loaded, self._attached = ExitStack(), None, False, False
        try:
            yield self
        finally:
            stack, self._stack, self._spark = self._stack, None, None
            stack.close()

    def _engine(self):
        if self._stack is None:
            raise RuntimeError("ModelEngineResource.spark() needs engine=spark and an open run "
                               "(the session is scoped by yield_for_execution)")
        if self._spark is None:
            if self._log is not None:
                self._log(f"{self.describe()}: starting one Spark session for this run")
            self._spark = self._stack.enter_context(open_spark_engine(self.settings()))
        return self._spark

    def spark(self, snapshots_uri: Path | str, project=None):
        """The run's :class:`rank_pipeline.models.spark_engine.SparkEngine`, ready to build (the
        session starts at the first call of the run).

        The first call in a run registers ``raw.<resource>`` over the committed snapshots under
        ``snapshots_uri`` (:meth:`load_raw`), and, given the ``project``, registers the seeds and models
        earlier runs wrote under the warehouse URI (so a run that builds one model finds its parents).

        Raises:
            RuntimeError: the engine is not ``spark``, called outside a run, or pyspark/Java missing.
        """
        engine = self._engine()
        if not self._raw_loaded:
            self.load_raw(snapshots_uri)
        if project is not None and not self._attached:
            engine.attach_existing(project)
            self._attached = True
        return engine

    def load_raw(self, snapshots_uri: Path | str) -> dict[str, int]:
        """(Re-)register ``raw.<resource>`` over every committed snapshot under ``snapshots_uri`` in the
        run's session (:meth:`rank_pipeline.models.spark_engine.SparkEngine.load_raw`); returns
        ``{resource: Parquet files}``."""
        files = self._engine().load_raw(snapshots_uri)
        self._raw_loaded = True
        return files


def model_engine_from_env(settings: Settings | None = None, env=None) -> ModelEngineResource:
    """The model-engine resource described by the environment (:meth:`EngineSettings.from_env`).

    Raises:
        ConfigurationError: ``RANK_PIPELINE_ENGINE`` is not ``duckdb`` or ``spark``.
    """
    engine = (settings or Settings.from_env(env)).engine
    return ModelEngineResource(engine=engine.engine, spark_master=engine.spark_master,
                               spark_warehouse_uri=engine.spark_warehouse_uri)
