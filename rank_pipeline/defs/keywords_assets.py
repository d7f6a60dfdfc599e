"""The keywords file in Dagster: ``raw/keywords_file`` (the file planned offline against the partition's
snapshot, one row per wanted combination) and its WARN check ``matches_tracked_keywords`` (only when
``RANK_PIPELINE_KEYWORDS_FILE`` is set). Details: docs/concepts/dagster.md, "The keywords file".
"""

from pathlib import Path

import dagster as dg

from rank_pipeline.defs.extract_assets import SNAPSHOT_KEYS
from rank_pipeline.defs.model_assets import partition_days
from rank_pipeline.defs.partitions import daily_partitions, date_dependency, deliberate_beta
from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource
from rank_pipeline.defs.table_metadata import engine_in_use
from rank_pipeline.keywords import (
    KeywordsFileError,
    load_keywords_file,
    plan_offline,
    planned_rows,
)
from rank_pipeline.settings import ShardPlan
from rank_pipeline.snapshots.reader import list_snapshot_dates
from rank_pipeline.warehouse.raw_load import KEYWORDS_FILE, KEYWORDS_FILE_TABLE, raw_columns

KEYWORDS_FILE_KEY = dg.AssetKey(["raw", "keywords_file"])
DRIFT_CHECK = "matches_tracked_keywords"


@deliberate_beta
def build_keywords_file_asset(keywords_file: Path | None, shards: ShardPlan | None = None,
                              engine: str | None = None, days: dg.DailyPartitionsDefinition = daily_partitions
                              ) -> dg.AssetsDefinition:
    """The ``raw/keywords_file`` asset for ``keywords_file`` (``Settings.keywords_file``; None: no check);
    with ``shards`` (``Settings.shards``) it depends on every shard of its day's snapshots; ``engine``
    names its kind (default :func:`rank_pipeline.defs.table_metadata.engine_in_use`); ``days`` its partitions."""
    checks = [dg.AssetCheckSpec(
        DRIFT_CHECK, asset=KEYWORDS_FILE_KEY, blocking=False,
        description=f"The keywords file {keywords_file} and the keywords tracked on its domains (the day's "
                    "snapshot) agree: nothing to create, nothing tracked that is not in the file.")] \
        if keywords_file is not None else []

    @dg.asset(key=KEYWORDS_FILE_KEY, deps=[date_dependency(SNAPSHOT_KEYS[r], shards)
                                         for r in ("domains", "keywords", "locations", "usage")],
              partitions_def=days, backfill_policy=dg.BackfillPolicy.single_run(), group_name="raw",
              kinds={engine or engine_in_use(), "yaml"}, check_specs=checks,
              description="raw.keywords_file: the keywords file (RANK_PIPELINE_KEYWORDS_FILE) planned against the "
                          "day's snapshot, one row per wanted combination; empty when no file is set.")
    def keywords_file_asset(context: dg.AssetExecutionContext, warehouse: WarehouseResource,
                            model_engine: ModelEngineResource):
        _, last = partition_days(context)
        engine = model_engine.open(warehouse)
        if keywords_file is None:
            written = engine.replace_raw_rows(KEYWORDS_FILE, raw_columns(KEYWORDS_FILE), [])
            table = _table_metadata(engine) if written is not None else {}
            yield dg.MaterializeResult(metadata={"rows": 0, "file": "(RANK_PIPELINE_KEYWORDS_FILE not set)", **table})
            return
        try:
            loaded = load_keywords_file(keywords_file)
            dates = [d for d in list_snapshot_dates(warehouse.snapshot_store_uri, "keywords") if d <= last]
            plan = plan_offline(loaded, warehouse.snapshot_store_uri, day=dates[-1] if dates else None)
        except (KeywordsFileError, FileNotFoundError) as exc:
            context.log.warning(f"keywords file not planned: {exc}")
            yield dg.MaterializeResult(metadata={"rows": 0, "file": str(keywords_file), "error": str(exc)})
            yield dg.AssetCheckResult(check_name=DRIFT_CHECK, passed=False, severity=dg.AssetCheckSeverity.WARN,
                                      description=str(exc), metadata={"file": str(keywords_file)})
            return
        rows = planned_rows(plan)
        table = {}
        if engine.replace_raw_rows(KEYWORDS_FILE, raw_columns(KEYWORDS_FILE), rows) is None:
            context.log.info(f"{engine.name}: raw.keywords_file is written in the DuckDB warehouse only")
        else:
            table = _table_metadata(engine)
        context.log.info(plan.summary())
        yield dg.MaterializeResult(metadata={"rows": len(rows), "file": dg.MetadataValue.path(str(keywords_file)),
                                             "planned_against": plan.source, **table})
        creates = [f"{loaded.path}:{loaded.line(w.loc('word'))}: {d.name}: {w.describe()}"
                   for d in plan.domains for w in d.create]
        untracked = [f"{d.name}: {k[0]!r} {k[1]}/{k[2]} {k[3]} {k[4]} (id {i})"
                     for d in plan.domains for k, i in d.untracked]
        passed = not creates and not untracked and not plan.problems
        yield dg.AssetCheckResult(
            check_name=DRIFT_CHECK, passed=passed, severity=dg.AssetCheckSeverity.WARN,
            description=None if passed else plan.summary(),
            metadata={"to_create": len(creates), "already_tracked": plan.existing, "not_in_file": len(untracked),
                      "problems": dg.MetadataValue.json([p.render(loaded) for p in plan.problems][:20]),
                      "to_create_sample": dg.MetadataValue.json(creates[:10]),
                      "not_in_file_sample": dg.MetadataValue.json(untracked[:10]),
                      "planned_against": plan.source})

    return keywords_file_asset


def _table_metadata(engine) -> dict:
    """Dagster's standard table metadata of ``raw.keywords_file`` (:mod:`rank_pipeline.defs.table_metadata`)."""
    from rank_pipeline.defs.table_metadata import (
        COLUMN_SCHEMA,
        ROW_COUNT,
        TABLE_NAME,
        column_schema,
        table_name,
    )

    return {COLUMN_SCHEMA: column_schema(None, engine.column_types(KEYWORDS_FILE_TABLE)),
            ROW_COUNT: engine.row_count(KEYWORDS_FILE_TABLE),
            TABLE_NAME: table_name(KEYWORDS_FILE_TABLE, engine.catalog)}
