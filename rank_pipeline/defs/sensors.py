"""Alert sensors (:mod:`rank_pipeline.operations.alerts`): ``alerts_on_run_success``, ``alerts_on_run_failure``
(:func:`send_run_digest`) and ``alerts_on_stale_assets``, on by default, each alert sent once per destination
(docs/concepts/dagster.md, "Alert sensors").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

import dagster as dg

from rank_pipeline.defs.partitions import DATE_TAG
from rank_pipeline.defs.run_errors import error_line, is_blocking
from rank_pipeline.defs.run_events import run_events
from rank_pipeline.defs.warehouse_assets import PUBLISHED_KEY
from rank_pipeline.operations.alerts import Alert, SendReport, ranking_alerts, redact, send_digest
from rank_pipeline.operations.dagster_names import PARTITION_TAG, RANGE_END_TAG, RANGE_START_TAG
from rank_pipeline.settings import SENSOR_INTERVAL_S, ConfigurationError, Settings

__all__ = ["RunOutcome", "build_alert_sensors", "run_outcome", "send_run_digest", "stale_asset_alerts"]

RANGE_TAGS = (RANGE_START_TAG, RANGE_END_TAG)


@dataclass
class RunOutcome:
    """What a finished run tells the alerts: its id, job, status (``SUCCESS``, ``FAILURE``, ...), the first
    and last day of its partitions (None for an unpartitioned run), the failed step and its cause, the
    failed blocking checks ``(asset, check, partition, failing rows)``, and whether it published."""

    run_id: str
    job_name: str
    status: str
    first: date | None = None
    last: date | None = None
    failed_step: str | None = None
    cause: str | None = None
    failed_checks: list[tuple[str, str, str, int | None]] = field(default_factory=list)
    warned_checks: list[tuple[str, str, str, int | None]] = field(default_factory=list)
    new_fields: dict[str, dict[str, str]] = field(default_factory=dict)
    published: bool = False

    @property
    def days(self) -> str:
        if self.first is None:
            return "no partition"
        return self.first.isoformat() if self.first == self.last else f"{self.first}..{self.last}"


def _day(text: str | None) -> date | None:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        return None


def run_outcome(instance: dg.DagsterInstance, run_id: str) -> RunOutcome | None:
    """Read a run's outcome from the instance's event log (None when the run is unknown)."""
    records = instance.get_run_records(filters=dg.RunsFilter(run_ids=[run_id]), limit=1)
    if not records:
        return None
    run = records[0].dagster_run
    tags = run.tags
    # a shard run's partition is "<day>|<i>-of-<n>": its day is its date dimension's tag
    first = _day(tags.get(DATE_TAG) or tags.get(PARTITION_TAG) or tags.get(RANGE_TAGS[0]))
    last = _day(tags.get(DATE_TAG) or tags.get(PARTITION_TAG) or tags.get(RANGE_TAGS[1])) or first
    outcome = RunOutcome(run_id, run.job_name, run.status.value, first, last)
    kinds = {dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.RUN_FAILURE,
             dg.DagsterEventType.ASSET_CHECK_EVALUATION, dg.DagsterEventType.ASSET_MATERIALIZATION}
    for entry in run_events(instance, records[0], kinds, [PUBLISHED_KEY]):
        event = entry.dagster_event
        if event is None:
            continue
        if event.event_type == dg.DagsterEventType.STEP_FAILURE and outcome.failed_step is None:
            outcome.failed_step = event.step_key
            outcome.cause = error_line(event.step_failure_data.error)
        elif event.event_type == dg.DagsterEventType.RUN_FAILURE and outcome.cause is None:
            error = getattr(event.event_specific_data, "error", None)
            outcome.cause = error_line(error) if error is not None else (event.message or "the run failed")
        elif event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
            if event.asset_key == PUBLISHED_KEY:
                outcome.published = True
        elif event.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION:
            evaluation = event.asset_check_evaluation_data
            blocking = is_blocking(evaluation)
            meta = evaluation.metadata
            new = getattr(meta.get("new_fields"), "value", None)
            if isinstance(new, dict) and new:
                endpoint = evaluation.asset_key.path[-1]
                outcome.new_fields.setdefault(endpoint, {}).update(new)
            if not evaluation.passed:
                rows = getattr(meta.get("failing_rows"), "value", None)
                partition = getattr(meta.get("partition"), "value", None) or evaluation.partition or outcome.days
                (outcome.failed_checks if blocking else outcome.warned_checks).append(
                    (evaluation.asset_key.to_user_string(), evaluation.check_name, str(partition),
                     None if rows is None else int(rows)))
    return outcome


def _secrets(settings: Settings) -> list[str]:
    """The API keys (every key of every configured account) and Dagster's PostgreSQL URL."""
    from rank_pipeline.extract.source import read_keys

    secrets = [settings.ops.dagster_pg_url or ""]
    try:
        secrets += [key for source in read_keys(settings.accounts) for key in source.api_key.split(",")]
    except (ConfigurationError, AttributeError):  # no key configured (the embedded sandbox): nothing to hide
        pass
    return secrets


def send_run_digest(instance: dg.DagsterInstance, run_id: str, settings: Settings | None = None,
                    warn: Callable[[str], object] | None = None) -> SendReport:
    """Send the digest of a finished run to every ``RANK_PIPELINE_ALERT_URLS`` destination (module
    docstring says what it holds); alerts already sent are left out, and nothing is sent when there is
    nothing to tell. Never raises: problems are warnings through ``warn``."""
    warn = warn or (lambda message: None)
    try:
        settings = settings or Settings.from_env()
        if not settings.ops.alert_urls:
            return SendReport()
        outcome = run_outcome(instance, run_id)
        if outcome is None:
            return SendReport()
        alerts: list[Alert] = []
        if outcome.status == dg.DagsterRunStatus.FAILURE.value:
            step = f"step {outcome.failed_step}" if outcome.failed_step else "the run"
            alerts.append(Alert(f"run_failed:{run_id}", "run_failed",
                                f"{outcome.job_name} for {outcome.days} failed at {step}: {outcome.cause or 'failed'} "
                                f"(run {run_id})"))
        for asset, check, partition, rows in outcome.failed_checks:
            alerts.append(Alert(f"check_failed:{asset}:{check}:{partition}", "check_failed",
                                f"{check} on {asset}, partition {partition}: "
                                f"{'?' if rows is None else rows} failing row(s)"))
        for asset, check, partition, rows in outcome.warned_checks:
            alerts.append(Alert(f"check_warned:{asset}:{check}:{partition}", "check_warned",
                                f"{check} on {asset}, partition {partition}: "
                                f"{'?' if rows is None else rows} failing row(s)"))
        for endpoint, paths in sorted(outcome.new_fields.items()):
            listed = ", ".join(f"{p} ({seen})" for p, seen in sorted(paths.items()))
            alerts.append(Alert(f"new_fields:{endpoint}:{','.join(sorted(paths))}", "new_fields",
                                f"new fields in the vendor's {endpoint} records: {listed}"))
        if outcome.published and outcome.first is not None and outcome.last is not None:
            try:
                alerts += ranking_alerts(settings.paths.published_db, outcome.first, outcome.last)
            except Exception as exc:  # noqa: BLE001 - the run's other alerts still go out
                warn(f"alerts: the ranking alerts of {outcome.days} could not be read from "
                     f"{settings.paths.published_db}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
        if not alerts:
            return SendReport()
        verdict = "FAILED" if outcome.status == dg.DagsterRunStatus.FAILURE.value else "succeeded"
        ranking = sum(a.kind not in ("run_failed", "check_failed", "check_warned", "new_fields") for a in alerts)
        title = (f"rank-pipeline {outcome.days}: run {verdict}"
                 + (f" at {outcome.failed_step}" if outcome.failed_step else "")
                 + (f", {ranking} ranking alert(s)" if ranking else ""))
        header = [f"Run {run_id} of {outcome.job_name} for {outcome.days}: {verdict}.",
                  "Warehouse published." if outcome.published else "Warehouse not published by this run."]
        return send_digest(settings.ops.alert_urls, settings.paths.alerts_ledger, run_id, title, alerts,
                           header=header, secrets=_secrets(settings), warn=warn)
    except Exception as exc:  # noqa: BLE001 - alerts never fail the pipeline
        hidden = list(settings.ops.alert_urls) if settings is not None else []
        warn(f"alerts: the digest of run {run_id} was not sent: {type(exc).__name__}: "
             f"{redact(str(exc), hidden).splitlines()[0] if str(exc) else ''}")
        return SendReport()


def stale_asset_alerts(instance: dg.DagsterInstance, keys: Sequence[dg.AssetKey], hours: float) -> list[Alert]:
    """One alert per asset of ``keys`` whose freshness state (evaluated by Dagster's freshness daemon) is
    ``FAIL``; its id holds the time the state changed, so each failure is told once."""
    records = instance.get_freshness_state_records(list(keys))
    alerts = []
    now = datetime.now(UTC).timestamp()
    for key in keys:
        record = records.get(key)
        if record is None or getattr(record.freshness_state, "value", str(record.freshness_state)) != "FAIL":
            continue
        latest = instance.get_latest_materialization_event(key)
        age = _age(now - latest.timestamp) + " ago" if latest is not None else "never"
        name = key.to_user_string()
        alerts.append(Alert(f"freshness_failed:{name}:{int(record.updated_at.timestamp())}", "freshness_failed",
                            f"{name}: last materialized {age} (allowed: {_age(hours * 3600)})",
                            (key != PUBLISHED_KEY, name)))  # the published file first
    return alerts


def _age(seconds: float) -> str:
    """``26.0 h`` from two hours on, else ``95 min``."""
    return f"{seconds / 3600:.1f} h" if seconds >= 7200 else f"{seconds / 60:.0f} min"


def build_alert_sensors(watched: Sequence[dg.AssetKey], settings: Settings) -> list[dg.SensorDefinition]:
    """The three alert sensors (docs/concepts/dagster.md, "Alert sensors"); ``watched``: the assets with a
    freshness policy;
    ``settings``: those the definitions are built from (destinations, freshness), read once per process."""

    def _warn(context):
        return lambda message: context.log.warning(message)

    def _send(context: dg.RunStatusSensorContext) -> None:
        """The run's digest, one for either outcome (``send_run_digest`` reads which from the run)."""
        run_id = context.dagster_run.run_id
        report = send_run_digest(context.instance, run_id, settings, warn=_warn(context))
        context.log.info(f"digest of run {run_id}: sent to destination(s) {sorted(report.sent) or 'none'}, "
                         f"{report.skipped} alert(s) already sent")

    @dg.run_status_sensor(run_status=dg.DagsterRunStatus.SUCCESS, name="alerts_on_run_success",
                          monitor_all_code_locations=True, minimum_interval_seconds=SENSOR_INTERVAL_S,
                          default_status=dg.DefaultSensorStatus.RUNNING,
                          description="Sends the digest of each successful run (ranking alerts of the days it "
                                      "published, failed blocking checks) to RANK_PIPELINE_ALERT_URLS.")
    def alerts_on_run_success(context: dg.RunStatusSensorContext):
        _send(context)

    @dg.run_failure_sensor(name="alerts_on_run_failure", monitor_all_code_locations=True,
                           minimum_interval_seconds=SENSOR_INTERVAL_S,
                           default_status=dg.DefaultSensorStatus.RUNNING,
                           description="Sends the digest of each failed run (the failed step and its cause, "
                                       "failed blocking checks) to RANK_PIPELINE_ALERT_URLS.")
    def alerts_on_run_failure(context: dg.RunFailureSensorContext):
        _send(context)

    @dg.sensor(name="alerts_on_stale_assets", minimum_interval_seconds=SENSOR_INTERVAL_S,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Sends a digest when marts or warehouse/published fail their freshness policy "
                           "(RANK_PIPELINE_FRESHNESS_HOURS) to RANK_PIPELINE_ALERT_URLS.")
    def alerts_on_stale_assets(context: dg.SensorEvaluationContext):
        alerts = stale_asset_alerts(context.instance, watched, settings.ops.freshness_hours)
        if not alerts or not settings.ops.alert_urls:
            return dg.SkipReason(f"{len(alerts)} asset(s) failing their freshness policy"
                                 + ("" if settings.ops.alert_urls else "; no RANK_PIPELINE_ALERT_URLS"))
        title = f"rank-pipeline: {len(alerts)} asset(s) failing their freshness policy"
        header = [f"The warehouse stopped updating: no successful materialization within "
                  f"{settings.ops.freshness_hours:g} h (RANK_PIPELINE_FRESHNESS_HOURS). Is the schedule "
                  "running and the daemon up?"]
        report = send_digest(settings.ops.alert_urls, settings.paths.alerts_ledger, "freshness", title, alerts,
                             header=header, secrets=_secrets(settings), warn=_warn(context))
        return dg.SkipReason(f"{len(alerts)} asset(s) failing their freshness policy; digest sent to "
                             f"destination(s) {sorted(report.sent) or 'none'}")

    return [alerts_on_run_success, alerts_on_run_failure, alerts_on_stale_assets]
