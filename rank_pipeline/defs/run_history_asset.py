"""The ``ops/run_history`` asset: the warehouse records its own runs (:mod:`rank_pipeline.operations.run_history`),
read through Dagster's public instance API, after every model and before ``warehouse/published``.

It writes the run's provisional rows, catches up at most :data:`CATCH_UP_LIMIT` finished runs without final
rows, and runs ``run_history.yml``'s tests as non-blocking checks. Details: docs/concepts/dagster.md, "Run
history".
"""


import time
from collections.abc import Iterable
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg

from rank_pipeline.defs.extract_assets import SNAPSHOT_KEYS
from rank_pipeline.defs.partitions import daily_partitions, deliberate_beta
from rank_pipeline.defs.resources import WarehouseResource
from rank_pipeline.defs.run_errors import error_line, is_blocking
from rank_pipeline.defs.run_events import run_events
from rank_pipeline.operations.dagster_names import EXTRACT_STEP, LOAD_STEP, PUBLISH_STEPS, RUN_HISTORY_PATH
from rank_pipeline.operations.run_history import (
    TABLE,
    DayFigures,
    RunFacts,
    finalize,
    launched_by,
    partition_days,
    recorded_runs,
    set_checks,
    upsert,
)
from rank_pipeline.settings import models_dir
from rank_pipeline.transform import DuckDBEngine, PipelineTable, loaded_project, run_tests
from rank_pipeline.transform.sql import one_row

__all__ = ["CATCH_UP_LIMIT", "RUN_FACT_EVENTS", "RUN_HISTORY_KEY", "build_run_history_asset", "check_label", "run_facts",
           "stage_of"]

RUN_HISTORY_KEY = dg.AssetKey(list(RUN_HISTORY_PATH))
RUN_FACT_EVENTS = {dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE,
                   dg.DagsterEventType.ASSET_CHECK_EVALUATION, dg.DagsterEventType.ASSET_MATERIALIZATION,
                   dg.DagsterEventType.RUN_FAILURE}
"""The kinds of event :func:`run_facts` reads: a run's log is read with these only, not its planned events,
outputs and log lines, about two thirds of it; of its materializations only the ``snapshots/*`` ones
(:func:`rank_pipeline.defs.run_events.run_events`)."""
STEP_EVENTS = {dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE,
               dg.DagsterEventType.RUN_FAILURE}
"""The kinds of event read to make a successful run's provisional rows final (:func:`_catch_up`): its steps'
starts and ends, about a quarter of :data:`RUN_FACT_EVENTS` (its asset check evaluations are most of them)."""
CATCH_UP_LIMIT = 200
"""Finished runs without final rows written by one run (newest first); older ones follow next runs."""

_ENDED = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)
_STATUS = {dg.DagsterRunStatus.SUCCESS: "success", dg.DagsterRunStatus.FAILURE: "failure",
           dg.DagsterRunStatus.CANCELED: "canceled"}


def stage_of(step_key: str) -> str:
    """The stage of :data:`rank_pipeline.operations.run_history.STAGES` a step belongs to (seeds and models: ``models``)."""
    if step_key == EXTRACT_STEP:
        return "extract"
    if step_key == LOAD_STEP:
        return "load"
    if step_key in PUBLISH_STEPS:
        return "publish"
    return "models"


def check_label(asset_key: dg.AssetKey, check_name: str, blocking: bool) -> str:
    """How ``failed_checks`` names a failed check: ``<asset>:<check> [ERROR]`` (blocking) or ``[WARN]``."""
    return f"{asset_key.to_user_string()}:{check_name} [{'ERROR' if blocking else 'WARN'}]"


def _ts(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, UTC) if value is not None else None


def _int(meta: dict, name: str) -> int | None:
    value = getattr(meta.get(name), "value", meta.get(name))
    return int(value) if isinstance(value, int | float) else None


def run_facts(record: dg.RunRecord, events: Iterable[dg.EventLogEntry], *, now: datetime | None = None) -> RunFacts | None:
    """The :class:`rank_pipeline.operations.run_history.RunFacts` of one run, from its record and event log.

    With ``now`` the run is the running one writing its own rows: status ``success``, end ``now``,
    steps not ended yet count until ``now``, ``final`` false. None for a run without a partition.
    """
    run = record.dagster_run
    days = partition_days(run.tags)
    if not days:
        return None
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    passed = failed = 0
    by_day: dict[date, DayFigures] = {}
    failed_step = reason = None
    failed_checks: list[str] = []
    for entry in events:
        event = entry.dagster_event
        if event is None:
            continue
        kind, step = event.event_type, event.step_key
        if kind == dg.DagsterEventType.STEP_START and step is not None:
            starts.setdefault(step, entry.timestamp)
        elif kind in (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE) and step is not None:
            ends[step] = entry.timestamp
            if kind == dg.DagsterEventType.STEP_FAILURE and failed_step is None:
                failed_step, reason = step, error_line(event.step_failure_data.error, whole=True)
        elif kind == dg.DagsterEventType.ASSET_CHECK_EVALUATION:
            evaluation = event.asset_check_evaluation_data
            if evaluation.passed:
                passed += 1
            else:
                failed += 1
                failed_checks.append(check_label(evaluation.asset_key, evaluation.check_name, is_blocking(evaluation)))
        elif kind == dg.DagsterEventType.ASSET_MATERIALIZATION:
            _add_snapshot_figures(by_day, event.step_materialization_data.materialization, days)
        elif kind == dg.DagsterEventType.RUN_FAILURE and reason is None:
            reason = event.message
    stop = now.timestamp() if now is not None else None
    seconds: dict[str, float] = {}
    for step, started in starts.items():
        ended = ends.get(step, stop if stop is not None else record.end_time)
        if ended is not None:
            stage = stage_of(step)
            seconds[stage] = seconds.get(stage, 0.0) + max(0.0, ended - started)
    return RunFacts(
        run_id=run.run_id, job_name=run.job_name, launched_by=launched_by(run.tags),
        status="success" if now is not None else _STATUS.get(run.status, run.status.value.lower()),
        started_at=_ts(record.start_time), ended_at=now if now is not None else _ts(record.end_time),
        days=days, figures=by_day, checks_passed=passed, checks_failed=failed,
        failed_checks=failed_checks, stage_seconds=seconds,
        failed_step=failed_step, failure_reason=reason if (failed_step or now is None) else None,
        final=now is None)


def _add_snapshot_figures(by_day: dict[date, DayFigures], materialization, days: list[date]) -> None:
    """Fold one ``snapshots/<endpoint>`` materialization's metadata into ``by_day`` (once per endpoint:
    a range run records the same metadata on each partition)."""
    path = materialization.asset_key.path
    if len(path) != 2 or path[0] != "snapshots":
        return
    endpoint, meta = path[1], materialization.metadata
    per_day = getattr(meta.get("by_day"), "value", None)
    if not isinstance(per_day, dict):  # written before by_day existed: the run's totals, one-day runs only
        if len(days) != 1:
            return
        per_day = {str(days[0]): {"rows": _int(meta, "rows"), "requests": _int(meta, "requests_total"),
                                  "rate_limited": _int(meta, "rate_limited_total"),
                                  "retries": _int(meta, "retries_total"),
                                  "reread_passes": _int(meta, "reread_passes_total")}}
    for day_text, figures in per_day.items():
        day = date.fromisoformat(day_text)
        fig = by_day.setdefault(day, DayFigures())
        if endpoint in fig.rows:
            continue
        fig.rows[endpoint] = int(figures.get("rows") or 0)
        fig.requests = int(figures.get("requests") or 0)
        fig.rate_limited = int(figures.get("rate_limited") or 0)
        fig.retries = int(figures.get("retries") or 0)
        fig.reread_passes = int(figures.get("reread_passes") or 0)


def _catch_up(instance: dg.DagsterInstance, recorded: dict[str, bool],
              current: str) -> tuple[list[RunFacts], list[RunFacts]]:
    """The newest :data:`CATCH_UP_LIMIT` finished runs (not ``current``) without final rows, as ``(runs to write
    whole, runs to make final)``; ``recorded``: :func:`rank_pipeline.operations.run_history.recorded_runs`.
    Read newest first, 100 a page, stopping at a page whose runs are all final (docs/concepts/dagster.md,
    "Run history").
    """
    whole: list[RunFacts] = []
    finals: list[RunFacts] = []
    cursor = None
    while len(whole) + len(finals) < CATCH_UP_LIMIT:
        records = instance.get_run_records(filters=dg.RunsFilter(statuses=list(_ENDED)), limit=100, cursor=cursor)
        pending = [r for r in records if not recorded.get(r.dagster_run.run_id) and r.dagster_run.run_id != current]
        if not pending:
            break
        for record in pending[:CATCH_UP_LIMIT - len(whole) - len(finals)]:
            run = record.dagster_run
            provisional = run.run_id in recorded and run.status == dg.DagsterRunStatus.SUCCESS
            facts = run_facts(record, run_events(instance, record, STEP_EVENTS if provisional else RUN_FACT_EVENTS,
                                                   SNAPSHOT_KEYS.values()))
            if facts is not None:
                (finals if provisional else whole).append(facts)
        cursor = records[-1].dagster_run.run_id
    return whole, finals


def _history_table(project_dir: Path | None) -> PipelineTable | None:
    """The ``ops.run_history`` declaration of the models project ``project_dir`` (default
    :func:`models_dir`); None when the project has none, e.g. an older copy of ``dbt_like_sql/`` in
    ``RANK_PIPELINE_MODELS_DIR``."""
    return loaded_project(project_dir or models_dir()).tables.get(TABLE)


@deliberate_beta
def build_run_history_asset(model_keys: list[dg.AssetKey], raw_keys: list[dg.AssetKey],
                            project_dir: Path | None = None, days: dg.DailyPartitionsDefinition = daily_partitions
                            ) -> dg.AssetsDefinition:
    """``ops/run_history``: after every model, before ``warehouse/published`` (docs/concepts/dagster.md, "Run
    history"); its
    tests are those ``project_dir`` declares (default :func:`models_dir`); partitioned by ``days``."""
    table = _history_table(project_dir)
    specs = [dg.AssetCheckSpec(t.name, asset=RUN_HISTORY_KEY, blocking=False, description=t.describe())
             for t in (table.tests if table is not None else ())]

    @dg.asset(key=RUN_HISTORY_KEY, deps=[*raw_keys, *model_keys], partitions_def=days,
              backfill_policy=dg.BackfillPolicy.single_run(), group_name="ops", kinds={"duckdb"},
              check_specs=specs,
              description=(table.description if table is not None else "ops.run_history: one row per run and "
                           "partition.") + " Kept across rebuilds.")
    def run_history(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
        from rank_pipeline.defs.model_assets import check_results  # one builder of check results

        started = time.perf_counter()
        instance = context.instance
        run_id = context.run.run_id
        record = instance.get_run_records(filters=dg.RunsFilter(run_ids=[run_id]), limit=1)[0]
        with warehouse.warehouse().connect() as con:
            whole, finals = _catch_up(instance, recorded_runs(con), run_id)
            own = run_facts(record, run_events(instance, record, RUN_FACT_EVENTS, SNAPSHOT_KEYS.values()), now=datetime.now(UTC))
            written = upsert(con, whole + ([own] if own is not None else []))
            written += sum(finalize(con, facts) for facts in finals)
            results = run_tests(DuckDBEngine(con), table, None) if table is not None else []
            if own is not None and results:  # this step's evaluations count in the run's own rows
                ok = sum(r.passed for r in results)
                own.checks_passed += ok
                own.checks_failed += len(results) - ok
                own.failed_checks += [check_label(RUN_HISTORY_KEY, r.name, False) for r in results if not r.passed]
                set_checks(con, own)
            (total,) = one_row(con, f"select count(*) from {TABLE}")
            others = whole + finals
        context.log.info(f"{TABLE}: wrote {written} row(s) ({len(others)} other run(s) caught up) in "
                         f"{time.perf_counter() - started:.2f} s; {total} row(s) in all")
        yield dg.MaterializeResult(asset_key=RUN_HISTORY_KEY, metadata={
            "rows_written": dg.MetadataValue.int(written), "runs_caught_up": dg.MetadataValue.int(len(others)),
            "caught_up_run_ids": dg.MetadataValue.json([f.run_id for f in others][:20]),
            "table_rows": dg.MetadataValue.int(int(total))})
        yield from check_results(RUN_HISTORY_KEY, results)  # WARN severity: the tests are not blocking

    return run_history
