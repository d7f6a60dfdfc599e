"""Values read at the moment of use as well as by :meth:`~rank_pipeline.settings.Settings.from_env`: the
lock timeout (a lock about to be waited for), the warehouse's storage version and DuckDB memory limit (the build
file opened), the full refresh's batch of days (a model rebuilt whole), the dashboards' address (a publish), and
the embedded sandbox's shape."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping

from rank_pipeline.settings.values import ConfigurationError

__all__ = ["DASHBOARD_URL_ENV", "DEFAULT_DASHBOARD_URL", "DEFAULT_LOCK_TIMEOUT_S", "DEFAULT_STORAGE_VERSION",
           "DUCKDB_MEMORY_LIMIT_ENV", "FULL_REFRESH_BATCH_DAYS_ENV", "LOCK_TIMEOUT_ENV", "SANDBOX_SHAPE_ENV", "STORAGE_VERSION_ENV",
           "check_memory_limit", "dashboard_url_from_env", "duckdb_memory_limit_from_env", "full_refresh_batch_days_from_env", "lock_timeout_from_env", "named_variable", "sandbox_shape_from_env", "storage_version_from_env"]

LOCK_TIMEOUT_ENV = "RANK_PIPELINE_LOCK_TIMEOUT_S"
DEFAULT_LOCK_TIMEOUT_S = 3600.0
"""How long a run waits for another run of the same data folder before giving up (seconds)."""


def lock_timeout_from_env(env: Mapping[str, str] | None = None) -> float:
    """Seconds to wait for a held lock: ``RANK_PIPELINE_LOCK_TIMEOUT_S`` or :data:`DEFAULT_LOCK_TIMEOUT_S`.
    Raises ConfigurationError: not a finite number of at least 0.
    """
    env = os.environ if env is None else env
    raw = (env.get(LOCK_TIMEOUT_ENV) or "").strip()
    if not raw:
        return DEFAULT_LOCK_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigurationError(
            f"{LOCK_TIMEOUT_ENV}={raw!r} is not a number of seconds; set it to 0 (refuse at once) or more "
            f"(default {DEFAULT_LOCK_TIMEOUT_S:.0f})"
        )
    return value


STORAGE_VERSION_ENV = "RANK_PIPELINE_STORAGE_VERSION"
"""Environment variable naming the storage version of the published file (:mod:`rank_pipeline.warehouse.warehouse_file`)."""
DEFAULT_STORAGE_VERSION = "v1.0.0"
"""The oldest DuckDB release whose storage format our warehouse fits in: readable by DuckDB 1.0 and later."""


def storage_version_from_env(env: Mapping[str, str] | None = None) -> str:
    """``RANK_PIPELINE_STORAGE_VERSION`` stripped, or :data:`DEFAULT_STORAGE_VERSION`; not checked here
    (``rank_pipeline.warehouse.warehouse_file.Warehouse`` refuses a value that is not a DuckDB release)."""
    env = os.environ if env is None else env
    return (env.get(STORAGE_VERSION_ENV) or "").strip() or DEFAULT_STORAGE_VERSION


DUCKDB_MEMORY_LIMIT_ENV = "RANK_PIPELINE_DUCKDB_MEMORY_LIMIT"
"""Environment variable capping the memory of the warehouse's DuckDB writer (:mod:`rank_pipeline.warehouse.warehouse_file`)."""
_MEMORY = re.compile(r"(?i)(?P<amount>\d+(\.\d+)?)\s*(%|b|[kmgt]i?b)")


def check_memory_limit(raw: str) -> str:
    """``raw`` stripped if it is an amount of memory DuckDB's ``memory_limit`` takes (``8GB``, ``6GiB``, ``500MB``,
    ``50%`` of the machine's RAM; docs/concepts/scale-out.md, "Memory").

    Raises ConfigurationError: not a positive number followed by B, KB, MB, GB, TB, KiB, MiB, GiB, TiB or %.
    """
    text = raw.strip()
    amount = _MEMORY.fullmatch(text)
    if amount is None or float(amount["amount"]) <= 0:
        raise ConfigurationError(
            f"{DUCKDB_MEMORY_LIMIT_ENV}={text!r} is not an amount of memory; set it to one such as 8GB, 6GiB or "
            "50% (of the machine's RAM), or unset it for DuckDB's default (80% of RAM)"
        )
    return text


def duckdb_memory_limit_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """``RANK_PIPELINE_DUCKDB_MEMORY_LIMIT`` checked by :func:`check_memory_limit`, or None when unset (DuckDB's own
    default, 80 % of RAM). Beyond it the build file's writer spills to ``<build file>.tmp``.

    Raises ConfigurationError: a malformed value (:func:`check_memory_limit`).
    """
    raw = (os.environ if env is None else env).get(DUCKDB_MEMORY_LIMIT_ENV) or ""
    return check_memory_limit(raw) if raw.strip() else None


FULL_REFRESH_BATCH_DAYS_ENV = "RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS"
"""Environment variable: how many days one step of an incremental model's full refresh builds
(:func:`rank_pipeline.transform.materialize.build`)."""


def full_refresh_batch_days_from_env(env: Mapping[str, str] | None = None) -> int:
    """``RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS``: the days an incremental model's full refresh builds at a time
    (docs/concepts/scale-out.md, "Memory"); 0 when unset (every day in one build).

    Raises ConfigurationError: not a whole number from 0 to 36500.
    """
    raw = ((os.environ if env is None else env).get(FULL_REFRESH_BATCH_DAYS_ENV) or "").strip()
    if not raw:
        return 0
    if not re.fullmatch(r"\d{1,5}", raw) or int(raw) > 36500:
        raise ConfigurationError(
            f"{FULL_REFRESH_BATCH_DAYS_ENV}={raw!r} is not a number of days; set it to a whole number such as 30 "
            "(an incremental model's full refresh builds that many days at a time), or 0 or unset for one build"
        )
    return int(raw)


SANDBOX_SHAPE_ENV = "RANK_SANDBOX_SHAPE"
"""The shape the sandbox serves its records in (``default``, ``vendor-b`` .. ``vendor-e``, ``engine-upper``,
``language-string``, optionally ``NAME@YYYY-MM-DD``: from that simulated day on;
:mod:`rank_pipeline.sandbox.shapes`)."""


def sandbox_shape_from_env(env: Mapping[str, str] | None = None) -> str:
    """The raw ``RANK_SANDBOX_SHAPE`` (``default`` when unset); parsed by the sandbox."""
    env = os.environ if env is None else env
    return env.get(SANDBOX_SHAPE_ENV, "").strip() or "default"


DASHBOARD_URL_ENV = "RANK_PIPELINE_DASHBOARD_URL"
DEFAULT_DASHBOARD_URL = "http://127.0.0.1:8088"
"""Where the Superset dashboards over the published file are served (``make dashboard``)."""


def dashboard_url_from_env(env: Mapping[str, str] | None = None) -> str:
    """``RANK_PIPELINE_DASHBOARD_URL`` without a trailing ``/``, or :data:`DEFAULT_DASHBOARD_URL`."""
    env = os.environ if env is None else env
    return (env.get(DASHBOARD_URL_ENV) or DEFAULT_DASHBOARD_URL).rstrip("/")


def named_variable(name: str, env: Mapping[str, str] | None = None) -> str:
    """The value of the environment variable ``name``, a name the user configured rather than one of ours
    (a Dagster component's ``api_key_env`` or ``urls_env``); ``""`` when unset. The value may be a secret:
    callers never log it."""
    env = os.environ if env is None else env
    return env.get(name, "")
