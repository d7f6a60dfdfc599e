"""Warehouse assets: ``raw/<endpoint>`` loaded from the snapshots, and ``warehouse/published``.

Both write under the data folder's writer lock through the run's model engine and :mod:`rank_pipeline.steps`.
Each raw table has the blocking check ``one_row_per_record`` (no record twice in the partition). DuckDB,
Spark and what the check catches: docs/concepts/dagster.md, "Raw tables and the published warehouse".
"""


from datetime import date
from pathlib import Path

import dagster as dg

from rank_pipeline.api.endpoints import raw_column_descriptions
from rank_pipeline.defs.extract_assets import SNAPSHOT_KEYS
from rank_pipeline.defs.model_assets import full_refresh, partition_days
from rank_pipeline.defs.partitions import daily_partitions, date_dependency, deliberate_beta
from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource
from rank_pipeline.defs.run_history_asset import RUN_HISTORY_KEY
from rank_pipeline.defs.table_metadata import (
    COLUMN_SCHEMA,
    ROW_COUNT,
    TABLE_NAME,
    column_schema,
    engine_in_use,
    table_name,
)
from rank_pipeline.operations.dagster_names import LOAD_STEP, PUBLISHED_PATH
from rank_pipeline.settings import ShardPlan, dashboard_url_from_env, models_dir
from rank_pipeline.settings.engine import ENGINES
from rank_pipeline.shape import ShapeResult
from rank_pipeline.snapshots.schema import ENDPOINTS
from rank_pipeline.steps.load import PER_ACCOUNT_ENDPOINTS, load_raw
from rank_pipeline.steps.publish import publish
from rank_pipeline.steps.shape import SHAPE_CHECK, check_shape
from rank_pipeline.transform import loaded_project
from rank_pipeline.warehouse.raw_load import snapshot_dates

RAW_KEYS = {r: dg.AssetKey(["raw", r]) for r in ENDPOINTS}
RELOAD_TAG = "rank_pipeline/reload"
"""Run tag: ``true`` makes the raw days of the run hold exactly what their committed snapshots hold (a day
without one loses its raw rows) instead of refusing a day that is not committed (the job
``rebuild_from_snapshots`` sets it)."""
UNIQUE_RECORD_CHECK = "one_row_per_record"
PUBLISHED_KEY = dg.AssetKey(list(PUBLISHED_PATH))


def raw_table_metadata(endpoint: str, types: list[tuple[str, str]], rows: int, table: str | None) -> dict:
    """Materialization metadata of ``raw.<endpoint>`` (:mod:`rank_pipeline.defs.table_metadata`): its
    column schema (descriptions from :mod:`rank_pipeline.api.endpoints`), row count of the whole table, and its
    table name."""
    meta = {COLUMN_SCHEMA: column_schema(None, types, raw_column_descriptions(endpoint)), ROW_COUNT: int(rows)}
    if table is not None:
        meta[TABLE_NAME] = table
    return meta


@deliberate_beta
def build_load_raw_tables(engine: str | None = None, shards: ShardPlan | None = None,
                          project_dir: Path | None = None, days: dg.DailyPartitionsDefinition = daily_partitions
                          ) -> dg.AssetsDefinition:
    """The ``load_raw_tables`` multi-asset: one ``raw/<endpoint>`` asset per endpoint, kinds naming
    ``engine`` (default: :func:`rank_pipeline.defs.table_metadata.engine_in_use`); with ``shards``
    (``RANK_PIPELINE_SHARDS``) each depends on every shard of its day's snapshot, and the load refuses a
    day not every shard has committed (:class:`rank_pipeline.warehouse.errors.SnapshotMissingError`).
    The vendor-shape check reads the contract of ``project_dir`` (default: :func:`models_dir` at run time).
    Partitioned by ``days``."""
    engine = engine or engine_in_use()
    kinds = set(ENGINES[engine].raw_kinds)

    @dg.multi_asset(
        name=LOAD_STEP,
        specs=[
            dg.AssetSpec(key, deps=[date_dependency(SNAPSHOT_KEYS[r], shards)], group_name="raw", kinds=kinds,
                         skippable=True,  # not materialized when the shape check fails: nothing was loaded
                         description=f"raw.{r}: the {r} snapshots, one partition per snapshot_date, "
                                     "flattened spec fields plus the full attributes JSON.",
                         metadata={COLUMN_SCHEMA: column_schema(None, [(c, "") for c in raw_column_descriptions(r)],
                                                                raw_column_descriptions(r)),
                                   TABLE_NAME: table_name(f"raw.{r}", ENGINES[engine].catalog)})
            for r, key in RAW_KEYS.items()
        ],
        check_specs=[
            *(dg.AssetCheckSpec(UNIQUE_RECORD_CHECK, asset=key, blocking=True,
                                description="No record (id under its parent) appears twice in the partition"
                                            + (" for one account." if r in PER_ACCOUNT_ENDPOINTS else
                                               ", whichever account it was read with (one account, one name)."))
              for r, key in RAW_KEYS.items()),
            *(dg.AssetCheckSpec(SHAPE_CHECK, asset=key, blocking=True,
                                description=f"Every JSON path staging reads from the {r} records is there, of its "
                                            "type, not newly empty and not gone since the previous day "
                                            "(dbt_like_sql/sources/vendor_contract.yml; thresholds: the seed "
                                            "shape_thresholds).")
              for r, key in RAW_KEYS.items()),
        ],
        partitions_def=days,
        backfill_policy=dg.BackfillPolicy.single_run(),
    )
    def load_raw_tables(context: dg.AssetExecutionContext, warehouse: WarehouseResource,
                        model_engine: ModelEngineResource):
        """Check the vendor's shape of the run's days, then replace those days of every raw table from
        their Parquet snapshots (:func:`rank_pipeline.steps.load.load_raw`; a single-run backfill loads its
        whole partition range). With ``full_refresh(context)``: every committed day is checked, then every
        raw table reloaded. With :data:`RELOAD_TAG`: the days hold what their snapshots hold. A failed shape
        check loads nothing."""
        first, last = partition_days(context)
        refresh = full_refresh(context)
        uri = warehouse.snapshot_store_uri
        checked = (first, last)
        if refresh and (committed := list(snapshot_dates(uri))):  # every committed day is reloaded
            checked = (min(first, committed[0]), max(last, committed[-1]))
        shape = check_shape(loaded_project(project_dir or models_dir()), uri, *checked,
                            warehouse.paths.vendor_fields, warehouse.paths.cache_dir / "shape")
        for line in shape.lines():
            context.log.error(f"{SHAPE_CHECK}: {line}")
        for endpoint, paths in shape.new_fields.items():
            context.log.info(f"new fields in the vendor's {endpoint} records: {', '.join(paths)}")
        if not shape.passed:
            context.log.error(f"the vendor's shape of {checked[0]} .. {checked[1]} does not match the contract: "
                              "no raw table was loaded")
            for endpoint, key in RAW_KEYS.items():
                yield _shape_result(key, shape.results[endpoint], shape.new_fields.get(endpoint, {}))
            return
        engine = model_engine.open(warehouse)
        loaded = load_raw(engine, uri, first, last, full_refresh=refresh, replace=reload_days(context))
        context.log.info(f"loaded raw partitions {first} .. {last} on {engine.name}: {len(loaded.days)} day(s)")
        for endpoint, key in RAW_KEYS.items():
            failures, sample = loaded.repeated[endpoint]
            qualified = f"raw.{endpoint}"
            yield dg.MaterializeResult(asset_key=key, metadata={
                "rows": dg.MetadataValue.int(loaded.rows(endpoint)), "days": len(loaded.days),
                "engine": engine.name,
                **raw_table_metadata(endpoint, engine.column_types(qualified), engine.row_count(qualified),
                                     table_name(qualified, engine.catalog))})
            yield _unique_record_result(key, first, last, failures, sample)
            yield _shape_result(key, shape.results[endpoint], shape.new_fields.get(endpoint, {}))

    return load_raw_tables


load_raw_tables = build_load_raw_tables(engine="duckdb")
"""The unsharded ``load_raw_tables`` on DuckDB, for direct use (``build_definitions`` builds its own from settings)."""
"""The raw multi-asset for the engine of the environment at import (definitions and tests use it)."""


def reload_days(context: dg.AssetExecutionContext) -> bool:
    """The run carries :data:`RELOAD_TAG` = ``true``."""
    return context.run.tags.get(RELOAD_TAG, "").lower() == "true"


def _unique_record_result(key: dg.AssetKey, first: date, last: date, failures: int,
                          sample: list[dict]) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(asset_key=key, check_name=UNIQUE_RECORD_CHECK, passed=failures == 0,
                               metadata={"partition": str(first) if first == last else f"{first}..{last}",
                                         "failing_rows": failures, "sample": dg.MetadataValue.json(sample)})


def _shape_result(key: dg.AssetKey, result: ShapeResult, new_fields: dict[str, str]) -> dg.AssetCheckResult:
    days = result.days
    return dg.AssetCheckResult(
        asset_key=key, check_name=SHAPE_CHECK, passed=result.passed,
        metadata={"partition": (str(days[0]) if len(days) == 1 else f"{days[0]}..{days[-1]}") if days else "none",
                  "failing_rows": len(result.findings), "records": result.records,
                  "failures": dg.MetadataValue.md("\n".join(f"- {line}" for line in result.lines()) or "none"),
                  "unread_paths": dg.MetadataValue.json(result.unread),
                  "new_fields": dg.MetadataValue.json(new_fields)})


@deliberate_beta
def build_publish_asset(model_keys: list[dg.AssetKey], engine: str | None = None,
                        dashboard_url: str | None = None, days: dg.DailyPartitionsDefinition = daily_partitions
                        ) -> dg.AssetsDefinition:
    """``warehouse/published``: depends on every model and on ``ops/run_history`` (the run's own row is
    written just before: :mod:`rank_pipeline.defs.run_history_asset`), copies the build file to the published path
    (kinds: ``engine``, default :func:`rank_pipeline.defs.table_metadata.engine_in_use`); its metadata links
    the dashboards at ``dashboard_url`` (:attr:`rank_pipeline.settings.Settings.dashboard_url`; None: read
    when it runs, for definitions built without settings). Partitioned by ``days``."""

    @dg.asset(key=PUBLISHED_KEY, deps=[*RAW_KEYS.values(), *model_keys, RUN_HISTORY_KEY],
              partitions_def=days,
              backfill_policy=dg.BackfillPolicy.single_run(), group_name="warehouse",
              kinds={engine or engine_in_use()},
              description="data/warehouse.duckdb, the file analysts and BI tools open read-only; replaced "
                          "atomically after every successful daily build.")
    def published(context: dg.AssetExecutionContext, warehouse: WarehouseResource,
                  model_engine: ModelEngineResource) -> dg.MaterializeResult:
        engine = model_engine.open(warehouse)
        path = publish(engine)
        if path is None:
            uri = engine.written_to
            context.log.info(f"{engine.name}: nothing to publish, the models are tables under {uri} "
                             f"(<schema>/<name>); {warehouse.paths.published_db} was left as it was")
            return dg.MaterializeResult(metadata={
                "engine": engine.name, "warehouse_uri": dg.MetadataValue.path(uri),
                "tables": dg.MetadataValue.json({k.to_user_string(): engine.location(k.path[0], k.path[-1])
                                                 for k in model_keys}),
            })
        size = path.stat().st_size
        context.log.info(f"published {path} ({size / 1e6:.1f} MB)")
        dashboards = dashboard_url if dashboard_url is not None else dashboard_url_from_env()
        written = warehouse.warehouse()
        return dg.MaterializeResult(metadata={
            "path": dg.MetadataValue.path(str(path)),
            "size_bytes": dg.MetadataValue.int(size),
            "storage_version": dg.MetadataValue.text(written.storage_version),
            "duckdb_memory_limit": dg.MetadataValue.text(written.memory_limit or "DuckDB's default (80% of RAM)"),
            # Superset reconnects on every query, so the dashboards show this publish on reload
            "dashboards": dg.MetadataValue.url(f"{dashboards}/dashboard/list/"),
        })

    return published
