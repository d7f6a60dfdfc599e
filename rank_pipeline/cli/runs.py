"""In-process runs of the Dagster jobs for ``run``, ``demo`` and ``rebuild``: the instance, one partition's run
or one run over a partition range (a single-run backfill) as the UI launches it (:func:`launch`), the daily
job's totals for the summary line, the one-line reason of a failure, and the alert digest sent at the end."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from rank_pipeline.cli.errors import RunFailed
from rank_pipeline.cli.output import SESSION
from rank_pipeline.operations.dagster_names import PARTITION_TAG, RANGE_END_TAG, RANGE_START_TAG


@dataclass
class Totals:
    """What a ``run`` or ``demo`` did, for its summary line."""

    days: int = 0
    rows: int = 0
    checks_passed: int = 0
    checks_failed: int = 0
    requests: int = 0
    rate_limited: int = 0
    sent: tuple[int, int] = (0, 0)
    """``(requests, 429s)`` this process sent during the runs (:func:`rank_pipeline.api.requests_sent`), refused
    ones included: a run that fails before its snapshots' metadata is written (a refused key) made them too."""
    failed: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    """``(day, asset, check, severity, failing rows)`` of every check that failed, in run order."""
    shape_lines: list[str] = field(default_factory=list)
    """The lines of the failed ``matches_contract`` checks (one per path of the vendor's shape)."""

    def add(self, result) -> None:
        """Add one finished run (an ``ExecuteInProcessResult``): its days (one, or those of its partition
        range), snapshot rows and requests, and its check evaluations."""
        from rank_pipeline.operations.run_history import partition_days

        tags = result.dagster_run.tags
        self.days += len(partition_days(tags)) or 1
        counted = set()  # a run over a range records one materialization per partition, each with the
        for event in result.get_asset_materialization_events():  # metadata of the whole range
            materialization = event.event_specific_data.materialization
            meta = materialization.metadata
            if materialization.asset_key.path[0] == "snapshots" and materialization.asset_key not in counted:
                counted.add(materialization.asset_key)
                self.rows += int(getattr(meta.get("rows"), "value", 0) or 0)
                if materialization.asset_key.path[-1] == "usage":  # the run's totals are on every snapshot
                    self.requests += int(getattr(meta.get("requests_total"), "value", 0) or 0)
                    self.rate_limited += int(getattr(meta.get("rate_limited_total"), "value", 0) or 0)
        day = partitions_label(tags)
        for evaluation in result.get_asset_check_evaluations():
            if evaluation.passed:
                self.checks_passed += 1
                continue
            self.checks_failed += 1
            meta = evaluation.metadata
            rows = getattr(meta.get("failing_rows"), "value", None)
            from rank_pipeline.defs.run_errors import is_blocking  # Dagster only once a run has ended

            blocking = is_blocking(evaluation)
            self.failed.append((day, evaluation.asset_key.to_user_string(), evaluation.check_name,
                                "ERROR (blocking)" if blocking else "WARN", "?" if rows is None else str(rows)))
            text = getattr(meta.get("failures"), "value", None)
            if evaluation.check_name == "matches_contract" and text:
                self.shape_lines += [line.removeprefix("- ") for line in str(text).splitlines()]

    def failure_lines(self, top: int = 10) -> list[str]:
        """One line per failed check (day, asset, check, severity, failing rows), at most ``top``, then a
        count; then the failing paths of the vendor's shape, at most ``top``, then a count."""
        lines = [f"failed check: {day} {asset} {check} [{severity}]: {rows} failing"
                 for day, asset, check, severity, rows in self.failed[:top]]
        if len(self.failed) > top:
            lines.append(f"... and {len(self.failed) - top} more failed check(s)")
        lines += [f"vendor shape: {line}" for line in self.shape_lines[:top]]
        if len(self.shape_lines) > top:
            lines.append(f"... and {len(self.shape_lines) - top} more path(s) of the vendor's shape")
        if self.shape_lines:
            lines.append("the vendor sends another shape than the contract reads: see what it sends with "
                         "`rank-pipeline profile`, edit the files named above, then `rank-pipeline rebuild` "
                         "(docs/tutorials/vendor-shape.md); the snapshots are kept")
        return lines

    def line(self, verdict: str) -> str:
        """The summary line; its requests and 429s are every one the runs sent, failed runs' included."""
        requests, limited = max(self.requests, self.sent[0]), max(self.rate_limited, self.sent[1])
        return (f"{verdict}: {self.days} day(s), {self.rows} snapshot rows, checks {self.checks_passed} passed / "
                f"{self.checks_failed} failed, {requests} requests, {limited} 429s")


def dagster_instance(data_dir: Path):
    from rank_pipeline.defs.instance import open_instance

    err = sys.stderr  # lock waits are for the user; storage warnings (PostgreSQL retries) for the log file
    with SESSION.capture():
        return open_instance(data_dir, log=lambda message: print(message, file=err))


def failure_reason(result) -> tuple[str, bool]:
    """``(one line, is_configuration)`` explaining why a Dagster run failed."""
    import dagster as dg

    from rank_pipeline.defs.run_errors import error_line, innermost_error, is_blocking

    blocking = [e for e in result.get_asset_check_evaluations() if not e.passed and is_blocking(e)]
    if blocking:
        names = ", ".join(f"{e.check_name} on {e.asset_key.to_user_string()}" for e in blocking[:3])
        more = f" and {len(blocking) - 3} more" if len(blocking) > 3 else ""
        return f"blocking check(s) failed ({names}{more}); nothing was published", False
    for event in result.all_events:
        if event.event_type == dg.DagsterEventType.STEP_FAILURE:
            error = innermost_error(event.event_specific_data.error)
            message = error_line(error)
            return f"step {event.step_key}: {message}", error is not None and error.cls_name == "ConfigurationError"
    failed = [e for e in result.get_asset_check_evaluations() if not e.passed]
    if failed:
        names = ", ".join(f"{e.check_name} on {e.asset_key.to_user_string()}" for e in failed[:3])
        return f"{len(failed)} check(s) failed ({names})", False
    return "the run did not succeed", False


def _send_alerts(instance, run_id: str) -> None:
    """The run's alert digest to ``RANK_PIPELINE_ALERT_URLS`` (:func:`rank_pipeline.defs.sensors.send_run_digest`);
    a failing destination is one warning on stderr, never a failed command."""
    from rank_pipeline.defs.sensors import send_run_digest

    warnings: list[str] = []
    with SESSION.capture():
        send_run_digest(instance, run_id, warn=warnings.append)
    for message in warnings:
        SESSION.write(f"warning: {message}")
        print(f"warning: {message}", file=sys.stderr)


def partitions_label(tags) -> str:
    """A run's partition (``2026-03-02``) or partition range (``2026-03-01..2026-03-07``), from its tags."""
    if tags.get(PARTITION_TAG):
        return tags[PARTITION_TAG]
    if tags.get(RANGE_START_TAG):
        return f"{tags[RANGE_START_TAG]}..{tags.get(RANGE_END_TAG, '')}"
    return ""


def run_partition(defs, instance, day: date, totals: Totals) -> None:
    """Run the daily job for ``day``; its log goes to the session's log file. Raises RunFailed."""
    _run_daily_job(defs, instance, totals, day, day)


def run_partition_range(defs, instance, first: date, last: date, totals: Totals,
                        on_step: Callable[[int, str], None] | None = None) -> str:
    """Run the daily job ONCE over the partitions ``first .. last`` (:func:`launch`). ``on_step(steps_done,
    step_key)`` is called as each step of the run ends (succeeded, failed or skipped). Returns the run id.
    Its log goes to the session's log file. Raises RunFailed."""
    return _run_daily_job(defs, instance, totals, first, last, on_step=on_step)


def _step_listener(on_step: Callable[[int, str], None]):
    """An instance event listener calling ``on_step`` on each step's end event."""
    import dagster as dg

    ended = {dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.STEP_SKIPPED}
    done: set[str] = set()

    def listen(entry) -> None:
        event = entry.dagster_event
        if event is not None and event.event_type in ended and event.step_key not in done:
            done.add(event.step_key)
            on_step(len(done), event.step_key)

    return listen


def launch(defs, instance, job_name: str, first: date, last: date, *,
           on_step: Callable[[int, str], None] | None = None):
    """One in-process run of the job ``job_name`` of ``defs`` over the partitions ``first .. last``, as the UI
    launches it: one partition's run, or a single-run backfill of the range (run tags
    ``dagster/asset_partition_range_start`` / ``_end``; every asset has ``BackfillPolicy.single_run()``),
    with the job's own tags, the process tags and ``launched_by=cli``; its log goes to the session's log
    file, then the run's alert digest is sent. ``on_step`` as :func:`run_partition_range`.

    Returns:
        The ``ExecuteInProcessResult``, whether the run succeeded or not.
    """
    from rank_pipeline.defs.process_tags import process_tags
    from rank_pipeline.operations.run_history import LAUNCHED_BY_TAG

    if first == last:
        tags, key = {}, first.isoformat()
    else:
        tags, key = {RANGE_START_TAG: first.isoformat(), RANGE_END_TAG: last.isoformat()}, None
    job = defs.resolve_job_def(job_name)
    run_config = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
    run_tags = {**tags, **process_tags(), LAUNCHED_BY_TAG: "cli"}  # ops.run_history's launched_by
    run_id = str(uuid.uuid4())
    if on_step is not None:
        instance.add_event_listener(run_id, _step_listener(on_step))
    with SESSION.capture():
        result = job.execute_in_process(partition_key=key, instance=instance, tags=run_tags,
                                        run_config=run_config, run_id=run_id, raise_on_error=False)
    _send_alerts(instance, result.run_id)
    return result


def _run_daily_job(defs, instance, totals: Totals, first: date, last: date, *,
                   on_step: Callable[[int, str], None] | None = None) -> str:
    """One in-process run of the daily job over ``first .. last`` (:func:`launch`); returns its run id.
    Raises RunFailed, or ConfigurationError when a step failed on a setting."""
    from rank_pipeline.api import requests_sent
    from rank_pipeline.defs.jobs import DAILY_JOB_NAME
    from rank_pipeline.defs.run_errors import lock_timeout_message
    from rank_pipeline.settings import ConfigurationError

    before = requests_sent()
    result = launch(defs, instance, DAILY_JOB_NAME, first, last, on_step=on_step)
    after = requests_sent()
    totals.sent = (totals.sent[0] + after[0] - before[0], totals.sent[1] + after[1] - before[1])
    totals.add(result)
    if not result.success:
        if message := lock_timeout_message(result):
            raise RunFailed(message)
        reason, configuration = failure_reason(result)
        label = str(first) if first == last else f"{first} .. {last}"
        message = f"the daily job failed for {label}: {reason}"
        if configuration:
            raise ConfigurationError(message)
        raise RunFailed(message)
    return result.run_id
