"""The Dagster instance of a data folder: ``DAGSTER_HOME`` (default ``<data_dir>/dagster_home``).

:func:`open_instance` writes ``dagster.yaml`` when missing (or when it is one this project wrote
earlier) and opens the instance under the data folder's ``instance`` lock
(:mod:`rank_pipeline.folder_lock`), so two first runs at once do not both create the SQLite tables.
The same ``dagster.yaml`` is read by ``dagster dev`` / ``dagster-webserver`` (``make dev``), so runs of
``rank-pipeline run`` and ``demo`` are listed in the UI.

Storage, chosen by ``RANK_PIPELINE_DAGSTER_PG_URL`` (:attr:`rank_pipeline.settings.OpsSettings.dagster_pg_url`):

- unset (the default): SQLite files under ``DAGSTER_HOME`` (``history/``, ``schedules/``), with a
  pooled event log (:mod:`rank_pipeline.defs.sqlite_storage`, the one module using Dagster's private
  API; why, with figures, there and in ``benchmarks/README.md``);
- set (``postgresql+psycopg2://user:password@host:5432/db``): Dagster's own PostgreSQL storage
  (``dagster-postgres``, the ``postgres`` extra) for runs, schedules and event logs, the ``storage:
  postgres:`` block of Dagster's instance docs. ``dagster.yaml`` names the variable
  (``postgres_url: {env: RANK_PIPELINE_DAGSTER_PG_URL}``), never its value, so the password is in no
  file, log or run metadata; every process reading that ``dagster.yaml`` (``dagster-daemon``,
  ``dagster-webserver``, ``dagster instance info``) needs the variable in its environment.

Every run carries its process's pid, host and boot id as tags (:func:`process_tags`: passed at launch by
the command line, recorded by the run itself otherwise, :func:`record_process_tags`); runs still
"started" whose process is gone (killed) are marked failed (:func:`fail_dead_runs`) at the command
line's next start and by the daemon's sensor. Dagster's run monitoring is on (:data:`RUN_MONITORING_CONFIG`).

No pool concurrency is configured: nothing in the pipeline depends on a Dagster pool slot being freed
(a slot a killed run keeps would block every later run); runs serialize on an OS lock instead
(:func:`rank_pipeline.folder_lock.writer_lock`, taken by the ``warehouse`` resource).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dagster as dg

from rank_pipeline.defs.sqlite_storage import PooledSqliteEventLogStorage, sqlite_storage_config
from rank_pipeline.folder_lock import instance_lock
from rank_pipeline.operations.dagster_names import BOOT_TAG, HOST_TAG, PID_TAG
from rank_pipeline.settings import DAGSTER_PG_URL_ENV, ConfigurationError, Settings

__all__ = [
    "PooledSqliteEventLogStorage",
    "dagster_home",
    "error_line",
    "fail_dead_runs",
    "innermost_error",
    "instance_config",
    "lock_timeout_message",
    "open_instance",
    "process_tags",
    "record_process_tags",
]

_MARKER = "# written by rank-pipeline"
# a dagster.yaml without the marker that this module also replaces: pools of one slot, which a killed run keeps
# claimed for ever
_LEGACY_CONFIG = "concurrency:\n  pools:\n    default_limit: 1\ntelemetry:\n  enabled: false\n"


def dagster_home(data_dir: Path, env: Mapping[str, str] | None = None) -> Path:
    """``DAGSTER_HOME`` if set, else ``<data_dir>/dagster_home`` (absolute)."""
    environ = os.environ if env is None else env
    return Path(environ.get("DAGSTER_HOME") or Path(data_dir) / "dagster_home").resolve()


RUN_MONITORING_CONFIG = """run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  cancel_timeout_seconds: 180
  max_resume_run_attempts: 0
  poll_interval_seconds: 30
"""
"""Dagster's run monitoring (run by ``dagster-daemon``): a run stuck "starting" (its worker never came
up) is marked failed after 3 minutes, one stuck "canceling" is marked canceled after 3 minutes; the
daemon looks every 30 s. Dagster's default run launcher cannot check a started run's worker, so it
cannot resume one (``max_resume_run_attempts: 0``); a started run whose worker was killed is marked
failed by the code server that launched it, or, when that server died too, by the sensor
``fail_dead_runs_sensor`` (:mod:`rank_pipeline.defs.run_monitoring`) from the run's process tags."""

_POSTGRES_STORAGE = f"""storage:
  postgres:
    postgres_url:
      env: {DAGSTER_PG_URL_ENV}
"""


def instance_config(home: Path, *, postgres: bool = False) -> str:
    """The ``dagster.yaml`` this project writes into ``home``.

    ``postgres=False``: SQLite storage under ``home`` with the pooled event log; ``postgres=True``:
    Dagster's PostgreSQL storage at the URL in ``RANK_PIPELINE_DAGSTER_PG_URL`` (referenced, not copied).
    """
    storage = _POSTGRES_STORAGE if postgres else sqlite_storage_config(home)
    kind = "PostgreSQL at $" + DAGSTER_PG_URL_ENV if postgres else "SQLite storage in this folder"
    return f"""{_MARKER}: {kind}; see rank_pipeline/defs/instance.py
{storage}telemetry:
  enabled: false
""" + RUN_MONITORING_CONFIG


def _check_postgres_extra() -> None:
    try:
        import dagster_postgres  # noqa: F401 - only whether the extra is installed
    except ImportError:
        raise ConfigurationError(
            f"{DAGSTER_PG_URL_ENV} is set but dagster-postgres is not installed: pip install "
            "'rank-pipeline[postgres]' (make env does), or unset it to keep SQLite"
        ) from None


def _postgres_failure(url: str, exc: BaseException) -> ConfigurationError:
    """One line for a PostgreSQL storage that cannot be opened; never the URL's password."""
    parts = urlsplit(url)
    where = f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path or ''}"
    root: BaseException = exc  # the driver's error ("connection refused", "password authentication failed")
    for _ in range(10):
        parent = root.__cause__ or root.__context__
        if parent is None:
            break
        root = parent
    detail = next((line.strip() for line in str(root).splitlines() if line.strip()), type(root).__name__)
    for secret in {secret for secret in (parts.password, url) if secret}:
        detail = detail.replace(secret, "***")
    return ConfigurationError(
        f"cannot open Dagster's PostgreSQL storage at {where} ({DAGSTER_PG_URL_ENV}): {detail}; check that the "
        "server is up and the URL's user, password and database, or unset it to keep SQLite"
    )


def open_instance(data_dir: Path, *, log: Callable[[str], object] | None = None) -> dg.DagsterInstance:
    """The data folder's persistent Dagster instance; sets ``DAGSTER_HOME`` for this process.

    Creates ``DAGSTER_HOME`` and its ``dagster.yaml`` when missing and rewrites a ``dagster.yaml`` this
    project wrote before (a user's own file is left alone), then opens the instance and creates its
    storage tables (SQLite files, or the PostgreSQL schema when ``RANK_PIPELINE_DAGSTER_PG_URL`` is
    set), all under the ``instance`` lock of ``data_dir``.

    Raises:
        rank_pipeline.folder_lock.LockTimeout: another process held the instance lock past the timeout.
        rank_pipeline.settings.ConfigurationError: the PostgreSQL URL is set but ``dagster-postgres`` is
            not installed, or its server cannot be reached or refuses the login (one line, no password).
    """
    pg_url = Settings.from_env().ops.dagster_pg_url
    if pg_url:
        _check_postgres_extra()
    home = dagster_home(data_dir)
    with instance_lock(data_dir, log=log):
        home.mkdir(parents=True, exist_ok=True)
        config = home / "dagster.yaml"
        wanted = instance_config(home, postgres=bool(pg_url))
        current = config.read_text() if config.exists() else None
        if current is None or (current != wanted and (current.startswith(_MARKER) or current == _LEGACY_CONFIG)):
            tmp = config.with_name(f".dagster.yaml.{os.getpid()}.tmp")
            tmp.write_text(wanted)
            os.replace(tmp, config)
        os.environ["DAGSTER_HOME"] = str(home)
        try:
            instance = dg.DagsterInstance.get()
            instance.get_runs(limit=1)  # creates the run, event log and schedule tables now, under the lock
            instance.get_latest_materialization_event(dg.AssetKey("__rank_pipeline_probe__"))
        except Exception as exc:
            if pg_url and not isinstance(exc, OSError):
                raise _postgres_failure(pg_url, exc) from None
            raise
        fail_dead_runs(instance, log=log)
        return instance


_BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")


def _boot_id() -> str:
    """This machine's boot id (Linux; changes at every boot), or "" where there is none."""
    try:
        return _BOOT_ID_FILE.read_text().strip()
    except OSError:
        return ""


def process_tags() -> dict[str, str]:
    """Run tags naming this process (pid, host, boot id), so a later check can tell that the run's
    process died: ``rank_pipeline/pid``, ``rank_pipeline/host``, ``rank_pipeline/boot_id``."""
    tags = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}
    if boot := _boot_id():
        tags[BOOT_TAG] = boot
    return tags


def record_process_tags(instance: dg.DagsterInstance, run: dg.DagsterRun) -> None:
    """Tag ``run`` with this process (:func:`process_tags`) unless it already names a process.

    Called in the run's own process when its resources start, so a run launched by the daemon or the
    UI (whose worker is a process the code server spawned) can be marked failed when it is killed,
    like a run of the command line (which passes the tags at launch).
    """
    if PID_TAG not in run.tags:
        instance.add_run_tags(run.run_id, process_tags())


def fail_dead_runs(instance: dg.DagsterInstance, *, log: Callable[[str], object] | None = None) -> list[str]:
    """Mark failed the runs of this host still "started" whose process (:func:`process_tags`) is gone.

    A process is gone when no process has its pid, or when the machine booted since the run started
    (its boot id differs: the pid may belong to another process now). A run killed with ``kill -9``
    cannot report its end; without this the UI shows it in progress for ever. Nothing waits on such a
    run (no pool slot); this keeps the run list truthful. Called when the command line opens the
    instance and by the daemon's sensor ``fail_dead_runs_sensor``. Returns the run ids marked.
    """
    marked = []
    boot = _boot_id()
    runs = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING],
                                           tags={HOST_TAG: socket.gethostname()}))
    for run in runs:
        pid = run.tags.get(PID_TAG, "")
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        rebooted = bool(boot) and run.tags.get(BOOT_TAG, boot) != boot
        if not rebooted and _alive(int(pid)):
            continue
        instance.report_run_failed(run, f"the run's process (pid {pid}) ended without reporting: it was killed")
        marked.append(run.run_id)
        if log:
            log(f"marked run {run.run_id} failed: its process (pid {pid}) was killed")
    return marked


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def innermost_error(error: Any) -> Any:
    """The innermost cause of a Dagster ``SerializableErrorInfo`` (``error.cause`` followed to its end)."""
    while error is not None and getattr(error, "cause", None) is not None:
        error = error.cause
    return error


def is_blocking(evaluation: Any) -> bool:
    """Whether a Dagster asset check evaluation (``AssetCheckEvaluation``) came from a blocking check: its own
    ``blocking`` flag, or, for evaluations stored before Dagster recorded it, severity ERROR."""
    import dagster as dg

    if evaluation.blocking is not None:
        return bool(evaluation.blocking)
    return evaluation.severity == dg.AssetCheckSeverity.ERROR


def error_line(error: Any, *, whole: bool = False) -> str:
    """Why a step or run failed, on one line: the innermost error's message without its class name.

    ``whole`` joins every line of the message (Dagster's list of failed blocking checks spans several);
    otherwise the first line. ``"failed"`` when there is no message. Shared by the command line's last
    line, the alert digests and ``ops.run_history.failure_reason``.
    """
    error = innermost_error(error)
    message = (getattr(error, "message", "") or "").strip()
    text = " ".join(message.split()) if whole else (message.splitlines()[0] if message else "")
    cls_name = getattr(error, "cls_name", None)
    if cls_name and f"{cls_name}: " in text[:200]:
        text = text.split(f"{cls_name}: ", 1)[1]
    return text or "failed"


def lock_timeout_message(result: dg.ExecuteInProcessResult) -> str | None:
    """The one-line :class:`rank_pipeline.folder_lock.LockTimeout` message that failed ``result``, if any."""
    for event in result.all_events:
        if event.event_type not in (dg.DagsterEventType.RESOURCE_INIT_FAILURE, dg.DagsterEventType.STEP_FAILURE):
            continue
        error = getattr(event.event_specific_data, "error", None)
        while error is not None:
            if error.cls_name == "LockTimeout":
                return error.message.split(": ", 1)[-1].strip()
            error = error.cause
    return None


if __name__ == "__main__":  # `make dev`: prepare DAGSTER_HOME so the UI starts even before any run
    from rank_pipeline.settings import Settings

    print(open_instance(Settings.from_env().data_dir).root_directory)
