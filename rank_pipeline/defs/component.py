"""The pipeline as one Dagster component (:class:`RankPipelineComponent`, attributes in ``defs.yaml`` with the
schema :class:`rank_pipeline.settings.ComponentAttributes`) and the ``Definitions`` it builds
(:func:`build_definitions`): the daily-partitioned assets ``snapshots/*``, ``raw/*``, the models,
``ops/run_history`` and ``warehouse/published``, their checks, schedule and sensors.

Secrets are given as variable names; the environment overrides each attribute. Assets and an example
``defs.yaml``: docs/concepts/dagster.md, "The component"; docs/how-to/existing-dagster-project.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

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
from rank_pipeline.defs.partitions import daily_partitions_from
from rank_pipeline.defs.resources import model_engine_from_env, source_from_env, warehouse_from_env
from rank_pipeline.defs.run_history_asset import build_run_history_asset
from rank_pipeline.defs.run_monitoring import fail_dead_runs_sensor
from rank_pipeline.defs.sensors import build_alert_sensors
from rank_pipeline.defs.shard_runs import build_shard_job, build_shards_committed_sensor, check_partitioning
from rank_pipeline.defs.warehouse_assets import RAW_KEYS, build_load_raw_tables, build_publish_asset
from rank_pipeline.errors import RankPipelineError
from rank_pipeline.folder_lock import remove_stale_composed
from rank_pipeline.settings import (
    ComponentAttributes,
    Settings,
    UserProject,
    component_settings_from_env,
    defs_yaml_text,
    find_component_file,
    find_project,
    source_paths,
)
from rank_pipeline.settings.component_file import Account, Alerts, Schedule
from rank_pipeline.snapshots.partition_start import partition_start

__all__ = ["Account", "Alerts", "RankPipelineComponent", "RankPipelineScaffolder", "Schedule", "build_definitions",
           "working_folder_definitions"]


class RankPipelineScaffolder(dg.Scaffolder):
    """``dg scaffold defs rank_pipeline.defs.component.RankPipelineComponent NAME``: the ``defs.yaml``
    ``rank-pipeline init`` writes, the documented attributes with the optional ones as comments
    (:func:`rank_pipeline.settings.defs_yaml_text`); ``--format python`` as Dagster's default scaffolder."""

    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        from datetime import UTC, datetime

        from dagster.components.component_scaffolding import scaffold_component

        if request.scaffold_format != "yaml":
            scaffold_component(request, {})
            return
        text = defs_yaml_text(datetime.now(UTC).date())
        if request.append:
            with request.target_path.open("a") as f:
                f.write("---\n" + text)
        else:
            request.target_path.mkdir(parents=True, exist_ok=True)
            (request.target_path / "defs.yaml").write_text(text)


@dg.scaffold_with(RankPipelineScaffolder)
class RankPipelineComponent(dg.Component, ComponentAttributes, dg.Resolvable):
    """The rank pipeline (extract, load, models, checks, publish; its jobs, schedule and sensors) as one
    Dagster component. Every attribute is optional (:class:`rank_pipeline.settings.ComponentAttributes`); the
    environment overrides each, and one left out and not in the environment takes its default
    (docs/reference/settings.md). Paths are relative to the project's root. Secrets are named by their
    environment variable, never written here."""

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        """The pipeline's definitions for these attributes, paths under ``context.project_root``. An error names
        the user's files, never the composed copy of the models (:func:`rank_pipeline.settings.source_paths`)."""
        try:
            return build_definitions(self.settings(context.project_root), find_project(context.project_root))
        except RankPipelineError as exc:
            exc.args = tuple(source_paths(a) if isinstance(a, str) else a for a in exc.args)
            raise

    def settings(self, project_root: Path | None, env: Mapping[str, str] | None = None) -> Settings:
        """These attributes as settings, the environment ``env`` (default ``os.environ``) overriding each
        (:func:`rank_pipeline.settings.component_settings_from_env`); relative paths under ``project_root``.

        Raises:
            ConfigurationError: as :func:`~rank_pipeline.settings.component_settings_from_env`.
        """
        return component_settings_from_env(self, project_root, env)


def working_folder_definitions() -> dg.Definitions:
    """The definitions the command line runs and the standalone code location loads: inside a project (the
    working folder's), its component with the attributes of its ``defs.yaml``, as ``dg`` loads it; elsewhere
    the component with no attributes, every setting from the environment (the models folder read at use).

    Raises:
        ConfigurationError: an attribute refused at its line of ``defs.yaml``, or as :meth:`RankPipelineComponent.settings`.
    """
    found = find_component_file()
    if found is None:
        return build_definitions(RankPipelineComponent().settings(None), find_project())
    return build_definitions(component_settings_from_env(found.attributes, found.root), find_project(found.root))


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
    if settings.models_dir is not None:  # a project's composed models: the ones unused for a day go
        remove_stale_composed(settings.models_dir)
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
