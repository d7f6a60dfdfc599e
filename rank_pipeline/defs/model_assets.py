"""SQL models as Dagster assets: one asset per seed and model of ``dbt_like_sql/``, one asset check per test.

Each asset builds its model for the run's partitions through the run's model engine
(:func:`rank_pipeline.steps.models.build_relation`) and reports its tests as checks (:func:`check_results`);
``BackfillPolicy.single_run()``; run tag :data:`FULL_REFRESH_TAG` rebuilds from scratch. Details:
docs/concepts/dagster.md, "SQL models as assets".
"""


from collections.abc import Iterable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import dagster as dg

from rank_pipeline.defs.partitions import daily_partitions, deliberate_beta
from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource
from rank_pipeline.defs.table_metadata import (
    CODE_REFERENCES,
    COLUMN_LINEAGE,
    COLUMN_SCHEMA,
    ROW_COUNT,
    TABLE_NAME,
    code_reference,
    column_lineage,
    column_schema,
    engine_in_use,
    relation_key,
    table_name,
)
from rank_pipeline.settings import DataPaths, models_dir, source_file
from rank_pipeline.settings.engine import ENGINES
from rank_pipeline.steps.models import build_relation
from rank_pipeline.transform import Model, Project, Seed, loaded_project
from rank_pipeline.transform.lineage import project_lineage
from rank_pipeline.transform.primitives import ModelEngine
from rank_pipeline.transform.testing import TestResult

FULL_REFRESH_TAG = "rank_pipeline/full_refresh"
"""Run tag: ``true`` reloads every raw table from all committed snapshots and builds every model from
scratch, whatever the run's partitions (the job ``rebuild_full_refresh`` sets it; or add it in the
launchpad)."""


def full_refresh(context: dg.AssetExecutionContext) -> bool:
    """The run carries :data:`FULL_REFRESH_TAG` = ``true``."""
    return context.run.tags.get(FULL_REFRESH_TAG, "").lower() == "true"


def partition_days(context: dg.AssetExecutionContext) -> tuple[date, date]:
    """The first and last day of the run's partition key range (one day for a daily run)."""
    keys = context.partition_key_range
    return date.fromisoformat(keys.start), date.fromisoformat(keys.end)


def table_metadata(relation: Model | Seed, project: Project, warehouse: WarehouseResource,
                   engine: ModelEngine) -> dict:
    """Materialization metadata of a seed or model (:mod:`rank_pipeline.defs.table_metadata`): table name,
    column schema typed by the engine, row count of the whole table, and a model's column lineage."""
    qualified = relation.qualified_name
    meta = {TABLE_NAME: table_name(qualified, engine.catalog),
            COLUMN_SCHEMA: column_schema(relation, engine.column_types(qualified)),
            ROW_COUNT: engine.row_count(qualified)}
    if isinstance(relation, Model):
        lineage = column_lineage(project_lineage(project, DataPaths(Path(warehouse.data_dir)).cache_dir),
                                 relation.qualified_name)
        if lineage is not None:
            meta[COLUMN_LINEAGE] = lineage
    return meta


def _definition_metadata(relation: Model | Seed, engine: str) -> dict:
    """Table name, column schema and the code reference of the file the user edits ("Open in editor"): in a
    project, its own file in ``models/`` (or the package's it reads), never the composed copy the pipeline
    reads (:func:`rank_pipeline.settings.source_file`)."""
    return {TABLE_NAME: table_name(relation.qualified_name, ENGINES[engine].catalog), COLUMN_SCHEMA: column_schema(relation),
            CODE_REFERENCES: code_reference(source_file(relation.path))}


def _check_specs(relation: Model | Seed, key: dg.AssetKey) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(test.name, asset=key, blocking=test.blocking, description=test.describe(),
                          additional_deps=[relation_key(d) for d in sorted(test.depends_on)])
        for test in relation.tests
    ]


def _scope_label(first: date | None, last: date | None) -> str:
    """The days a check's result covers: ``2026-11-21``, ``2026-11-01..2026-11-21`` or ``all``."""
    if first is None:
        return "all"
    return first.isoformat() if last in (None, first) else f"{first}..{last}"


def check_results(key: dg.AssetKey, results: Iterable[TestResult], first: date | None = None,
                  last: date | None = None) -> Iterator[dg.AssetCheckResult]:
    """One asset check result per test result, whichever engine ran the tests: ``passed``, severity
    ERROR for a blocking test (WARN otherwise), metadata ``partition`` (the days covered, ``all`` when
    ``first`` is None), ``failing_rows``, ``sample`` (at most 5 failing rows, JSON) and ``sql``."""
    for result in results:
        yield dg.AssetCheckResult(
            asset_key=key,
            check_name=result.name,
            passed=result.passed,
            severity=dg.AssetCheckSeverity.ERROR if result.blocking else dg.AssetCheckSeverity.WARN,
            metadata={"partition": _scope_label(first, last), "failing_rows": result.failures,
                      "sample": dg.MetadataValue.json(result.sample_rows[:5]),  # JSON-safe (dates as text)
                      "sql": dg.MetadataValue.md(f"```sql\n{result.sql}\n```")},
        )


def _build(context: dg.AssetExecutionContext, key: dg.AssetKey, relation: Model | Seed, project: Project,
           model_engine: ModelEngineResource, warehouse: WarehouseResource):
    """A seed or model asset's body: build it for the run's days on the run's engine
    (:func:`rank_pipeline.steps.models.build_relation`), report it, then its tests as asset checks."""
    first, last = partition_days(context)
    engine = model_engine.open(warehouse)
    done = build_relation(engine, project, relation, first, last, full_refresh=full_refresh(context),
                          snapshots_uri=warehouse.snapshot_store_uri, progress=context.log.info)
    built = done.built
    steps = f", {built.steps} steps of days" if built.steps > 1 else ""
    context.log.info(f"{engine.name}: built {relation.qualified_name} ({built.mode}{steps}, {built.rows} rows)")
    # a view's rows are None, which IntMetadataValue holds (MetadataValue.int's annotation says int)
    meta: dict[str, Any] = {
        "rows": dg.IntMetadataValue(built.rows), "seconds": round(built.seconds, 3), "engine": engine.name,
        "mode": built.mode, "location": dg.MetadataValue.path(engine.location(relation.schema, relation.name))}
    if isinstance(relation, Model):
        meta["materialized"] = relation.materialized
    if built.partition_date is not None:
        meta["rebuilt_days"] = f"{built.partition_date} .. {built.until}"
    if built.steps > 1:
        meta["build_steps"] = built.steps
    meta.update(table_metadata(relation, project, warehouse, engine))
    yield dg.MaterializeResult(asset_key=key, metadata=meta)
    yield from check_results(key, done.tests, done.first, done.last)


@deliberate_beta
def _seed_asset(seed: Seed, project: Project, engine: str, days: dg.DailyPartitionsDefinition) -> dg.AssetsDefinition:
    key = relation_key(seed.qualified_name)

    @dg.asset(key=key, partitions_def=days, group_name="seeds",
              kinds={engine, "csv"}, description=seed.description or None,
              check_specs=_check_specs(seed, key), backfill_policy=dg.BackfillPolicy.single_run(),
              metadata={"version": seed.version or "", "checksum": seed.checksum,
                        **_definition_metadata(seed, engine)})
    def _seed(context: dg.AssetExecutionContext, warehouse: WarehouseResource, model_engine: ModelEngineResource):
        yield from _build(context, key, seed, project, model_engine, warehouse)

    return _seed


@deliberate_beta
def _model_asset(model: Model, project: Project, engine: str, days: dg.DailyPartitionsDefinition
                 ) -> dg.AssetsDefinition:
    key = relation_key(model.qualified_name)
    check_specs = _check_specs(model, key)

    # a relationships test reads its target: build that first too
    deps = set(model.depends_on).union(*(t.depends_on for t in model.tests)) - {model.qualified_name}

    @dg.asset(key=key, deps=[relation_key(d) for d in sorted(deps)], partitions_def=days,
              group_name=model.schema, kinds={engine, "sql"}, check_specs=check_specs,
              description=model.description or None, backfill_policy=dg.BackfillPolicy.single_run(),
              metadata={"materialized": model.materialized,
                        "sql_path": dg.MetadataValue.path(str(source_file(model.path))),
                        **_definition_metadata(model, engine)})
    def _model(context: dg.AssetExecutionContext, warehouse: WarehouseResource, model_engine: ModelEngineResource):
        yield from _build(context, key, model, project, model_engine, warehouse)

    return _model


def build_model_assets(project_dir: Path | None = None, engine: str | None = None,
                       days: dg.DailyPartitionsDefinition = daily_partitions
                       ) -> tuple[list[dg.AssetsDefinition], list[dg.AssetKey]]:
    """Every seed and model asset of the project, and the keys of the models (for the publish asset).

    ``project_dir`` defaults to :func:`rank_pipeline.settings.models_dir`; ``engine`` (``duckdb`` or ``spark``:
    asset kinds and table names) to :func:`rank_pipeline.defs.table_metadata.engine_in_use`; ``days`` partitions.

    Raises:
        rank_pipeline.transform.ProjectError: a cycle, a missing reference or a malformed ``.yml``.
    """
    project = loaded_project(project_dir if project_dir is not None else models_dir())
    engine = engine or engine_in_use()
    assets = [_seed_asset(seed, project, engine, days) for seed in project.seeds.values()]
    models = project.topological_order()
    assets += [_model_asset(model, project, engine, days) for model in models]
    return assets, [relation_key(f"{m.schema}.{m.name}") for m in models]
