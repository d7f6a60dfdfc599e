"""The one Dagster ``Definitions`` object, loaded by ``workspace.yaml`` (``dagster dev -w workspace.yaml``).

Assets (all daily-partitioned, UTC):

- ``snapshots/<resource>``: the day's Parquet snapshots (one extraction step for all resources);
- ``raw/<resource>``: the raw DuckDB tables;
- ``seeds/*``, ``staging/*``, ``marts/*``: the SQL models of ``dbt_like_sql/``, each test an asset check;
- ``warehouse/published``: the file analysts open.

The schedule ``daily_rank_pipeline_schedule`` is on (cron and time zone are settings,
:func:`rank_pipeline.defs.jobs.build_daily_schedule`); the sensor ``fail_dead_runs_sensor`` marks killed
runs failed (:mod:`rank_pipeline.defs.run_monitoring`). Both need ``dagster-daemon``.

The source is the embedded sandbox unless ``RANK_TRACKER_BASE_URL`` and a key are set
(:mod:`rank_pipeline.settings`). The ``model_engine`` resource says which engine builds the seeds and
models: DuckDB, or Spark with ``RANK_PIPELINE_ENGINE=spark`` (its master and warehouse URI are resource
settings too, shown in the UI; :class:`rank_pipeline.defs.resources.ModelEngineResource`).
"""

import dagster as dg

from rank_pipeline.defs.extract_assets import extract_snapshots
from rank_pipeline.defs.jobs import daily_job, daily_schedule, rebuild_full_refresh_job, rebuild_job
from rank_pipeline.defs.model_assets import build_model_assets
from rank_pipeline.defs.resources import model_engine_from_env, source_from_env, warehouse_from_env
from rank_pipeline.defs.run_monitoring import fail_dead_runs_sensor
from rank_pipeline.defs.warehouse_assets import build_publish_asset, load_raw_tables

_model_assets, _model_keys = build_model_assets()

defs = dg.Definitions(
    assets=[extract_snapshots, load_raw_tables, *_model_assets, build_publish_asset(_model_keys)],
    jobs=[daily_job, rebuild_job, rebuild_full_refresh_job],
    schedules=[daily_schedule],
    sensors=[fail_dead_runs_sensor],
    resources={"source": source_from_env(), "warehouse": warehouse_from_env(), "model_engine": model_engine_from_env()},
)
