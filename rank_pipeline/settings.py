"""Environment-driven settings: where the API is, which accounts, where data goes, how fast to go.

Environment variables (all optional; with none set the pipeline runs on the embedded sandbox):

=================================  ==========================================================
``RANK_TRACKER_BASE_URL``          the vendor's base address (spec: ``{base_url}``; a trailing ``/v1``
                                   is removed). Unset: the embedded sandbox is started on 127.0.0.1.
``RANK_TRACKER_API_KEY``           the key of the single account ``default``; several keys of the
                                   account comma-separated (``key1,key2``): a key pool, see below.
``RANK_TRACKER_ACCOUNTS``          several accounts: ``acme,globex``; each key in
                                   ``RANK_TRACKER_API_KEY_<NAME>`` (upper case), also a key list.
``RANK_PIPELINE_DATA_DIR``         snapshots and warehouse folder (default ``./data``).
``RANK_PIPELINE_SNAPSHOTS_URI``    where the Parquet snapshots live (default ``<data dir>/snapshots``):
                                   a folder, or ``s3://bucket/prefix`` (credentials and endpoint from
                                   the ``AWS_*`` variables) or another pyarrow/fsspec scheme; see
                                   :mod:`rank_pipeline.snapshots.storage`.
``RANK_PIPELINE_SHARD``            ``i/n``: this worker extracts only the accounts of shard ``i`` of ``n``
                                   (:mod:`rank_pipeline.snapshots.shards`); unset: every account.
``RANK_PIPELINE_MODELS_DIR``       the SQL models project (default: the ``dbt_like_sql/`` shipped with
                                   the package); see :func:`models_dir`.
``RANK_TRACKER_RATE_PER_KEY``      requests per key per window (spec "Limits": 300), 1..100000.
``RANK_TRACKER_RATE_PER_IP``       requests per IP address per window (spec "Limits": 600), 1..100000.
``RANK_TRACKER_RATE_WINDOW_S``     the window in seconds (spec: one minute), 1..86400.
``RANK_TRACKER_MAX_IN_FLIGHT``     concurrent requests per run (default 16), 1..1024.
``RANK_PIPELINE_LOCK_TIMEOUT_S``   seconds a run waits for another run of the same data folder
                                   (default 3600; read by :mod:`rank_pipeline.warehouse.locks`).
``RANK_PIPELINE_STORAGE_VERSION``  DuckDB storage version of the published warehouse (default
                                   ``v1.0.0``: DuckDB 1.0+ opens it; read by ``warehouse.Warehouse``).
``RANK_PIPELINE_DASHBOARD_URL``    the dashboards' address linked from ``warehouse/published``
                                   (default http://127.0.0.1:8088; ``make dashboard``).
``RANK_PIPELINE_SCHEDULE_CRON``    when the daily schedule ticks (5-field cron, default ``15 6 * * *``).
``RANK_PIPELINE_SCHEDULE_TIMEZONE`` the schedule's time zone (IANA name, default ``UTC``).
``RANK_PIPELINE_FRESHNESS_HOURS``  how old the marts and ``warehouse/published`` may be before their
                                   freshness policy fails (default 26), 1/60 (one minute, Dagster's
                                   smallest window) .. 8760.
``RANK_PIPELINE_ALERT_URLS``       where alerts go: comma-separated Apprise URLs (``mailto://``,
                                   ``json://``, Slack, Teams, ...); unset: no alerts. Secret, like keys.
``RANK_PIPELINE_KEYWORDS_FILE``    a keywords file (``rank_pipeline.keywords``): the daily job writes its
                                   planned rows to ``raw.keywords_file`` and its asset check
                                   ``matches_tracked_keywords`` fails when the file and the tracked
                                   keywords differ; unset: no check, an empty table.
``RANK_PIPELINE_DAGSTER_PG_URL``   Dagster's instance storage on PostgreSQL
                                   (``postgresql+psycopg2://user:password@host:5432/db``); unset: SQLite
                                   under ``DAGSTER_HOME``. Secret, like keys.
=================================  ==========================================================

Key pool: a key variable may hold a comma-separated list of the account's keys (the spec allows two
valid keys at once, "Authentication" 5): requests spread over the keys, each paced to the per-key
ceiling, and a key rejected mid-run is dropped (named by its position, never its value).

The rate defaults are declared once, in :mod:`rank_pipeline.api.config`. Keys are never held by
:class:`Settings`: :attr:`AccountConfig.api_key_env` names the variable, and
:func:`rank_pipeline.extract.source.read_keys` reads it when a run opens the source (the one place keys are read).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from rank_pipeline.api.config import (
    DEFAULT_MAX_IN_FLIGHT,
    SPEC_PER_IP_LIMIT,
    SPEC_PER_KEY_LIMIT,
    SPEC_WINDOW_S,
)
from rank_pipeline.snapshots.shards import SHARD_ENV, Shard, parse_shard
from rank_pipeline.snapshots.storage import SNAPSHOTS_URI_ENV, StorageError, check_uri

__all__ = ["AccountConfig", "ConfigurationError", "DataPaths", "OpsSettings", "Settings", "models_dir"]

_PACKAGE_DIR = Path(__file__).resolve().parent

PARTITIONS_START = "2026-01-01"
"""The first daily partition (UTC); the Dagster partitions and the CLI's ``--date`` check read it."""


def models_dir(env: Mapping[str, str] | None = None) -> Path:
    """The SQL models project (``models/``, ``seeds/``, ``.yml`` files) the pipeline builds.

    ``RANK_PIPELINE_MODELS_DIR`` when set: a folder of your own, e.g. a copy of the shipped project with
    models added. Otherwise the ``dbt_like_sql/`` shipped inside the installed package
    (``rank_pipeline/dbt_like_sql``, copied there by ``pip install .``), or the source tree's
    ``dbt_like_sql/`` when running from a checkout (``pip install -e .``).

    Raises:
        ConfigurationError: ``RANK_PIPELINE_MODELS_DIR`` is not a folder, or no project is found.
    """
    env = os.environ if env is None else env
    raw = (env.get("RANK_PIPELINE_MODELS_DIR") or "").strip()
    if raw:
        path = Path(raw).expanduser().resolve()
        if not path.is_dir():
            raise ConfigurationError(
                f"RANK_PIPELINE_MODELS_DIR={raw!r} is not a folder: set it to a models project (a copy of "
                "the shipped dbt_like_sql/ with your models added) or unset it"
            )
        return path
    for path in (_PACKAGE_DIR / "dbt_like_sql", _PACKAGE_DIR.parent / "dbt_like_sql"):
        if path.is_dir():
            return path
    raise ConfigurationError(  # pragma: no cover - a broken install
        f"no SQL models found next to {_PACKAGE_DIR}: reinstall the package, or set RANK_PIPELINE_MODELS_DIR"
    )


class ConfigurationError(ValueError):
    """A setting is missing or malformed; the message says which variable and what to set."""


@dataclass(frozen=True)
class AccountConfig:
    """One account to extract: its name (used in snapshots and the warehouse) and its key's variable."""

    name: str
    api_key_env: str


@dataclass(frozen=True)
class DataPaths:
    """Where a run's files live under ``data_dir`` (docs/architecture.md; ``data/README.md``).

    ``snapshots_uri`` (``RANK_PIPELINE_SNAPSHOTS_URI``) moves the snapshots elsewhere, e.g. to
    ``s3://bucket/prefix``; the DuckDB files, logs and locks stay under ``data_dir``.
    """

    data_dir: Path
    snapshots_uri: str | None = None

    @property
    def snapshot_store_uri(self) -> Path | str:
        """The Parquet snapshots, the system of record: a local :class:`Path`, or a URI string for an
        object store (every reader and writer takes either, through :func:`rank_pipeline.snapshots.storage.store_for`)."""
        raw = (self.snapshots_uri or "").strip()
        if not raw:
            return self.data_dir / "snapshots"
        if "://" in raw and not raw.lower().startswith("file://"):
            return raw
        return Path(raw[len("file://"):] if raw.lower().startswith("file://") else raw).expanduser().resolve()

    @property
    def build_db(self) -> Path:
        """The pipeline's private DuckDB file (one writer)."""
        return self.data_dir / "warehouse.build.duckdb"

    @property
    def published_db(self) -> Path:
        """The DuckDB file analysts and BI tools open read-only; replaced atomically per run."""
        return self.data_dir / "warehouse.duckdb"

    @property
    def source_record(self) -> Path:
        """``source.json``: which source the folder's snapshots come from (``rank_pipeline.extract.source``)."""
        return self.data_dir / "source.json"

    @property
    def alerts_ledger(self) -> Path:
        """``alerts.sqlite``: which alert went to which destination (:mod:`rank_pipeline.ops.alerts`)."""
        return self.data_dir / "alerts.sqlite"

    @property
    def logs_dir(self) -> Path:
        """Log files of command-line runs (one per command invocation)."""
        return self.data_dir / "logs"

    @property
    def cache_dir(self) -> Path:
        """Results derived from the models' files alone, kept between runs (the column lineage);
        safe to delete."""
        return self.data_dir / "cache"


DEFAULT_SCHEDULE_CRON = "15 6 * * *"
DEFAULT_SCHEDULE_TIMEZONE = "UTC"
DEFAULT_FRESHNESS_HOURS = 26.0
MIN_FRESHNESS_HOURS = 1 / 60
"""One minute: the smallest fail window of a Dagster freshness policy."""


@dataclass(frozen=True)
class OpsSettings:
    """How the pipeline runs unattended: the schedule, freshness, alerts and Dagster's storage.

    ``alert_urls`` and ``dagster_pg_url`` may hold passwords or tokens: never log or store them
    (``repr`` hides them).
    """

    schedule_cron: str = DEFAULT_SCHEDULE_CRON
    schedule_timezone: str = DEFAULT_SCHEDULE_TIMEZONE
    freshness_hours: float = DEFAULT_FRESHNESS_HOURS
    alert_urls: tuple[str, ...] = field(default=(), repr=False)
    dagster_pg_url: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OpsSettings:
        """Read the ``RANK_PIPELINE_SCHEDULE_*``, ``_FRESHNESS_HOURS``, ``_ALERT_URLS`` and
        ``_DAGSTER_PG_URL`` variables.

        Raises:
            ConfigurationError: a cron that is not 5 valid fields, an unknown time zone, freshness hours
                out of 1/60..8760, an alert URL without a ``scheme://``, or a PostgreSQL URL that is not
                ``postgresql+psycopg2://`` (the message never repeats a URL: they carry secrets).
        """
        env = os.environ if env is None else env
        cron = (env.get("RANK_PIPELINE_SCHEDULE_CRON") or "").strip() or DEFAULT_SCHEDULE_CRON
        if len(cron.split()) != 5 or not croniter.is_valid(cron):
            raise ConfigurationError(
                f"RANK_PIPELINE_SCHEDULE_CRON={cron!r} is not a 5-field cron expression; set it like "
                f"'{DEFAULT_SCHEDULE_CRON}' (minute hour day month weekday) or unset it"
            )
        tz = (env.get("RANK_PIPELINE_SCHEDULE_TIMEZONE") or "").strip() or DEFAULT_SCHEDULE_TIMEZONE
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigurationError(
                f"RANK_PIPELINE_SCHEDULE_TIMEZONE={tz!r} is not a known time zone; set an IANA name such as "
                "'UTC' or 'Europe/Berlin', or unset it"
            ) from None
        hours = float(_number(env, "RANK_PIPELINE_FRESHNESS_HOURS", DEFAULT_FRESHNESS_HOURS, float,
                              MIN_FRESHNESS_HOURS, 8760.0))
        urls = tuple(u.strip() for u in (env.get("RANK_PIPELINE_ALERT_URLS") or "").split(",") if u.strip())
        for i, url in enumerate(urls, 1):
            if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://\S", url):
                raise ConfigurationError(
                    f"RANK_PIPELINE_ALERT_URLS: entry {i} is not a notification URL (scheme://...); give "
                    "comma-separated Apprise URLs such as mailto://... or json://host:port/path"
                )
        pg = (env.get("RANK_PIPELINE_DAGSTER_PG_URL") or "").strip() or None
        if pg is not None and not re.match(r"^postgresql\+psycopg2://\S", pg):
            raise ConfigurationError(  # SQLAlchemy 2.1 reads a plain postgresql:// as psycopg 3, which
                # dagster-postgres does not support; its psycopg2 driver must be named
                "RANK_PIPELINE_DAGSTER_PG_URL is not a postgresql+psycopg2:// URL; set it like "
                "postgresql+psycopg2://user:password@host:5432/dagster, or unset it to keep SQLite"
            )
        return cls(schedule_cron=cron, schedule_timezone=tz, freshness_hours=hours, alert_urls=urls,
                   dagster_pg_url=pg)


@dataclass(frozen=True)
class Settings:
    """Resolved settings. Build with :meth:`from_env`; see the module docstring for the variables."""

    base_url: str | None
    accounts: tuple[AccountConfig, ...]
    data_dir: Path
    per_key_limit: int = SPEC_PER_KEY_LIMIT
    per_ip_limit: int = SPEC_PER_IP_LIMIT
    window_s: float = SPEC_WINDOW_S
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    snapshots_uri: str | None = None
    shard: Shard | None = None
    ops: OpsSettings = field(default_factory=OpsSettings)
    keywords_file: Path | None = None

    @property
    def uses_sandbox(self) -> bool:
        """True when no base URL is configured and the embedded sandbox is the source."""
        return self.base_url is None

    @property
    def paths(self) -> DataPaths:
        """The snapshot location and DuckDB files (under :attr:`data_dir`)."""
        return DataPaths(self.data_dir, self.snapshots_uri)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read the settings from ``env`` (default ``os.environ``).

        Raises:
            ConfigurationError: a base URL that is not http(s), a base URL without its key variables,
                a malformed ``RANK_PIPELINE_SNAPSHOTS_URI`` or ``RANK_PIPELINE_SHARD``,
                a malformed or repeated account name (``acme,acme``; ``a-b,a_b`` share one variable),
                a rate setting that is not a finite number within its range (``nan``, ``inf``,
                ``1e-9``), a data folder that is a file, a keywords file that is a folder, or a bad
                operations setting
                (:meth:`OpsSettings.from_env`).
        """
        env = os.environ if env is None else env
        base_url = normalise_base_url(env.get("RANK_TRACKER_BASE_URL"))
        names = [n.strip() for n in (env.get("RANK_TRACKER_ACCOUNTS") or "").split(",") if n.strip()]
        if names:
            for name in names:
                if not re.match(r"^[A-Za-z0-9_-]{1,64}$", name):
                    raise ConfigurationError(
                        f"RANK_TRACKER_ACCOUNTS has {name!r}: account names are letters, digits, _ and -"
                    )
            accounts = tuple(AccountConfig(n, key_variable(n)) for n in names)
            seen: dict[str, str] = {}
            for account in accounts:
                if account.api_key_env in seen:
                    raise ConfigurationError(
                        f"RANK_TRACKER_ACCOUNTS lists {seen[account.api_key_env]!r} and {account.name!r}, "
                        f"which both read {account.api_key_env}: list each account once"
                    )
                seen[account.api_key_env] = account.name
        else:
            accounts = (AccountConfig("default", "RANK_TRACKER_API_KEY"),)
        if base_url is not None:
            missing = [a.api_key_env for a in accounts if not env.get(a.api_key_env)]
            if missing:
                raise ConfigurationError(
                    f"RANK_TRACKER_BASE_URL is set but {', '.join(missing)} is not: export the API key "
                    "(created in the vendor's web application, Account, API) in that variable"
                )
        data_dir = Path(env.get("RANK_PIPELINE_DATA_DIR") or "data").resolve()
        if data_dir.exists() and not data_dir.is_dir():
            raise ConfigurationError(
                f"the data folder {data_dir} is a file: set RANK_PIPELINE_DATA_DIR to a folder (it is created "
                "if missing)"
            )
        snapshots_uri = (env.get(SNAPSHOTS_URI_ENV) or "").strip() or None
        if snapshots_uri is not None:
            try:
                check_uri(snapshots_uri)
            except StorageError as exc:
                raise ConfigurationError(str(exc)) from None
        try:
            shard = parse_shard(env.get(SHARD_ENV))
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        keywords_file = (env.get("RANK_PIPELINE_KEYWORDS_FILE") or "").strip() or None
        if keywords_file is not None:
            keywords_path = Path(keywords_file).expanduser().resolve()
            if keywords_path.is_dir():
                raise ConfigurationError(
                    f"RANK_PIPELINE_KEYWORDS_FILE={keywords_file!r} is a folder: set it to a keywords YAML file "
                    "(see examples/keywords.yml) or unset it"
                )
        return cls(
            base_url=base_url,
            accounts=accounts,
            data_dir=data_dir,
            per_key_limit=int(_number(env, "RANK_TRACKER_RATE_PER_KEY", SPEC_PER_KEY_LIMIT, int, 1, 100_000)),
            per_ip_limit=int(_number(env, "RANK_TRACKER_RATE_PER_IP", SPEC_PER_IP_LIMIT, int, 1, 100_000)),
            window_s=float(_number(env, "RANK_TRACKER_RATE_WINDOW_S", SPEC_WINDOW_S, float, 1.0, 86_400.0)),
            max_in_flight=int(_number(env, "RANK_TRACKER_MAX_IN_FLIGHT", DEFAULT_MAX_IN_FLIGHT, int, 1, 1024)),
            snapshots_uri=snapshots_uri,
            shard=shard,
            ops=OpsSettings.from_env(env),
            keywords_file=keywords_path if keywords_file is not None else None,
        )


def key_variable(account: str) -> str:
    """The variable holding the key of ``account`` listed in ``RANK_TRACKER_ACCOUNTS``:
    ``RANK_TRACKER_API_KEY_<NAME>`` (upper case, ``-`` read as ``_``). The single unlisted account
    ``default`` reads ``RANK_TRACKER_API_KEY``."""
    return f"RANK_TRACKER_API_KEY_{account.upper().replace('-', '_')}"


def normalise_base_url(raw: str | None) -> str | None:
    """``RANK_TRACKER_BASE_URL`` without surrounding spaces, trailing ``/`` or a trailing ``/v1``.

    The spec's paths start with ``/v1`` (``{base_url}/v1/domains``), so a base URL copied with ``/v1``
    would otherwise become ``/v1/v1/...`` and read as "Resource not found". None when unset or empty.

    Raises:
        ConfigurationError: not an ``http://`` or ``https://`` address.
    """
    base_url = (raw or "").strip().rstrip("/")
    if not base_url:
        return None
    if base_url.lower().endswith("/v1"):
        base_url = base_url[:-3].rstrip("/")
    if not re.match(r"^https?://[^/\s]", base_url):
        raise ConfigurationError(
            f"RANK_TRACKER_BASE_URL={base_url!r} is not an http(s) address; set it to the vendor's "
            "base address, e.g. https://api.example.com"
        )
    return base_url


def _number(env: Mapping[str, str], name: str, default: float, kind: type, low: float, high: float) -> float:
    """The variable ``name`` as ``kind`` (int or float) within ``[low, high]``, or ``default`` when unset."""
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    what = "a whole number" if kind is int else "a number"
    try:
        value = kind(raw.strip())
    except ValueError:
        raise ConfigurationError(
            f"{name}={raw!r} is not {what}; set it between {low:g} and {high:g} or unset it (default {default:g})"
        ) from None
    if not math.isfinite(value) or not low <= value <= high:
        raise ConfigurationError(
            f"{name}={raw!r} is out of range; set it between {low:g} and {high:g} or unset it (default {default:g})"
        )
    return value
