"""``rank-pipeline rebuild``: the Dagster job ``rebuild_from_snapshots`` (``rebuild_full_refresh`` with
``--full-refresh``) run in process over the days asked for (:func:`rank_pipeline.cli.runs.launch`), the job
holding the sequence (:mod:`rank_pipeline.defs.jobs`); here the range is checked (exit 2) and summarised.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from datetime import date

from rank_pipeline.cli.args import today
from rank_pipeline.cli.errors import RunFailed, UsageError
from rank_pipeline.cli.output import SESSION, Progress, is_tty, load_settings

__all__ = ["RebuildSummary", "check_range", "cmd_rebuild", "rebuild_days"]


@dataclass
class RebuildSummary:
    """What a run of a rebuild job did, read from its events (:meth:`of`): ``first``, ``last``, ``full_refresh``;
    ``days`` and ``raw_rows`` loaded; ``models`` materialized; ``tests_passed``, ``tests_failed``
    (``relation.test: n failing``); ``blocking_failed`` and ``shape_failed`` (with ``shape_lines``) checks;
    ``published`` (the file), or ``written_to`` (Spark's tables).
    """

    first: date
    last: date
    full_refresh: bool
    days: int = 0
    raw_rows: int = 0
    models: int = 0
    tests_passed: int = 0
    tests_failed: list[str] = field(default_factory=list)
    blocking_failed: list[str] = field(default_factory=list)
    shape_failed: list[str] = field(default_factory=list)
    shape_lines: list[str] = field(default_factory=list)
    published: str | None = None
    written_to: str | None = None

    @classmethod
    def of(cls, result, first: date, last: date, full_refresh: bool) -> RebuildSummary:
        """The summary of ``result`` (an ``ExecuteInProcessResult`` of a rebuild job over ``first .. last``)."""
        from rank_pipeline.defs.run_errors import is_blocking
        from rank_pipeline.defs.warehouse_assets import PUBLISHED_KEY, RAW_KEYS
        from rank_pipeline.steps.shape import SHAPE_CHECK
        from rank_pipeline.transform.dependencies import MODEL_SCHEMAS, RAW_SCHEMA

        summary = cls(first, last, full_refresh)
        seen = set()  # a run over a range records one materialization per partition, each of the whole range
        for event in result.get_asset_materialization_events():
            materialization = event.event_specific_data.materialization
            key, meta = materialization.asset_key, materialization.metadata
            if key in seen:
                continue
            seen.add(key)
            if key in RAW_KEYS.values():
                summary.raw_rows += int(_value(meta, "rows") or 0)
                summary.days = max(summary.days, int(_value(meta, "days") or 0))
            elif key.path[0] in MODEL_SCHEMAS:
                summary.models += 1
            elif key == PUBLISHED_KEY:
                summary.published = _value(meta, "path")
                summary.written_to = _value(meta, "warehouse_uri")
        for evaluation in result.get_asset_check_evaluations():
            rows = _value(evaluation.metadata, "failing_rows")
            line = (f"{'.'.join(evaluation.asset_key.path)}.{evaluation.check_name}: "
                    f"{'?' if rows is None else rows} failing")
            raw = evaluation.asset_key.path[0] == RAW_SCHEMA
            if evaluation.check_name == SHAPE_CHECK and raw:
                if not evaluation.passed:
                    summary.shape_failed.append(line)
                    text = str(_value(evaluation.metadata, "failures") or "")
                    summary.shape_lines += [t.removeprefix("- ") for t in text.splitlines() if t.startswith("- ")]
                continue
            if not raw:
                summary.tests_passed += evaluation.passed
                summary.tests_failed += [] if evaluation.passed else [line]
            if not evaluation.passed and is_blocking(evaluation):
                summary.blocking_failed.append(line)
        return summary

    def line(self) -> str:
        """One line: days, rows, models, tests passed/failed, where it was published (or written, on Spark)."""
        span = "every snapshot day" if self.full_refresh else f"{self.first} .. {self.last}"
        where = (f"published {self.published}" if self.published
                 else f"written as Parquet tables under {self.written_to} (Spark)" if self.written_to
                 else "NOT published")
        return (f"rebuilt {span}{' (full refresh)' if self.full_refresh else ''}: {self.days} day(s), "
                f"{self.raw_rows:,} raw rows, {self.models} models, tests {self.tests_passed} passed, "
                f"{len(self.tests_failed)} failed; {where}")


def _value(metadata, name: str):
    """The plain value of a metadata entry (None when absent)."""
    entry = metadata.get(name)
    return getattr(entry, "value", entry)


def check_range(first: date | None, last: date | None, full_refresh: bool) -> None:
    """Refuse ``--full-refresh`` with a range, and ``--from`` after ``--to`` (UsageError, before anything runs)."""
    if full_refresh and (first is not None or last is not None):
        raise UsageError("--full-refresh rebuilds every day; drop --from/--to, or drop --full-refresh")
    if first is not None and last is not None and first > last:
        raise UsageError(f"--from {first} is after --to {last}; swap them")


def rebuild_days(committed: list[date], first: date | None, last: date | None,
                 partitions: tuple[date, date], where: str) -> tuple[date, date]:
    """The partitions ``(first, last)`` a rebuild runs over: ``--from``/``--to`` (None: the first and last of
    the ``committed`` snapshot days), within the daily ``partitions`` (first, last).

    Raises:
        UsageError: no committed snapshot in the range (``where`` names the snapshots' location), or one after
            the last partition.
    """
    days = [d for d in committed if (first is None or d >= first) and (last is None or d <= last)]
    if not days:
        span = f"between {first or 'the first day'} and {last or 'the last day'} " if first or last else ""
        raise UsageError(f"no committed snapshot {span}under {where}; extract days first "
                         "(`rank-pipeline run --date D`) or widen the range")
    if days[-1] > partitions[1]:
        raise UsageError(f"the snapshot of {days[-1]} is after the last daily partition {partitions[1]} (today, "
                         "UTC); pass --to with an earlier day")
    return max(first or days[0], partitions[0]), min(last or days[-1], partitions[1])


def _step_failure(result) -> tuple[str, bool] | None:
    """``(one line, is_configuration)`` of the first failed step: the error its code raised (Dagster's wrappers
    skipped), whose message says what to do, not the low-level cause it wraps; None when no step failed."""
    import dagster as dg

    for event in result.all_events:
        if event.event_type == dg.DagsterEventType.STEP_FAILURE:
            error = event.event_specific_data.error
            while error.cause is not None and error.cls_name.startswith("Dagster"):
                error = error.cause
            lines = [line.strip() for line in (error.message or "").splitlines() if line.strip()]
            text = lines[0] if lines else error.cls_name
            if f"{error.cls_name}: " in text[:200]:  # the class, module-qualified, before the message
                text = text.split(f"{error.cls_name}: ", 1)[1]
            return f"step {event.step_key}: {text}", error.cls_name == "ConfigurationError"
    return None


def cmd_rebuild(args: argparse.Namespace) -> int:
    from rank_pipeline.cli.runs import dagster_instance, failure_reason, launch
    from rank_pipeline.defs.jobs import REBUILD_FULL_REFRESH_JOB_NAME, REBUILD_JOB_NAME
    from rank_pipeline.defs.run_errors import lock_timeout_message
    from rank_pipeline.settings import ConfigurationError
    from rank_pipeline.settings.engine import needs_warehouse_uri
    from rank_pipeline.warehouse.raw_load import snapshot_dates

    settings = load_settings()  # a bad setting (RANK_PIPELINE_ENGINE included) is exit 2, nothing run
    check_range(args.first, args.last, args.full_refresh)
    with SESSION.capture():
        from rank_pipeline.defs.definitions import defs
    name = REBUILD_FULL_REFRESH_JOB_NAME if args.full_refresh else REBUILD_JOB_NAME
    job = defs.resolve_job_def(name)
    uri = settings.paths.snapshot_store_uri
    start = job.partitions_def.get_first_partition_key() if job.partitions_def is not None else None
    first, last = rebuild_days(list(snapshot_dates(uri)), args.first, args.last,
                               (date.fromisoformat(start) if start else today(), today()), str(uri))
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    instance = dagster_instance(settings.data_dir)  # the runs are recorded where the UI shows them
    progress = None
    on_step = None
    if is_tty(sys.stdout):  # a bar on a terminal; scripts read the summary line alone
        steps = len(job.graph.nodes)
        progress = Progress(f"{name} {first}" if first == last else f"{name} {first}..{last}", "step", total=steps)
        on_step = lambda done, step: progress.update(done, steps, last=step)  # noqa: E731
    try:
        result = launch(defs, instance, name, first, last, on_step=on_step)
    finally:
        if progress is not None:
            progress.close()
    summary = RebuildSummary.of(result, first, last, args.full_refresh)
    if result.success:
        print(summary.line())
        return 0
    if message := lock_timeout_message(result):
        raise RunFailed(message)
    if summary.shape_failed:
        for line in summary.shape_lines:
            print(f"vendor shape: {line}", file=sys.stderr)
        raise RunFailed(f"the vendor's shape does not match the contract ({'; '.join(summary.shape_failed)}): nothing "
                        "was built or published; the paths and what to edit are listed above")
    if summary.blocking_failed:
        engine = settings.engine
        where = engine.spark_warehouse_uri if needs_warehouse_uri(engine) else settings.paths.build_db
        raise RunFailed(f"blocking data test(s) failed, the published warehouse was left as it was: "
                        f"{'; '.join(summary.blocking_failed[:5])}. Inspect them in {where}")
    reason, configuration = _step_failure(result) or failure_reason(result)
    label = str(first) if first == last else f"{first} .. {last}"
    message = f"the {name} job failed for {label}: {reason}"
    if configuration:
        raise ConfigurationError(message)
    raise RunFailed(message)
