"""The pipeline as one Dagster component (:class:`RankPipelineComponent`) and the ``Definitions`` it builds
(:func:`build_definitions`).

A Dagster project adds the pipeline with a ``defs.yaml`` (``dg scaffold defs
rank_pipeline.defs.component.RankPipelineComponent rank``, or by hand)::

    type: rank_pipeline.defs.component.RankPipelineComponent
    attributes:
      data_dir: data                  # relative to the project's root
      engine: duckdb                  # or spark
      accounts:                       # omitted: the environment's (RANK_TRACKER_ACCOUNTS), or the sandbox
        - {name: acme, api_key_env: ACME_RANK_KEY}
      base_url: https://api.example.com   # omitted: RANK_TRACKER_BASE_URL, else the embedded sandbox
      schedule: {cron: "15 6 * * *", timezone: UTC}
      partition_start: "2026-03-01"   # the first daily partition; omitted: the first snapshot day
      alerts: {urls_env: OPS_ALERT_URLS}

Secrets are given only as the names of the environment variables that hold them: an attribute that is
not such a name fails ``dg check defs`` naming the attribute. Settings the component does not name come
from the environment as for the standalone code location (:mod:`rank_pipeline.settings`), which is this
component with no attributes (:mod:`rank_pipeline.defs.definitions`).

Assets (all daily-partitioned, UTC, from ``partition_start``; ``RANK_PIPELINE_PARTITION_START`` overrides
it; both unset, the first committed snapshot day of the data folder, else the project's ``init`` day, else
today: :func:`rank_pipeline.snapshots.partition_start.partition_start`):

- ``snapshots/<endpoint>``: the day's Parquet snapshots (one extraction step for all endpoints);
- ``raw/<endpoint>``: the raw DuckDB tables;
- ``raw/keywords_file``: the keywords file (``RANK_PIPELINE_KEYWORDS_FILE``) planned against the day's
  snapshot, with the asset check ``matches_tracked_keywords`` when the file is set;
- ``seeds/*``, ``staging/*``, ``marts/*``: the SQL models of ``dbt_like_sql/``, each test an asset check;
- ``ops/run_history``: the warehouse's record of its own runs (``ops.run_history``, kept across rebuilds);
- ``warehouse/published``: the file analysts open.

Every mart and ``warehouse/published`` carries a freshness policy (``RANK_PIPELINE_FRESHNESS_HOURS``,
:mod:`rank_pipeline.defs.freshness`); the alert sensors ``alerts_on_run_success``,
``alerts_on_run_failure`` and ``alerts_on_stale_assets`` send digests to ``RANK_PIPELINE_ALERT_URLS``
(:mod:`rank_pipeline.defs.sensors`).

The schedule ``daily_rank_pipeline_schedule`` is on (cron and time zone are settings,
:func:`rank_pipeline.defs.jobs.build_daily_schedule`); the sensor ``fail_dead_runs_sensor`` marks killed
runs failed (:mod:`rank_pipeline.defs.run_monitoring`). Schedule and sensors need ``dagster-daemon``.

With ``RANK_PIPELINE_SHARDS=n`` the ``snapshots/*`` assets are partitioned by day x shard and
extracted by the job ``extract_shards`` (one run per shard, in parallel), and the sensor
``daily_run_when_shards_committed`` requests the daily job (everything else) for a day once all its
shards have committed (:mod:`rank_pipeline.defs.shard_runs`).

The source is the embedded sandbox unless ``RANK_TRACKER_BASE_URL`` and a key are set
(:mod:`rank_pipeline.settings`). The ``model_engine`` resource says which engine builds the seeds and
models: DuckDB, or Spark with ``RANK_PIPELINE_ENGINE=spark`` (its master and warehouse URI are resource
settings too, shown in the UI; :class:`rank_pipeline.defs.resources.ModelEngineResource`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import date
from pathlib import Path

import dagster as dg
from pydantic import Field, field_validator

from rank_pipeline.defs.extract_assets import build_extract_snapshots
from rank_pipeline.defs.freshness import is_watched, with_freshness_policies
from rank_pipeline.defs.jobs import (
    build_daily_job,
    build_daily_schedule,
    daily_job,
    rebuild_full_refresh_job,
    rebuild_job,
)
from rank_pipeline.defs.keywords_assets import build_keywords_file_asset
from rank_pipeline.defs.model_assets import build_model_assets
from rank_pipeline.defs.partitions import daily_partitions_from
from rank_pipeline.defs.resources import model_engine_from_env, source_from_env, warehouse_from_env
from rank_pipeline.defs.run_history_asset import build_run_history_asset
from rank_pipeline.defs.run_monitoring import fail_dead_runs_sensor
from rank_pipeline.defs.sensors import build_alert_sensors
from rank_pipeline.defs.shard_runs import build_shard_job, build_shards_committed_sensor, check_partitioning
from rank_pipeline.defs.warehouse_assets import RAW_KEYS, build_load_raw_tables, build_publish_asset
from rank_pipeline.settings import (
    BASE_URL_ENV,
    ENGINE_ENV,
    ENGINES,
    AccountConfig,
    ConfigurationError,
    Settings,
    UserProject,
    find_project,
    models_dir,
    named_variable,
    normalise_base_url,
)
from rank_pipeline.snapshots.partition_start import partition_start

__all__ = ["RankPipelineComponent", "build_definitions"]

VARIABLE_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""An environment variable's name, the only form a secret takes in ``defs.yaml``."""
_VARIABLE_NAME = re.compile(VARIABLE_NAME)
_ACCOUNT_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _variable_name(value: str, attribute: str) -> str:
    """``value`` if it is an environment variable's name; else ConfigurationError naming ``attribute``, never
    repeating ``value`` (it may be a key written in clear, so it is checked here rather than by the schema,
    whose errors quote the input)."""
    if not _VARIABLE_NAME.match(value):
        raise ConfigurationError(f"defs.yaml attribute {attribute} is not an environment variable's name: give "
                                 "the name of the variable that holds the secret (letters, digits and _), "
                                 "never the secret itself")
    return value


class Account(dg.Model):
    """One account: its name (in snapshots and the warehouse) and the variable holding its key(s)."""

    name: str = Field(description="the account's name: letters, digits, _ and -")
    api_key_env: str = Field(description="the environment variable holding the account's key (or keys, "
                                         "comma-separated); never the key itself")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _ACCOUNT_NAME.match(value):
            raise ValueError(f"accounts: name {value!r} is not 1 to 64 letters, digits, _ and -")
        return value


class Schedule(dg.Model):
    """When the daily job runs (``RANK_PIPELINE_SCHEDULE_CRON`` and ``_TIMEZONE`` otherwise)."""

    cron: str = Field("15 6 * * *", description="5-field cron expression")
    timezone: str = Field("UTC", description="IANA time zone name")


class Alerts(dg.Model):
    """Where alerts go: the variable holding the comma-separated Apprise URLs (they carry tokens)."""

    urls_env: str = Field(description="the environment variable holding the Apprise URLs; never the URLs")


class RankPipelineComponent(dg.Component, dg.Model, dg.Resolvable):
    """The rank pipeline (extract, load, models, checks, publish; its jobs, schedule and sensors) as one
    Dagster component. Every attribute is optional; one left out is read from the environment as the
    standalone code location reads it (docs/reference/settings.md). Paths are relative to the project's
    root. Secrets are named by their environment variable, never written here."""

    accounts: list[Account] | None = Field(None, description="the accounts to extract; omitted: "
                                           "RANK_TRACKER_ACCOUNTS, else one account 'default'")
    base_url: str | None = Field(None, description="the vendor's base URL; omitted: RANK_TRACKER_BASE_URL, "
                                 "else the embedded sandbox")
    data_dir: str | None = Field(None, description="the data folder; omitted: RANK_PIPELINE_DATA_DIR, "
                                 "else data")
    models_dir: str | None = Field(None, description="your models folder, laid over the package's models; "
                                   "omitted: the project's [tool.rank_pipeline] models_dir, else the package's")
    keywords_file: str | None = Field(None, description="a keywords file; omitted: RANK_PIPELINE_KEYWORDS_FILE")
    engine: str | None = Field(None, description="the model engine, duckdb or spark; omitted: "
                               "RANK_PIPELINE_ENGINE, else duckdb")
    schedule: Schedule | None = Field(None, description="the daily schedule")
    partition_start: str | None = Field(None, description="the first daily partition, YYYY-MM-DD (UTC); "
                                         "RANK_PIPELINE_PARTITION_START overrides it; omitted: the data "
                                         "folder's first snapshot day, else the project's init day, else today. "
                                         "A day after the first snapshot day is refused")
    alerts: Alerts | None = Field(None, description="where alerts go")

    @field_validator("engine")
    @classmethod
    def _engine(cls, value: str | None) -> str | None:
        if value is not None and value not in ENGINES:
            raise ValueError(f"engine {value!r} is not one of {', '.join(ENGINES)}")
        return value

    @field_validator("partition_start", mode="before")
    @classmethod
    def _partition_start(cls, value: object) -> str | None:
        """A date written bare in YAML (``2026-03-01``) or quoted; refused at its line otherwise."""
        if value is None:
            return None
        try:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(value)):
                raise ValueError(value)
            return date.fromisoformat(str(value)).isoformat()
        except ValueError:
            raise ValueError(f"partition_start {value!r} is not a date: write it as YYYY-MM-DD, e.g. "
                             "2026-03-01 (the first daily partition, UTC)") from None

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        """The pipeline's definitions for these attributes, paths under ``context.project_root``."""
        return build_definitions(self.settings(context.project_root), find_project(context.project_root))

    def settings(self, project_root: Path | None, env: Mapping[str, str] | None = None) -> Settings:
        """:meth:`Settings.from_env` of ``env`` (default ``os.environ``) with these attributes in place of
        their variables; relative paths under ``project_root``. With ``project_root`` None (the standalone
        code location) paths are relative to the working folder and the models folder is read at use.

        Raises:
            ConfigurationError: as :meth:`Settings.from_env`; a secret's attribute that is not a variable's
                name; an account's key variable unset while a base URL is configured.
        """
        for i, account in enumerate(self.accounts or ()):
            _variable_name(account.api_key_env, f"accounts[{i}].api_key_env")
        if self.alerts is not None:
            _variable_name(self.alerts.urls_env, "alerts.urls_env")
        env = dict(os.environ if env is None else env)
        root = project_root or Path.cwd()
        given: dict[str, str] = {}
        if self.data_dir is not None:
            given["RANK_PIPELINE_DATA_DIR"] = str(root / self.data_dir)
        if self.keywords_file is not None:
            given["RANK_PIPELINE_KEYWORDS_FILE"] = str(root / self.keywords_file)
        if self.engine is not None:
            given[ENGINE_ENV] = self.engine
        if self.schedule is not None:
            given |= {"RANK_PIPELINE_SCHEDULE_CRON": self.schedule.cron,
                      "RANK_PIPELINE_SCHEDULE_TIMEZONE": self.schedule.timezone}
        if self.alerts is not None:
            given["RANK_PIPELINE_ALERT_URLS"] = named_variable(self.alerts.urls_env, env)
        if self.base_url is not None:
            given[BASE_URL_ENV] = self.base_url
        if self.accounts is None:
            settings = Settings.from_env(env | given)
        else:  # the key variables are the component's; their presence is checked here
            settings = Settings.from_env({k: v for k, v in (env | given).items() if k != BASE_URL_ENV})
            base_url = normalise_base_url((env | given).get(BASE_URL_ENV))
            missing = [a.api_key_env for a in self.accounts if not named_variable(a.api_key_env, env)]
            if base_url is not None and missing:
                raise ConfigurationError(f"the vendor's base URL is set but {', '.join(missing)} is not: export "
                                         "each account's key in the variable its api_key_env names")
            settings = replace(settings, base_url=base_url,
                               accounts=tuple(AccountConfig(a.name, a.api_key_env) for a in self.accounts))
        if self.partition_start is not None and settings.ops.partition_start is None:  # the environment overrides it
            settings = replace(settings, ops=replace(settings.ops, partition_start=date.fromisoformat(
                self.partition_start), partition_start_from="defs.yaml partition_start"))
        if project_root is None:
            return settings
        return replace(settings, models_dir=self._models_folder(project_root, env))

    def _models_folder(self, project_root: Path, env: Mapping[str, str]) -> Path:
        """The models folder the definitions read: this component's ``models_dir`` over the package's, else
        the project's own (``[tool.rank_pipeline]``), else :func:`models_dir` (the environment's or the
        package's)."""
        if self.models_dir is not None:
            return UserProject(project_root, (project_root / self.models_dir).resolve()).composed()
        project = find_project(project_root)
        return project.composed() if project is not None else models_dir(env, start=project_root)


def build_definitions(settings: Settings, project: UserProject | None = None) -> dg.Definitions:
    """The definitions for ``settings`` (:meth:`Settings.from_env` for ``defs``): unsharded, or with
    ``settings.shards`` (``RANK_PIPELINE_SHARDS``) the extraction as day x shard partitions
    (:mod:`rank_pipeline.defs.shard_runs`); daily partitions from
    :func:`~rank_pipeline.snapshots.partition_start.partition_start` (``project``: the user's project, whose
    ``init`` day is the start of a data folder without snapshots). Everything the definitions need comes
    from ``settings``: the environment is read once, by :meth:`Settings.from_env`, for ``defs``.

    Raises:
        ConfigurationError: a partition start after the data folder's first snapshot day, or a changed
            shard count.
    """
    shards, engine = settings.shards, settings.engine.engine
    check_partitioning(settings.data_dir, shards)  # a changed shard count is refused before anything loads
    days = daily_partitions_from(partition_start(settings, project).day)
    project_dir = settings.models_dir  # None: models_dir() where it is used
    model_assets, model_keys = build_model_assets(project_dir, engine=engine, days=days)
    assets = with_freshness_policies([
        build_extract_snapshots(shards, days),
        build_load_raw_tables(engine=engine, shards=shards, project_dir=project_dir, days=days),
        build_keywords_file_asset(settings.keywords_file, shards, engine=engine, days=days),
        *model_assets, build_run_history_asset(model_keys, list(RAW_KEYS.values()), project_dir, days),
        build_publish_asset(model_keys, engine=engine, dashboard_url=settings.dashboard_url, days=days),
    ], settings.ops.freshness_hours)
    watched = [key for a in assets for key in a.keys if is_watched(key)]
    daily = daily_job if shards is None else build_daily_job(shards)
    jobs = [daily, rebuild_job, rebuild_full_refresh_job]
    sensors = [*build_alert_sensors(watched, settings), fail_dead_runs_sensor]
    shard_job = None
    if shards is not None:
        shard_job = build_shard_job(shards)
        jobs.append(shard_job)
        sensors.append(build_shards_committed_sensor(shards, daily))
    return dg.Definitions(
        assets=assets,
        jobs=jobs,
        schedules=[build_daily_schedule(settings.ops, shards, shard_job, days)],
        sensors=sensors,
        resources={"source": source_from_env(settings), "warehouse": warehouse_from_env(settings),
                   "model_engine": model_engine_from_env(settings)},
    )
