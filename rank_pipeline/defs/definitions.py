"""The one Dagster ``Definitions`` object, loaded by ``workspace.yaml`` (``dagster dev -w workspace.yaml``).

Assets (all daily-partitioned, UTC):

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

import dagster as dg

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
from rank_pipeline.defs.resources import model_engine_from_env, source_from_env, warehouse_from_env
from rank_pipeline.defs.run_history_asset import build_run_history_asset
from rank_pipeline.defs.run_monitoring import fail_dead_runs_sensor
from rank_pipeline.defs.sensors import build_alert_sensors
from rank_pipeline.defs.shard_runs import build_shard_job, build_shards_committed_sensor, check_partitioning
from rank_pipeline.defs.warehouse_assets import RAW_KEYS, build_load_raw_tables, build_publish_asset
from rank_pipeline.settings import Settings


def build_definitions(settings: Settings) -> dg.Definitions:
    """The definitions for ``settings`` (:meth:`Settings.from_env` for ``defs``): unsharded, or with
    ``settings.shards`` (``RANK_PIPELINE_SHARDS``) the extraction as day x shard partitions
    (:mod:`rank_pipeline.defs.shard_runs`). Everything the definitions need comes from ``settings``: the
    environment is read once, by :meth:`Settings.from_env`, for ``defs``."""
    shards, engine = settings.shards, settings.engine.engine
    check_partitioning(settings.data_dir, shards)  # a changed shard count is refused before anything loads
    model_assets, model_keys = build_model_assets(engine=engine)
    assets = with_freshness_policies([
        build_extract_snapshots(shards), build_load_raw_tables(engine=engine, shards=shards),
        build_keywords_file_asset(settings.keywords_file, shards, engine=engine),
        *model_assets, build_run_history_asset(model_keys, list(RAW_KEYS.values())),
        build_publish_asset(model_keys, engine=engine, dashboard_url=settings.dashboard_url),
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
        schedules=[build_daily_schedule(settings.ops, shards, shard_job)],
        sensors=sensors,
        resources={"source": source_from_env(settings), "warehouse": warehouse_from_env(settings),
                   "model_engine": model_engine_from_env(settings)},
    )


defs = build_definitions(Settings.from_env())
