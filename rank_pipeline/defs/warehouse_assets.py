"""Warehouse assets: raw tables loaded from the snapshots, and the published warehouse file.

Every asset that writes DuckDB runs in the ``duckdb`` pool (one slot: DuckDB takes one writing
process). The raw load replaces one partition in one transaction; ``warehouse/published`` copies the
build file over ``data/warehouse.duckdb`` atomically once the models are built, so readers never block
the load nor see a half-built state.
"""


import dagster as dg

from rank_pipeline.defs.extract_assets import SNAPSHOT_KEYS
from rank_pipeline.defs.model_assets import full_refresh, partition_days
from rank_pipeline.defs.partitions import daily_partitions
from rank_pipeline.defs.resources import WarehouseResource
from rank_pipeline.snapshots import RESOURCES, read_manifest
from rank_pipeline.warehouse import load_partitions, rebuild_from_snapshots

RAW_KEYS = {r: dg.AssetKey(["raw", r]) for r in RESOURCES}
PUBLISHED_KEY = dg.AssetKey(["warehouse", "published"])


@dg.multi_asset(
    name="load_raw_tables",
    specs=[
        dg.AssetSpec(key, deps=[SNAPSHOT_KEYS[r]], group_name="raw", kinds={"duckdb"},
                     description=f"raw.{r}: the {r} snapshots, one partition per snapshot_date, "
                                 "flattened spec fields plus the full attributes JSON.")
        for r, key in RAW_KEYS.items()
    ],
    check_specs=[
        dg.AssetCheckSpec("rows_match_snapshot", asset=key, blocking=True,
                          description="Rows loaded for the partition equal the snapshot manifest's row count.")
        for key in RAW_KEYS.values()
    ],
    partitions_def=daily_partitions,
    pool="duckdb",
    backfill_policy=dg.BackfillPolicy.single_run(),
)
def load_raw_tables(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    """Replace the run's days of every raw table from their Parquet snapshots (one transaction; a
    single-run backfill loads its whole partition range). With ``full_refresh(context)``: reload
    every raw table from all committed snapshots."""
    first, last = partition_days(context)
    with warehouse.warehouse().connect() as con:
        if full_refresh(context):
            loaded = rebuild_from_snapshots(con, warehouse.snapshots_dir)
            loaded = {d: c for d, c in loaded.items() if first <= d <= last}
        else:
            loaded = load_partitions(con, warehouse.snapshots_dir, first, last)
    context.log.info(f"loaded raw partitions {first} .. {last}: {len(loaded)} day(s)")
    for resource, key in RAW_KEYS.items():
        count = sum(c.get(resource, 0) for c in loaded.values())
        expected = sum(read_manifest(warehouse.snapshots_dir, resource, d)["row_count"] for d in loaded)
        yield dg.MaterializeResult(asset_key=key, metadata={"rows": dg.MetadataValue.int(count)})
        yield dg.AssetCheckResult(asset_key=key, check_name="rows_match_snapshot",
                                  passed=count == expected,
                                  metadata={"loaded": count, "snapshot_rows": expected})


def build_publish_asset(model_keys: list[dg.AssetKey]) -> dg.AssetsDefinition:
    """``warehouse/published``: depends on every model, copies the build file to the published path."""

    @dg.asset(key=PUBLISHED_KEY, deps=[*RAW_KEYS.values(), *model_keys], partitions_def=daily_partitions,
              pool="duckdb", backfill_policy=dg.BackfillPolicy.single_run(), group_name="warehouse", kinds={"duckdb"},
              description="data/warehouse.duckdb, the file analysts and BI tools open read-only; replaced "
                          "atomically after every successful daily build.")
    def published(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
        path = warehouse.warehouse().publish()
        size = path.stat().st_size
        context.log.info(f"published {path} ({size / 1e6:.1f} MB)")
        return dg.MaterializeResult(metadata={"path": dg.MetadataValue.path(str(path)),
                                              "size_bytes": dg.MetadataValue.int(size)})

    return published
