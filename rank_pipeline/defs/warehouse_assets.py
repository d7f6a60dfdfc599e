"""Warehouse assets: raw tables loaded from the snapshots, and the published warehouse file.

Every asset that writes DuckDB runs in the ``duckdb`` pool (one slot: DuckDB takes one writing
process). The raw load replaces one partition in one transaction; ``warehouse/published`` copies the
build file over ``data/warehouse.duckdb`` atomically once the models are built, so readers never block
the load nor see a half-built state.
"""


import os
from datetime import date

import dagster as dg

from rank_pipeline.defs.extract_assets import SNAPSHOT_KEYS
from rank_pipeline.defs.partitions import daily_partitions
from rank_pipeline.defs.resources import WarehouseResource
from rank_pipeline.snapshots import RESOURCES, read_manifest
from rank_pipeline.warehouse import load_partition

RAW_KEYS = {r: dg.AssetKey(["raw", r]) for r in RESOURCES}
PUBLISHED_KEY = dg.AssetKey(["warehouse", "published"])
DASHBOARD_URL_ENV = "RANK_PIPELINE_DASHBOARD_URL"
DEFAULT_DASHBOARD_URL = "http://127.0.0.1:8088"
"""Where the Superset dashboards over the published file are served (``make dashboard``)."""


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
)
def load_raw_tables(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    """Replace the partition's rows of every raw table from its Parquet snapshots (one transaction)."""
    day = date.fromisoformat(context.partition_key)
    with warehouse.warehouse().connect() as con:
        counts = load_partition(con, warehouse.snapshots_dir, day)
    context.log.info(f"loaded raw partition {day}: {counts}")
    for resource, key in RAW_KEYS.items():
        expected = read_manifest(warehouse.snapshots_dir, resource, day)["row_count"]
        yield dg.MaterializeResult(asset_key=key, metadata={"rows": dg.MetadataValue.int(counts[resource])})
        yield dg.AssetCheckResult(asset_key=key, check_name="rows_match_snapshot",
                                  passed=counts[resource] == expected,
                                  metadata={"loaded": counts[resource], "snapshot_rows": expected})


def build_publish_asset(model_keys: list[dg.AssetKey]) -> dg.AssetsDefinition:
    """``warehouse/published``: depends on every model, copies the build file to the published path."""

    @dg.asset(key=PUBLISHED_KEY, deps=[*RAW_KEYS.values(), *model_keys], partitions_def=daily_partitions,
              pool="duckdb", group_name="warehouse", kinds={"duckdb"},
              description="data/warehouse.duckdb, the file analysts and BI tools open read-only; replaced "
                          "atomically after every successful daily build.")
    def published(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
        path = warehouse.warehouse().publish()
        size = path.stat().st_size
        context.log.info(f"published {path} ({size / 1e6:.1f} MB)")
        dashboards = (os.environ.get(DASHBOARD_URL_ENV) or DEFAULT_DASHBOARD_URL).rstrip("/")
        return dg.MaterializeResult(metadata={
            "path": dg.MetadataValue.path(str(path)),
            "size_bytes": dg.MetadataValue.int(size),
            "storage_version": dg.MetadataValue.text(warehouse.warehouse().storage_version),
            # Superset reconnects on every query, so the dashboards show this publish on reload
            "dashboards": dg.MetadataValue.url(f"{dashboards}/dashboard/list/"),
        })

    return published
