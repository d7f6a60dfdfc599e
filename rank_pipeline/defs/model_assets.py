"""SQL models as Dagster assets: one asset per seed and model of ``dbt_like_sql/``, one asset check per test.

The project is loaded (and its dependency graph checked: a cycle or a reference to a missing model is
an error here) when the definitions load. Each model asset builds its model for the partition (views
and tables rebuild, incremental models replace the partition's rows) and then runs the tests from the
model's ``.yml``, reporting each as an asset check; checks marked blocking stop downstream models and
the publication of the warehouse when they fail.
"""


from datetime import date
from pathlib import Path

import dagster as dg

from rank_pipeline.defs.partitions import daily_partitions
from rank_pipeline.defs.resources import WarehouseResource
from rank_pipeline.settings import models_dir
from rank_pipeline.sql_models import Model, Seed, build, build_seed, load_project, run_tests


def relation_key(qualified: str) -> dg.AssetKey:
    """``"staging.stg_keywords"`` -> ``AssetKey(["staging", "stg_keywords"])`` (raw and seeds alike)."""
    schema, name = qualified.split(".", 1)
    return dg.AssetKey([schema, name])


def _check_specs(relation: Model | Seed, key: dg.AssetKey) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(test.name, asset=key, blocking=test.blocking, description=test.describe(),
                          additional_deps=[relation_key(d) for d in sorted(test.depends_on)])
        for test in relation.tests
    ]


def _results(key: dg.AssetKey, relation: Model | Seed, con, day: date):
    for result in run_tests(con, relation, partition_date=day):
        yield dg.AssetCheckResult(
            asset_key=key,
            check_name=result.name,
            passed=result.passed,
            severity=dg.AssetCheckSeverity.ERROR if result.blocking else dg.AssetCheckSeverity.WARN,
            metadata={"partition": day.isoformat(), "failing_rows": result.failures,
                      "sample": dg.MetadataValue.json(result.sample_rows[:5]),
                      "sql": dg.MetadataValue.md(f"```sql\n{result.sql}\n```")},
        )


def _seed_asset(seed: Seed) -> dg.AssetsDefinition:
    key = relation_key(seed.qualified_name)

    @dg.asset(key=key, partitions_def=daily_partitions, group_name="seeds",
              kinds={"duckdb", "csv"}, description=seed.description or None,
              check_specs=_check_specs(seed, key),
              metadata={"version": seed.version or "", "checksum": seed.checksum})
    def _seed(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
        day = date.fromisoformat(context.partition_key)
        with warehouse.warehouse().connect() as con:
            built = build_seed(con, seed)
            yield dg.MaterializeResult(asset_key=key, metadata={"rows": dg.MetadataValue.int(built.rows)})
            yield from _results(key, seed, con, day)

    return _seed


def _model_asset(model: Model) -> dg.AssetsDefinition:
    key = relation_key(model.qualified_name)
    check_specs = _check_specs(model, key)

    # a relationships test reads its target: build that first too
    deps = set(model.depends_on).union(*(t.depends_on for t in model.tests)) - {model.qualified_name}

    @dg.asset(key=key, deps=[relation_key(d) for d in sorted(deps)], partitions_def=daily_partitions,
              group_name=model.schema, kinds={"duckdb", "sql"}, check_specs=check_specs,
              description=model.description or None,
              metadata={"materialized": model.materialized, "sql_path": dg.MetadataValue.path(str(model.path))})
    def _model(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
        day = date.fromisoformat(context.partition_key)
        with warehouse.warehouse().connect() as con:
            built = build(con, model, partition_date=day)
            yield dg.MaterializeResult(
                asset_key=key,
                metadata={"rows": dg.MetadataValue.int(built.rows), "seconds": round(built.seconds, 3),
                          "materialized": model.materialized},
            )
            yield from _results(key, model, con, day)

    return _model


def build_model_assets(project_dir: Path | None = None) -> tuple[list[dg.AssetsDefinition], list[dg.AssetKey]]:
    """Every seed and model asset of the project, and the keys of the models (for the publish asset).

    ``project_dir`` defaults to :func:`rank_pipeline.settings.models_dir` (``RANK_PIPELINE_MODELS_DIR``).

    Raises:
        rank_pipeline.sql_models.ProjectError: a cycle, a missing reference or a malformed ``.yml``.
    """
    project = load_project(project_dir if project_dir is not None else models_dir())
    assets = [_seed_asset(seed) for seed in project.seeds.values()]
    models = project.topological_order()
    assets += [_model_asset(model) for model in models]
    return assets, [relation_key(f"{m.schema}.{m.name}") for m in models]
