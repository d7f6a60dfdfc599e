"""Warehouse assets: raw tables loaded from the snapshots, and the published warehouse file.

Every asset here writes DuckDB under the data folder's writer lock, held by the ``warehouse``
resource (DuckDB takes one writing process; :mod:`rank_pipeline.warehouse.locks`). The raw load replaces one
partition in one transaction; ``warehouse/published`` copies the build file over
``data/warehouse.duckdb`` atomically once the models are built, so readers never block the load nor
see a half-built state.

Each raw table has one blocking asset check, ``one_row_per_record``: in the partition, no record (``id``
under its ``parent_id``) appears twice, across accounts for the resources an account owns (domains,
keywords, competitors, tags, usage) and within an account for the reference rows every account reads
(locations, languages). It fails when one vendor account was extracted under two configured names, or a
record was written twice, and its metadata lists the repeated records with their date. (The row count
against the manifest needs no check: the load itself refuses a snapshot that disagrees with its manifest.)

With the ``model_engine`` resource on ``spark`` (:class:`rank_pipeline.defs.resources.ModelEngineResource`)
the DuckDB files are not touched: ``load_raw_tables`` registers ``raw.<resource>`` in the run's Spark
session over the Parquet files the committed manifests list (read in place, nothing copied; every
committed day, as Spark builds every model in full), reports the run's days' rows, and runs the same
``one_row_per_record`` check on Spark over those days; ``warehouse/published`` publishes nothing (Spark's
tables are already where readers find them) and reports the Parquet location of every model. Each says
so in one log line.
"""


from datetime import date

import dagster as dg

from rank_pipeline.api.endpoints import CATALOG, raw_column_descriptions
from rank_pipeline.defs.extract_assets import SNAPSHOT_KEYS
from rank_pipeline.defs.history import RUN_HISTORY_KEY
from rank_pipeline.defs.model_assets import duckdb_types, full_refresh, partition_days
from rank_pipeline.defs.partitions import daily_partitions
from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource
from rank_pipeline.defs.table_metadata import (
    COLUMN_SCHEMA,
    ROW_COUNT,
    TABLE_NAME,
    column_schema,
    engine_in_use,
    table_name,
)
from rank_pipeline.models.testing import json_safe
from rank_pipeline.settings import dashboard_url_from_env
from rank_pipeline.snapshots.parquet import ENDPOINTS
from rank_pipeline.warehouse.database import load_partitions, reload_raw_from_snapshots

RAW_KEYS = {r: dg.AssetKey(["raw", r]) for r in ENDPOINTS}
UNIQUE_RECORD_CHECK = "one_row_per_record"
PER_ACCOUNT_ENDPOINTS = frozenset(r.name for r in CATALOG if not r.account_scoped)
"""Catalogue rows (declared ``account_scoped=False``), read once per account that points to them: the
same record may appear once per account (docs/architecture.md)."""


def repeated_records_sql(resource: str, first: date, last: date) -> str:
    """The DuckDB SELECT of the records of ``raw.<resource>`` appearing more than once on one day of
    ``first .. last`` (one row per repeated record: ``snapshot_date``, its key, ``n_rows``, ``accounts``);
    Spark runs it transpiled (:func:`rank_pipeline.models.spark_engine.to_spark_sql`)."""
    key = "account, id, parent_id" if resource in PER_ACCOUNT_ENDPOINTS else "id, parent_id"
    return (f"select snapshot_date, {key}, count(*) as n_rows, list_sort(list(distinct account)) as accounts "
            f"from raw.{resource} where snapshot_date between date '{first.isoformat()}' and "
            f"date '{last.isoformat()}' group by snapshot_date, {key} having count(*) > 1 order by all")


def repeated_records(con, resource: str, day: date, sample_size: int = 5) -> tuple[int, list[dict]]:
    """``(records repeated, sample)`` in ``raw.<resource>`` for ``day`` (see the module docstring)."""
    sql = repeated_records_sql(resource, day, day)
    rows = con.execute(f"select count(*) from ({sql})").fetchone()[0]
    cur = con.execute(f"{sql} limit {int(sample_size)}")
    names = [d[0] for d in cur.description]
    sample = [json_safe(dict(zip(names, row, strict=True))) for row in cur.fetchall()]
    return int(rows), sample
PUBLISHED_KEY = dg.AssetKey(["warehouse", "published"])


def raw_table_metadata(resource: str, types: list[tuple[str, str]], rows: int, table: str | None) -> dict:
    """Materialization metadata of ``raw.<resource>`` (:mod:`rank_pipeline.defs.table_metadata`): its
    column schema (descriptions from :mod:`rank_pipeline.api.endpoints`), row count of the whole table, and its
    table name (None on Spark, where it is a view of the run's session only)."""
    meta = {COLUMN_SCHEMA: column_schema(None, types, raw_column_descriptions(resource)), ROW_COUNT: int(rows)}
    if table is not None:
        meta[TABLE_NAME] = table
    return meta


def build_load_raw_tables(engine: str | None = None) -> dg.AssetsDefinition:
    """The ``load_raw_tables`` multi-asset: one ``raw/<resource>`` asset per resource, kinds naming
    ``engine`` (default: :func:`rank_pipeline.defs.table_metadata.engine_in_use`)."""
    engine = engine or engine_in_use()
    kinds = {"duckdb"} if engine == "duckdb" else {engine, "parquet"}

    @dg.multi_asset(
        name="load_raw_tables",
        specs=[
            dg.AssetSpec(key, deps=[SNAPSHOT_KEYS[r]], group_name="raw", kinds=kinds,
                         description=f"raw.{r}: the {r} snapshots, one partition per snapshot_date, "
                                     "flattened spec fields plus the full attributes JSON.",
                         metadata={COLUMN_SCHEMA: column_schema(None, [(c, "") for c in raw_column_descriptions(r)],
                                                                raw_column_descriptions(r)),
                                   **({TABLE_NAME: table_name(f"raw.{r}", engine)} if engine == "duckdb" else {})})
            for r, key in RAW_KEYS.items()
        ],
        check_specs=[
            dg.AssetCheckSpec(UNIQUE_RECORD_CHECK, asset=key, blocking=True,
                              description="No record (id under its parent) appears twice in the partition"
                                          + (" for one account." if r in PER_ACCOUNT_ENDPOINTS else
                                             ", whichever account it was read with (one account, one name)."))
            for r, key in RAW_KEYS.items()
        ],
        partitions_def=daily_partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
    )
    def load_raw_tables(context: dg.AssetExecutionContext, warehouse: WarehouseResource,
                        model_engine: ModelEngineResource):
        """Replace the run's days of every raw table from their Parquet snapshots (one transaction; a
        single-run backfill loads its whole partition range). With ``full_refresh(context)``: reload
        every raw table from all committed snapshots. On Spark: :func:`_register_raw_on_spark`."""
        first, last = partition_days(context)
        if model_engine.uses_spark:
            yield from _register_raw_on_spark(context, warehouse, model_engine, first, last)
            return
        catalog = warehouse.warehouse().published_path.stem
        with warehouse.warehouse().connect() as con:
            if full_refresh(context):
                loaded = reload_raw_from_snapshots(con, warehouse.snapshot_store_uri)
                loaded = {d: c for d, c in loaded.items() if first <= d <= last}
            else:
                loaded = load_partitions(con, warehouse.snapshot_store_uri, first, last)
            repeated = {r: [repeated_records(con, r, d) for d in sorted(loaded)] for r in RAW_KEYS}
            tables = {r: (duckdb_types(con, f"raw.{r}"), con.execute(f"select count(*) from raw.{r}").fetchone()[0])
                      for r in RAW_KEYS}
        context.log.info(f"loaded raw partitions {first} .. {last}: {len(loaded)} day(s)")
        for resource, key in RAW_KEYS.items():
            count = sum(c.get(resource, 0) for c in loaded.values())
            failures = sum(f for f, _ in repeated[resource])
            sample = [row for _, rows in repeated[resource] for row in rows][:5]
            types, total = tables[resource]
            yield dg.MaterializeResult(asset_key=key, metadata={
                "rows": dg.MetadataValue.int(count),
                **raw_table_metadata(resource, types, total, table_name(f"raw.{resource}", "duckdb", catalog))})
            yield _unique_record_result(key, first, last, failures, sample)

    return load_raw_tables


load_raw_tables = build_load_raw_tables()
"""The raw multi-asset for the engine of the environment at import (definitions and tests use it)."""


def _unique_record_result(key: dg.AssetKey, first: date, last: date, failures: int,
                          sample: list[dict]) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(asset_key=key, check_name=UNIQUE_RECORD_CHECK, passed=failures == 0,
                               metadata={"partition": str(first) if first == last else f"{first}..{last}",
                                         "failing_rows": failures, "sample": dg.MetadataValue.json(sample)})


def _register_raw_on_spark(context: dg.AssetExecutionContext, warehouse: WarehouseResource,
                           model_engine: ModelEngineResource, first: date, last: date):
    """Spark: register every raw table over the committed snapshots' files, then report the rows of the
    run's days and run ``one_row_per_record`` over them (module docstring)."""
    from rank_pipeline.models.spark_engine import raw_view, to_spark_sql

    files = model_engine.load_raw(warehouse.snapshot_store_uri)  # re-read the manifests: this run may have added days
    engine = model_engine.spark(warehouse.snapshot_store_uri)
    context.log.info(f"spark: raw tables registered over {sum(files.values())} committed snapshot file(s) under "
                     f"{warehouse.snapshot_store_uri} (read in place; the DuckDB raw tables are not touched)")
    span = f"snapshot_date between date '{first.isoformat()}' and date '{last.isoformat()}'"
    for resource, key in RAW_KEYS.items():
        (count,) = engine.spark.sql(f"select count(*) from {raw_view(resource)} where {span}").first()
        repeated = engine.spark.sql(to_spark_sql(repeated_records_sql(resource, first, last)))
        failures = repeated.count()
        sample = [json_safe(row.asDict()) for row in repeated.limit(5).collect()] if failures else []
        frame = engine.spark.table(raw_view(resource))
        types = [(f.name, f.dataType.simpleString()) for f in frame.schema.fields]
        yield dg.MaterializeResult(asset_key=key, metadata={"rows": dg.MetadataValue.int(int(count)),
                                                            "files": dg.MetadataValue.int(files[resource]),
                                                            "engine": "spark",
                                                            **raw_table_metadata(resource, types,
                                                                                 engine.raw_rows(resource), None)})
        yield _unique_record_result(key, first, last, int(failures), sample)


def build_publish_asset(model_keys: list[dg.AssetKey], engine: str | None = None) -> dg.AssetsDefinition:
    """``warehouse/published``: depends on every model and on ``ops/run_history`` (the run's own row is
    written just before: :mod:`rank_pipeline.defs.history`), copies the build file to the published path
    (kinds: ``engine``, default :func:`rank_pipeline.defs.table_metadata.engine_in_use`)."""

    @dg.asset(key=PUBLISHED_KEY, deps=[*RAW_KEYS.values(), *model_keys, RUN_HISTORY_KEY],
              partitions_def=daily_partitions,
              backfill_policy=dg.BackfillPolicy.single_run(), group_name="warehouse",
              kinds={engine or engine_in_use()},
              description="data/warehouse.duckdb, the file analysts and BI tools open read-only; replaced "
                          "atomically after every successful daily build.")
    def published(context: dg.AssetExecutionContext, warehouse: WarehouseResource,
                  model_engine: ModelEngineResource) -> dg.MaterializeResult:
        if model_engine.uses_spark:
            uri = model_engine.settings().spark_warehouse_uri.rstrip("/")
            context.log.info(f"spark: nothing to publish, the models are Parquet tables under {uri} "
                             f"(<schema>/<name>); {warehouse.warehouse().published_path} was left as it was")
            return dg.MaterializeResult(metadata={
                "engine": "spark", "warehouse_uri": dg.MetadataValue.path(uri),
                "tables": dg.MetadataValue.json({k.to_user_string(): f"{uri}/{'/'.join(k.path)}"
                                                 for k in model_keys}),
            })
        path = warehouse.warehouse().publish()
        size = path.stat().st_size
        context.log.info(f"published {path} ({size / 1e6:.1f} MB)")
        dashboards = dashboard_url_from_env()
        return dg.MaterializeResult(metadata={
            "path": dg.MetadataValue.path(str(path)),
            "size_bytes": dg.MetadataValue.int(size),
            "storage_version": dg.MetadataValue.text(warehouse.warehouse().storage_version),
            # Superset reconnects on every query, so the dashboards show this publish on reload
            "dashboards": dg.MetadataValue.url(f"{dashboards}/dashboard/list/"),
        })

    return published
