"""Extraction: one multi-asset writes the day's Parquet snapshot of every endpoint (``snapshots/<endpoint>``,
each with the blocking check ``complete``) in one step, so one pacer per key and IP governs it; sharded, by
day x shard (docs/concepts/dagster.md, "Extraction").
"""


import time
from collections.abc import Callable
from datetime import date, timedelta

import dagster as dg

from rank_pipeline.api.endpoints import CATALOG, Endpoint
from rank_pipeline.defs.partitions import (
    DATE_DIMENSION,
    SHARD_DIMENSION,
    daily_partitions,
    deliberate_beta,
    shard_partitions,
)
from rank_pipeline.defs.resources import WarehouseResource
from rank_pipeline.defs.shard_runs import check_partitioning
from rank_pipeline.extract.day import ExtractionProgress, ExtractionReport
from rank_pipeline.extract.source import Source
from rank_pipeline.operations.dagster_names import EXTRACT_STEP
from rank_pipeline.operations.run_history import reread_passes
from rank_pipeline.settings import Shard, ShardPlan
from rank_pipeline.snapshots.manifest import SnapshotManifest
from rank_pipeline.snapshots.schema import partition_dir
from rank_pipeline.steps.extract import extract_days

SNAPSHOT_KEYS = {r.name: dg.AssetKey(["snapshots", r.name]) for r in CATALOG}


def snapshot_description(declared: Endpoint) -> str:
    """The ``snapshots/<endpoint>`` asset's description, from the endpoint's declaration."""
    parent = f", per {declared.parent} record" if declared.parent else ""
    return f"{declared.description} {declared.endpoint}{parent}; one Parquet snapshot per day."


@deliberate_beta
def build_extract_snapshots(plan: ShardPlan | None = None, days: dg.DailyPartitionsDefinition = daily_partitions
                            ) -> dg.AssetsDefinition:
    """The ``extract_snapshots`` multi-asset: partitioned by ``days``, or with ``plan``
    (``RANK_PIPELINE_SHARDS``) partitioned by day x shard (:func:`rank_pipeline.defs.partitions.shard_partitions`),
    each partition one run (a backfill of several is several runs, which may run at once)."""

    @dg.multi_asset(
        name=EXTRACT_STEP,
        specs=[
            dg.AssetSpec(SNAPSHOT_KEYS[r.name], description=snapshot_description(r), group_name="snapshots",
                         kinds={"parquet"})
            for r in CATALOG
        ],
        check_specs=[
            dg.AssetCheckSpec("complete", asset=key, blocking=True,
                              description="Every list of this endpoint was read completely (ids == X-Total-Count).")
            for key in SNAPSHOT_KEYS.values()
        ],
        partitions_def=days if plan is None else shard_partitions(plan, days),
        backfill_policy=dg.BackfillPolicy.single_run() if plan is None else dg.BackfillPolicy.multi_run(1),
    )
    def extract_snapshots(context: dg.AssetExecutionContext, source: dg.ResourceParam[Source],
                          warehouse: WarehouseResource):
        """Extract the run's day(s) from the source into the snapshots (:func:`extract_snapshots_of`)."""
        yield from extract_snapshots_of(context, source, warehouse, plan)

    return extract_snapshots


def extract_snapshots_of(context: dg.AssetExecutionContext, source: Source, warehouse: WarehouseResource,
                         plan: ShardPlan | None):
    """Extract the run's day(s) into the snapshots (:func:`rank_pipeline.steps.extract.extract_days`).

    A range of days is played by the sandbox and refused by the vendor API (rebuild past days with
    ``rebuild_from_snapshots``); a retry resumes from the failed run's checkpoints; sharded (``plan``), one day
    and one shard, paced to :meth:`rank_pipeline.settings.ShardPlan.rates`.
    """
    check_partitioning(warehouse.paths.data_dir, plan, record=True)  # the first run records its partitioning
    source, first, last = _run_days(context, source, plan)
    reports = extract_days(source, warehouse.paths, first, last, holder=f"Dagster run {context.run.run_id}",
                           log=context.log.info, detail=context.log.info, on_progress=_progress_log(context))
    for endpoint, key in SNAPSHOT_KEYS.items():
        yield dg.MaterializeResult(asset_key=key,
                                   metadata=_snapshot_metadata(endpoint, reports, source, warehouse, last))
        yield _complete_check(context, plan, endpoint, key, [r.manifests[endpoint] for r in reports], first, last)


def _run_days(context: dg.AssetExecutionContext, source: Source,
              plan: ShardPlan | None) -> tuple[Source, date, date]:
    """The run's source and first and last day: sharded (``plan``), the partition's one day and the
    source restricted to the partition's shard and paced to its budget (logged); else the partition range."""
    if plan is None:
        first, last = (date.fromisoformat(k) for k in (context.partition_key_range.start,
                                                         context.partition_key_range.end))
        return source, first, last
    keys = context.partition_key.keys_by_dimension
    day = date.fromisoformat(keys[DATE_DIMENSION])
    source = source.for_shard(Shard.from_key(keys[SHARD_DIMENSION]), plan.rates(source.client_config))
    context.log.info(f"shard {source.shard} of {day}: per-IP pace {source.client_config.per_ip_limit} "
                     f"requests per {source.client_config.window_s:g} s "
                     f"({'own address' if plan.own_addresses else f'1/{plan.count} of one shared address'})")
    return source, day, day


def _progress_log(context: dg.AssetExecutionContext) -> Callable[[ExtractionProgress], None]:
    """An ``on_progress`` logging the running counters at most every 5 s."""
    last_note = [0.0]

    def on_progress(p: ExtractionProgress) -> None:
        now = time.monotonic()
        if now - last_note[0] >= 5.0:
            last_note[0] = now
            context.log.info(
                f"lists {p.lists_done}/{p.lists_total}, records {p.records}, requests {p.requests}, "
                f"retries {p.retries}, 429s {p.rate_limited}"
            )

    return on_progress


def _records(manifests: list[SnapshotManifest]) -> tuple[int, int]:
    """Records expected (``X-Total-Count``) and delivered over every account of ``manifests``."""
    accounts = [a for m in manifests for a in m.accounts.values()]
    return sum(a.expected for a in accounts), sum(a.delivered for a in accounts)


def _snapshot_metadata(endpoint: str, reports: list[ExtractionReport], source: Source,
                       warehouse: WarehouseResource, last: date) -> dict:
    """The ``snapshots/<endpoint>`` materialization's metadata over the run's days (``reports``, in order):
    rows, completeness, records expected and delivered, the run's request figures, and per day."""
    manifests = [r.manifests[endpoint] for r in reports]
    accounts_meta = [a for m in manifests for a in m.accounts.values()]
    expected, delivered = _records(manifests)
    missing = sorted({p for a in accounts_meta for p in a.missing_parents})
    run_accounts = [a for r in reports for a in r.accounts.values()]
    return {
        "rows": dg.MetadataValue.int(sum(m.row_count for m in manifests)),
        "complete": all(m.complete for m in manifests),
        "expected_records": expected,
        "delivered_records": delivered,
        "pages": sum(a.pages for a in accounts_meta),
        "missing_parents": dg.MetadataValue.json(missing),
        "path": dg.MetadataValue.path(str(partition_dir(warehouse.snapshot_store_uri, endpoint, last))),
        "requests_total": sum(a.requests for a in run_accounts),
        "rate_limited_total": sum(a.rate_limited for a in run_accounts),
        "retries_total": sum(a.retries for a in run_accounts),
        "reread_passes_total": sum(_day_figures(r)["reread_passes"] for r in reports),
        # per day: this endpoint's rows and the day's request figures (ops.run_history reads them)
        "by_day": dg.MetadataValue.json({str(r.snapshot_date): {"rows": r.manifests[endpoint].row_count,
                                                                **_day_figures(r)}
                                         for r in reports}),
        "achieved_rate_per_min": dg.MetadataValue.json(
            {n: a.achieved_rate_per_min for n, a in reports[-1].accounts.items()}),
        # per key position of each account's key list (never a key's value)
        "keys": dg.MetadataValue.json({n: [k.model_dump() for k in a.keys]
                                       for n, a in reports[-1].accounts.items()}),
        "shard": str(source.shard) if source.shard is not None else "all accounts",
        "per_ip_limit": source.client_config.per_ip_limit,
    }


def _complete_check(context: dg.AssetExecutionContext, plan: ShardPlan | None, endpoint: str, key: dg.AssetKey,
                    manifests: list[SnapshotManifest], first: date, last: date) -> dg.AssetCheckResult:
    """The ``complete`` check of ``snapshots/<endpoint>`` over the days ``first`` .. ``last`` (``manifests``,
    one per day): passed when every list was proven complete, else a message per incomplete day
    (:func:`incomplete_message`); its metadata names the partition, the records expected and delivered,
    the incomplete lists and days, and the last day's figures per account."""
    expected, delivered = _records(manifests)
    return dg.AssetCheckResult(
        asset_key=key,
        check_name="complete",
        passed=all(m.complete for m in manifests),
        description=None if all(m.complete for m in manifests) else " ".join(
            incomplete_message(endpoint, first + timedelta(days=i), _incomplete_lists(m))
            for i, m in enumerate(manifests) if not m.complete),
        metadata={"partition": context.partition_key if plan is not None else
                  context.partition_key_range.start if first == last else f"{first}..{last}",
                  "expected_records": expected, "delivered_records": delivered,
                  # {account: [domain ids]} for one day; {day: {account: [...]}} for a range
                  "incomplete_lists": dg.MetadataValue.json(
                      _incomplete_lists(manifests[0]) if first == last else
                      {str(first + timedelta(days=i)): _incomplete_lists(m)
                       for i, m in enumerate(manifests) if not m.complete}),
                  "incomplete_days": dg.MetadataValue.json(
                      [str(first + timedelta(days=i)) for i, m in enumerate(manifests) if not m.complete]),
                  "accounts": dg.MetadataValue.json(
                      {n: a.model_dump(include={"complete", "expected", "delivered", "excluded", "passes"})
                       for n, a in manifests[-1].accounts.items()})},
    )


extract_snapshots = build_extract_snapshots()
"""The unsharded extraction asset (daily partitions)."""


def _day_figures(report: ExtractionReport) -> dict[str, int]:
    """One day's ``requests``, ``rate_limited`` (429s), ``retries`` over every account, and its
    ``reread_passes`` (:func:`rank_pipeline.operations.run_history.reread_passes` of the lists read, not those
    resumed from a checkpoint)."""
    accounts = report.accounts.values()
    return {"requests": sum(a.requests for a in accounts), "rate_limited": sum(a.rate_limited for a in accounts),
            "retries": sum(a.retries for a in accounts),
            "reread_passes": reread_passes(r.passes for lists in report.lists.values() for r in lists if r.pages)}


def _incomplete_lists(manifest: SnapshotManifest) -> dict[str, list[str]]:
    return {n: a.incomplete_lists for n, a in manifest.accounts.items() if a.incomplete_lists}


def incomplete_message(endpoint: str, day: date, incomplete: dict[str, list[str]]) -> str:
    """The failed ``complete`` check's one-line message: what was not proven and what to do."""
    lists = sum(len(v) for v in incomplete.values())
    where = "; ".join(f"{n}: {', '.join(v[:5])}{' ...' if len(v) > 5 else ''}" for n, v in incomplete.items())
    return (
        f"{lists} list(s) of {endpoint} on {day} could not be proven complete ({where}): records kept "
        "being added and deleted between pages, so the ids read may not be the ids that exist. The "
        "warehouse was not loaded from this snapshot. Run the partition again when the account's "
        "keywords are not being edited, or give lists a larger settle budget (the source's ClientConfig "
        "settle_budget_requests, max_passes)."
    )
