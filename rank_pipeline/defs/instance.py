"""The Dagster instance of a data folder (``DAGSTER_HOME``, default ``<data_dir>/dagster_home``): SQLite, or
PostgreSQL named by ``RANK_PIPELINE_DAGSTER_PG_URL``, opened under the ``instance`` lock
(:func:`open_instance`; docs/concepts/dagster.md, "The instance").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg

from rank_pipeline.defs.dead_runs import fail_dead_runs
from rank_pipeline.defs.sqlite_storage import PooledSqliteEventLogStorage, sqlite_storage_config
from rank_pipeline.folder_lock import instance_lock
from rank_pipeline.settings import DAGSTER_PG_URL_ENV, ConfigurationError, Settings

__all__ = [
    "PooledSqliteEventLogStorage",
    "dagster_home",
    "instance_config",
    "open_instance",
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
    """The ``dagster.yaml`` written into ``home``: SQLite under ``home`` with the pooled event log, or with
    ``postgres`` Dagster's PostgreSQL storage at ``RANK_PIPELINE_DAGSTER_PG_URL`` (named, not copied).
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
    """The data folder's persistent Dagster instance; sets ``DAGSTER_HOME``. Writes ``dagster.yaml`` when missing
    or ours (a user's own is left alone) and creates the storage, under the ``instance`` lock of ``data_dir``.

    Raises:
        rank_pipeline.folder_lock.LockTimeout: the instance lock was held past the timeout.
        rank_pipeline.settings.ConfigurationError: the PostgreSQL URL is set but ``dagster-postgres`` is
            missing, or the server is unreachable or refuses the login (one line, no password).
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


if __name__ == "__main__":  # `make dev`: prepare DAGSTER_HOME so the UI starts even before any run
    from rank_pipeline.settings import Settings

    print(open_instance(Settings.from_env().data_dir).root_directory)
