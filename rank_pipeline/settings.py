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
                                   (:mod:`rank_pipeline.snapshots.shards`); unset: every account. For a
                                   worker started by hand (``rank-pipeline extract``).
``RANK_PIPELINE_SHARDS``           ``n`` (2..1024): Dagster runs each day's extraction as ``n`` shard
                                   partitions (day x shard ``i-of-n``) and the models once all have
                                   committed (:class:`ShardPlan`); unset or 1: one extraction per day.
``RANK_PIPELINE_SHARD_ADDRESSES``  ``shared`` (default) or ``own``: with ``RANK_PIPELINE_SHARDS``, whether
                                   the shard runs of a day leave from one IP address (each paces to 1/n
                                   of ``RANK_TRACKER_RATE_PER_IP``) or each from its own (full ceiling).
``RANK_PIPELINE_MODELS_DIR``       the SQL models project (default: the ``dbt_like_sql/`` shipped with
                                   the package); see :func:`models_dir`.
``RANK_TRACKER_RATE_PER_KEY``      requests per key per window (spec "Limits": 300), 1..100000.
``RANK_TRACKER_RATE_PER_IP``       requests per IP address per window (spec "Limits": 600), 1..100000.
``RANK_TRACKER_RATE_WINDOW_S``     the window in seconds (spec: one minute), 1..86400.
``RANK_TRACKER_MAX_IN_FLIGHT``     concurrent requests per run (default 16), 1..1024.
``RANK_PIPELINE_LOCK_TIMEOUT_S``   seconds a run waits for another run of the same data folder
                                   (default 3600; used by :mod:`rank_pipeline.warehouse.locks`).
``RANK_PIPELINE_STORAGE_VERSION``  DuckDB storage version of the published warehouse (default
                                   ``v1.0.0``: DuckDB 1.0+ opens it; checked by ``warehouse.Warehouse``).
``RANK_PIPELINE_DASHBOARD_URL``    the dashboards' address linked from ``warehouse/published``
                                   (default http://127.0.0.1:8088; ``make dashboard``).
``RANK_SANDBOX_SHAPE``             the shape the embedded sandbox serves keyword records in: ``default``,
                                   ``vendor-b`` or ``language-string``, optionally ``NAME@YYYY-MM-DD``
                                   from that simulated day on (``rank_pipeline.sandbox.shapes``).
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
``RANK_PIPELINE_ENGINE``           which engine builds the SQL models: ``duckdb`` (default) or ``spark``
                                   (:mod:`rank_pipeline.transform.engines`).
``RANK_PIPELINE_SPARK_MASTER``     the Spark master URL (default ``local[2]``).
``RANK_PIPELINE_SPARK_WAREHOUSE_URI`` where Spark writes the model tables as Parquet (default
                                   ``<data dir>/spark_warehouse``).
``RANK_PIPELINE_DAGSTER_PG_URL``   Dagster's instance storage on PostgreSQL
                                   (``postgresql+psycopg2://user:password@host:5432/db``); unset: SQLite
                                   under ``DAGSTER_HOME``. Secret, like keys.
=================================  ==========================================================

Key pool: a key variable may hold a comma-separated list of the account's keys (the spec allows two
valid keys at once, "Authentication" 5): requests spread over the keys, each paced to the per-key
ceiling, and a key rejected mid-run is dropped (named by its position, never its value).

This module is the only one that reads these variables. :meth:`Settings.from_env` reads and checks
them all, at the door of a command or of the Dagster definitions, except two read where they are used:
the models folder (:func:`models_dir`, which a command's ``--models-dir`` replaces) and the keys' values
(:func:`api_key`). The readers :meth:`Settings.from_env` is made of are also called where a value is
read at the moment of use: :func:`lock_timeout_from_env` (a lock about to be waited for),
:func:`storage_version_from_env` and :func:`dashboard_url_from_env` (a publish),
:meth:`EngineSettings.from_env`, :meth:`OpsSettings.from_env`.

The rate defaults are declared once, here (:class:`RateSettings`; the client's
:class:`rank_pipeline.api.ClientConfig` extends it). Keys are never held by :class:`Settings`:
:attr:`AccountConfig.api_key_env` names the variable, and :func:`api_key` reads it when a run opens the
source (:func:`rank_pipeline.extract.source.read_keys`); a key is never logged.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from rank_pipeline.errors import EXIT_USAGE, RankPipelineError

__all__ = [
    "DAGSTER_PG_URL_ENV",
    "DEFAULT_MAX_IN_FLIGHT",
    "ENGINES",
    "SHARDS_ENV",
    "SHARD_ADDRESSES_ENV",
    "SHARD_ENV",
    "SNAPSHOTS_URI_ENV",
    "SPEC_PER_IP_LIMIT",
    "SPEC_PER_KEY_LIMIT",
    "SPEC_WINDOW_S",
    "AccountConfig",
    "ConfigurationError",
    "DataPaths",
    "EngineSettings",
    "OpsSettings",
    "RateSettings",
    "Settings",
    "Shard",
    "ShardPlan",
    "StorageError",
    "api_key",
    "check_uri",
    "dashboard_url_from_env",
    "lock_timeout_from_env",
    "models_dir",
    "parse_shard",
    "shard_of",
    "storage_version_from_env",
    "unset_for_demo",
]

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


class ConfigurationError(RankPipelineError, ValueError):
    """A setting is missing or malformed; the message says which variable and what to set (exit 2)."""

    exit_status = EXIT_USAGE


BASE_URL_ENV = "RANK_TRACKER_BASE_URL"
"""The vendor's base address; unset: the embedded sandbox."""


# --- the client's pace (spec "Limits") ------------------------------------------------------------

SPEC_PER_KEY_LIMIT = 300
"""Requests per API key per window (spec "Limits": 300 per minute, REST and GraphQL combined)."""
SPEC_PER_IP_LIMIT = 600
"""Requests per IP address per window, across keys (spec "Limits": 600 per minute)."""
SPEC_WINDOW_S = 60.0
"""The ceilings' window in seconds (spec "Limits": one minute)."""
DEFAULT_MAX_IN_FLIGHT = 16
"""Requests in flight at once per client (and per key of its pool)."""


@dataclass(frozen=True)
class RateSettings:
    """How fast a run may call the vendor API: the ceilings it paces itself to and its concurrency.

    Read from ``RANK_TRACKER_RATE_PER_KEY``, ``RANK_TRACKER_RATE_PER_IP``, ``RANK_TRACKER_RATE_WINDOW_S``
    and ``RANK_TRACKER_MAX_IN_FLIGHT`` (:meth:`from_env`); :class:`rank_pipeline.api.ClientConfig`
    extends this class with the client's other settings, so the rate fields and their defaults are
    declared here only.

    Attributes:
        per_key_limit: the server's ceiling per API key per window (requests).
        per_ip_limit: the server's ceiling per IP address per window, across keys (requests).
        window_s: the ceilings' window in seconds.
        max_in_flight: requests in flight at once per client (also the connection-pool size).
    """

    per_key_limit: int = SPEC_PER_KEY_LIMIT
    per_ip_limit: int = SPEC_PER_IP_LIMIT
    window_s: float = SPEC_WINDOW_S
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RateSettings:
        """Read the rate variables: per key and per IP 1..100000, window 1..86400 s, in flight 1..1024.

        Raises:
            ConfigurationError: a value that is not a finite number within its range (``nan``, ``inf``,
                ``1e-9``).
        """
        env = os.environ if env is None else env
        return cls(
            per_key_limit=int(_number(env, "RANK_TRACKER_RATE_PER_KEY", SPEC_PER_KEY_LIMIT, int, 1, 100_000)),
            per_ip_limit=int(_number(env, "RANK_TRACKER_RATE_PER_IP", SPEC_PER_IP_LIMIT, int, 1, 100_000)),
            window_s=float(_number(env, "RANK_TRACKER_RATE_WINDOW_S", SPEC_WINDOW_S, float, 1.0, 86_400.0)),
            max_in_flight=int(_number(env, "RANK_TRACKER_MAX_IN_FLIGHT", DEFAULT_MAX_IN_FLIGHT, int, 1, 1024)),
        )


# --- shards ---------------------------------------------------------------------------------------

SHARD_ENV = "RANK_PIPELINE_SHARD"
"""``i/n``: the shard of the accounts this worker extracts (:mod:`rank_pipeline.snapshots.shards`)."""
MAX_SHARDS = 1024
_SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def shard_of(account: str, count: int) -> int:
    """The shard (``0 .. count-1``) of an account name: ``blake2b(name, 8 bytes) mod count``."""
    digest = hashlib.blake2b(account.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based); what a shard means: :mod:`rank_pipeline.snapshots.shards`."""

    index: int
    count: int

    def owns(self, account: str) -> bool:
        """True when ``account`` (its name) belongs to this shard."""
        return shard_of(account, self.count) == self.index

    def select(self, names: Iterable[str]) -> list[str]:
        """The names of ``names`` this shard owns, in order."""
        return [n for n in names if self.owns(n)]

    @property
    def key(self) -> str:
        """``<i>-of-<n>``: the shard's Dagster partition key (:class:`ShardPlan`)."""
        return f"{self.index}-of-{self.count}"

    @classmethod
    def from_key(cls, key: str) -> Shard:
        """The shard of a partition key ``<i>-of-<n>`` (:attr:`key`).

        Raises:
            ValueError: not ``<i>-of-<n>`` with ``0 <= i < n <= 1024``.
        """
        match = re.match(r"^(\d+)-of-(\d+)$", key)
        if not match or not 0 <= int(match.group(1)) < int(match.group(2)) <= MAX_SHARDS:
            raise ValueError(f"{key!r} is not a shard partition key: expected <i>-of-<n>, e.g. 0-of-2")
        return cls(int(match.group(1)), int(match.group(2)))

    @property
    def manifest_name(self) -> str:
        """``_manifest.shard-<i>-of-<n>.json``: the manifest this shard commits in a day's folder."""
        return f"_manifest.shard-{self.index}-of-{self.count}.json"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(raw: str | None, *, name: str = SHARD_ENV) -> Shard | None:
    """``"i/n"`` as a :class:`Shard`; None when unset or empty.

    Raises:
        ValueError: not ``i/n`` with ``0 <= i < n <= 1024`` (one line naming ``name`` and what to set).
    """
    if raw is None or not raw.strip():
        return None
    match = _SHARD_RE.match(raw)
    if not match or not (0 <= int(match.group(1)) < int(match.group(2)) <= MAX_SHARDS):
        raise ValueError(f"{name}={raw!r} is not a shard: set it to i/n with 0 <= i < n <= {MAX_SHARDS} "
                         "(e.g. 0/2 and 1/2 for two workers), or unset it to extract every account")
    return Shard(int(match.group(1)), int(match.group(2)))


SHARDS_ENV = "RANK_PIPELINE_SHARDS"
"""``n``: Dagster extracts each day as ``n`` shard partitions (:class:`ShardPlan`)."""
SHARD_ADDRESSES_ENV = "RANK_PIPELINE_SHARD_ADDRESSES"
"""``shared`` or ``own``: whether the shard runs of a day share one IP address (:class:`ShardPlan`)."""


@dataclass(frozen=True)
class ShardPlan:
    """Extraction sharded under Dagster: ``count`` shards per day, each a partition of its own run.

    ``RANK_PIPELINE_SHARDS=n`` (2..1024) makes the extraction assets partitioned by day x shard
    (``0-of-n`` .. ``<n-1>-of-n``, :attr:`Shard.key`); shard ``i`` extracts the accounts of
    :class:`Shard` ``i/n`` and commits its shard manifests, as a ``RANK_PIPELINE_SHARD=i/n`` worker does.
    ``RANK_PIPELINE_SHARD=i/n`` is for one worker started by hand; the two are not set together.

    Budgets (spec "Limits": per key and per IP address): a shard extracts its own accounts, so per-key
    budgets never overlap. The per-IP ceiling is per address: with ``own_addresses`` False
    (``RANK_PIPELINE_SHARD_ADDRESSES=shared``, the default: the runs of one machine leave from one
    address) each shard paces to ``floor(per_ip_limit / n)`` (at least 1), so the ``n`` shards together
    stay within one address's ceiling; with ``own`` (each shard run on its own address, e.g. its own
    machine) each paces to the full ceiling, so ``n`` shards extract up to ``n`` times as fast.
    """

    count: int
    own_addresses: bool = False

    @property
    def shards(self) -> list[Shard]:
        """Shard ``0/n`` .. ``n-1/n``, in order."""
        return [Shard(i, self.count) for i in range(self.count)]

    def rates(self, rates: RateSettings) -> RateSettings:
        """The rate settings one shard run paces to: ``rates`` with the per-IP ceiling divided by
        :attr:`count` when the shards share an address (requests per window, at least 1)."""
        if self.own_addresses:
            return rates
        return replace(rates, per_ip_limit=max(1, rates.per_ip_limit // self.count))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ShardPlan | None:
        """``RANK_PIPELINE_SHARDS`` and ``RANK_PIPELINE_SHARD_ADDRESSES``; None when unset or 1.

        Raises:
            ConfigurationError: a count that is not a whole number 1..1024, an addresses value other than
                ``shared`` or ``own``, or ``RANK_PIPELINE_SHARD`` set too (one line each).
        """
        env = os.environ if env is None else env
        count = int(_number(env, SHARDS_ENV, 1, int, 1, MAX_SHARDS))
        addresses = (env.get(SHARD_ADDRESSES_ENV) or "").strip().lower() or "shared"
        if addresses not in ("shared", "own"):
            raise ConfigurationError(
                f"{SHARD_ADDRESSES_ENV}={env.get(SHARD_ADDRESSES_ENV)!r} is not shared or own: set shared when "
                "the shard runs leave from one IP address (each paces to 1/n of the per-IP ceiling), own when "
                "each has its own address, or unset it")
        if count == 1:
            return None
        if (env.get(SHARD_ENV) or "").strip():
            raise ConfigurationError(
                f"{SHARD_ENV} and {SHARDS_ENV} are both set: {SHARDS_ENV}={count} makes Dagster run every "
                f"shard of a day as a partition; {SHARD_ENV}=i/n is for one `rank-pipeline extract` worker "
                "started by hand. Unset one")
        return cls(count, own_addresses=addresses == "own")


# --- where the snapshots live ---------------------------------------------------------------------

SNAPSHOTS_URI_ENV = "RANK_PIPELINE_SNAPSHOTS_URI"
"""The environment variable naming where snapshots live (:mod:`rank_pipeline.snapshots.storage`)."""
S3_SCHEMES = frozenset({"s3", "s3a"})
S3_OPTIONS = frozenset({"endpoint_override", "region", "scheme"})
"""Query parameters an ``s3://`` snapshots URI may carry."""
PYARROW_SCHEMES = frozenset({"gs", "gcs", "hdfs", "viewfs", "abfs", "abfss"})
"""Schemes opened by :func:`pyarrow.fs.FileSystem.from_uri` (others go through fsspec)."""
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class StorageError(RankPipelineError, ValueError):
    """A snapshots URI is malformed or names an unsupported store; the message says what to set (exit 2)."""

    exit_status = EXIT_USAGE

    @classmethod
    def bad_uri(cls, raw: str, why: str) -> StorageError:
        """One line: the URI (without credentials: :func:`redact_uri`), ``why`` it is refused, what to set."""
        return cls(f"{SNAPSHOTS_URI_ENV}={redact_uri(raw)!r} {why}; set it to a local folder or "
                   "s3://bucket/prefix (or unset it for <data folder>/snapshots)")


def uri_scheme(raw: str) -> str | None:
    """The scheme of ``scheme://...`` in lower case, or None for a path."""
    match = _SCHEME_RE.match(raw)
    return match.group(1).lower() if match else None


def redact_uri(raw: str) -> str:
    """``raw`` without user info, query or fragment (they may hold secrets); a path is returned as is."""
    parts = urlsplit(raw)
    if not parts.scheme:
        return raw
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def check_uri(raw: str) -> None:
    """Validate a snapshots URI without connecting anywhere (the forms: :mod:`rank_pipeline.snapshots.storage`).

    Raises:
        StorageError: an empty value, a URI without ``//``, a path to a file, an ``s3://`` URI without a
            bucket, with credentials or with an unknown option, a scheme neither pyarrow nor fsspec
            supports (one line naming it).
    """
    text = raw.strip()
    if not text:
        raise StorageError.bad_uri(raw, "is empty")
    scheme = uri_scheme(text)
    if scheme is None:
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\\/]", text) and not re.match(r"^[A-Za-z]:", text):
            raise StorageError.bad_uri(text, "looks like a URI without '//'")
        path = Path(text).expanduser().resolve()
        if path.exists() and not path.is_dir():
            raise StorageError.bad_uri(text, "is a file, not a folder")
        return
    if scheme == "file" or scheme in PYARROW_SCHEMES:
        return
    parts = urlsplit(text)
    if scheme in S3_SCHEMES:
        bucket = parts.hostname or ""
        if not bucket or parts.username or parts.password:
            raise StorageError.bad_uri(
                text, "names no bucket" if not bucket else "holds credentials (use the AWS_* variables)")
        unknown = sorted(set(dict(parse_qsl(parts.query))) - S3_OPTIONS)
        if unknown:
            raise StorageError.bad_uri(
                text, f"has unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(S3_OPTIONS))})")
        return
    try:
        import fsspec
        from fsspec.registry import known_implementations
    except ImportError:  # pragma: no cover - fsspec is a dependency
        raise StorageError.bad_uri(text, f"uses the scheme {scheme!r}, which pyarrow does not support") from None
    if scheme not in known_implementations and scheme not in fsspec.available_protocols():
        raise StorageError.bad_uri(text, f"uses the scheme {scheme!r}, which neither pyarrow nor fsspec supports")


def snapshots_uri_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """``RANK_PIPELINE_SNAPSHOTS_URI`` stripped, None when unset or empty.

    Raises:
        ConfigurationError: a malformed URI (:func:`check_uri`; same message).
    """
    env = os.environ if env is None else env
    raw = (env.get(SNAPSHOTS_URI_ENV) or "").strip() or None
    if raw is not None:
        try:
            check_uri(raw)
        except StorageError as exc:
            raise ConfigurationError(str(exc)) from None
    return raw


# --- the model engine -----------------------------------------------------------------------------

ENGINE_ENV = "RANK_PIPELINE_ENGINE"
ENGINES = ("duckdb", "spark")
"""The engines that can build the SQL models (:mod:`rank_pipeline.transform.engines`)."""
DEFAULT_SPARK_MASTER = "local[2]"
SPARK_MASTER_ENV = "RANK_PIPELINE_SPARK_MASTER"
_SPARK_MASTER = re.compile(
    r"local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?"                       # local, local[2], local[*], local[2,3]
    r"|spark://[^\s:/,]+:\d{1,5}(,[^\s:/,]+:\d{1,5})*"                # a standalone master (or several, HA)
    r"|sc://[^\s:/;]+(:\d{1,5})?/?(;[^\s;=]+=[^\s;]*)*"               # a Spark Connect server
    r"|yarn|k8s://\S+")
"""The Spark master URLs ``RANK_PIPELINE_SPARK_MASTER`` accepts (:func:`check_spark_master`)."""


def check_spark_master(master: str) -> str:
    """``master`` if it is a Spark master URL: ``local[N]`` (``local``, ``local[*]``), ``spark://host:port``
    (a standalone cluster), ``sc://host[:port]`` (Spark Connect), ``yarn`` or ``k8s://...``.

    Raises:
        ConfigurationError: anything else (one line naming the variable and the accepted forms).
    """
    if _SPARK_MASTER.fullmatch(master) is None:
        raise ConfigurationError(f"{SPARK_MASTER_ENV}={master!r} is not a Spark master URL; use local[N], "
                                 "spark://host:port (a standalone cluster), sc://host:port (Spark Connect), "
                                 "yarn or k8s://...")
    return master


@dataclass(frozen=True)
class EngineSettings:
    """The model engine and its Spark settings (``RANK_PIPELINE_ENGINE``, ``RANK_PIPELINE_SPARK_MASTER``,
    ``RANK_PIPELINE_SPARK_WAREHOUSE_URI``; :mod:`rank_pipeline.transform.engines`)."""

    engine: str = "duckdb"
    spark_master: str = DEFAULT_SPARK_MASTER
    spark_warehouse_uri: str = "data/spark_warehouse"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, data_dir: str | Path | None = None) -> EngineSettings:
        """Read the engine variables; the Spark warehouse defaults to ``<data_dir>/spark_warehouse``
        (``data_dir`` default: ``RANK_PIPELINE_DATA_DIR``, else ``data``).

        Raises:
            ConfigurationError: an unknown engine or a malformed Spark master (:func:`check_spark_master`)
                (a ValueError; one line naming the variable).
        """
        env = os.environ if env is None else env
        engine = env.get(ENGINE_ENV, "duckdb").strip().lower() or "duckdb"
        if engine not in ENGINES:
            raise ConfigurationError(f"{ENGINE_ENV}={engine!r} is not one of {', '.join(ENGINES)}; "
                                     "unset it for duckdb")
        data = Path(data_dir if data_dir is not None else env.get("RANK_PIPELINE_DATA_DIR", "data"))
        return cls(
            engine=engine,
            spark_master=check_spark_master(env.get(SPARK_MASTER_ENV, DEFAULT_SPARK_MASTER).strip()
                                            or DEFAULT_SPARK_MASTER),
            spark_warehouse_uri=env.get("RANK_PIPELINE_SPARK_WAREHOUSE_URI", "").strip()
            or str(data / "spark_warehouse"),
        )


# --- values read at the moment of use -------------------------------------------------------------

LOCK_TIMEOUT_ENV = "RANK_PIPELINE_LOCK_TIMEOUT_S"
DEFAULT_LOCK_TIMEOUT_S = 3600.0
"""How long a run waits for another run of the same data folder before giving up (seconds)."""


def lock_timeout_from_env(env: Mapping[str, str] | None = None) -> float:
    """Seconds to wait for a held lock: ``RANK_PIPELINE_LOCK_TIMEOUT_S`` or :data:`DEFAULT_LOCK_TIMEOUT_S`.

    Raises:
        ConfigurationError: the variable is not a finite number of at least 0.
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
"""Environment variable naming the storage version of the published file (:mod:`rank_pipeline.warehouse.database`)."""
DEFAULT_STORAGE_VERSION = "v1.0.0"
"""The oldest DuckDB release whose storage format our warehouse fits in: readable by DuckDB 1.0 and later."""


def storage_version_from_env(env: Mapping[str, str] | None = None) -> str:
    """``RANK_PIPELINE_STORAGE_VERSION`` stripped, or :data:`DEFAULT_STORAGE_VERSION`; not checked here
    (``rank_pipeline.warehouse.database.Warehouse`` refuses a value that is not a DuckDB release)."""
    env = os.environ if env is None else env
    return (env.get(STORAGE_VERSION_ENV) or "").strip() or DEFAULT_STORAGE_VERSION


SANDBOX_SHAPE_ENV = "RANK_SANDBOX_SHAPE"
"""The shape the sandbox serves keyword records in (``default``, ``vendor-b``, ``language-string``, optionally
``NAME@YYYY-MM-DD``: from that simulated day on; :mod:`rank_pipeline.sandbox.shapes`)."""


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


def api_key(account: AccountConfig, env: Mapping[str, str] | None = None) -> str:
    """The value of ``account``'s key variable (:attr:`AccountConfig.api_key_env`), ``""`` when unset.

    The one place a key is read from the environment, when a run opens the source
    (:func:`rank_pipeline.extract.source.read_keys` checks it). The value is a secret: never log, store
    or repeat it in a message.
    """
    env = os.environ if env is None else env
    return env.get(account.api_key_env) or ""


def unset_for_demo(env: MutableMapping[str, str] | None = None) -> list[str]:
    """Remove from ``env`` (default ``os.environ``, so the Dagster definitions see it) the settings the demo
    replaces: ``RANK_TRACKER_BASE_URL`` (the demo always extracts from the embedded sandbox) and a
    ``RANK_PIPELINE_ENGINE`` other than ``duckdb`` (it prints marts from the published DuckDB file).

    Returns:
        the names of the variables that were set and are now removed, in that order.
    """
    env = os.environ if env is None else env
    removed = []
    if env.pop(BASE_URL_ENV, None):
        removed.append(BASE_URL_ENV)
    if env.get(ENGINE_ENV, "").strip().lower() not in ("", "duckdb"):
        env.pop(ENGINE_ENV)
        removed.append(ENGINE_ENV)
    return removed


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
    def partitioning_record(self) -> Path:
        """``dagster_partitioning.json``: how the snapshot assets of the folder's Dagster runs are partitioned
        (daily, or day x shard count; ``rank_pipeline.defs.shards.check_partitioning``)."""
        return self.data_dir / "dagster_partitioning.json"

    @property
    def vendor_fields(self) -> Path:
        """``vendor_fields.json``: the paths the vendor sends that the contract does not read, each with the
        day it was first seen (:mod:`rank_pipeline.shape.registry`)."""
        return self.data_dir / "vendor_fields.json"

    @property
    def alerts_ledger(self) -> Path:
        """``alerts.sqlite``: which alert went to which destination (:mod:`rank_pipeline.operations.alerts`)."""
        return self.data_dir / "alerts.sqlite"

    @property
    def logs_dir(self) -> Path:
        """Log files of command-line runs (one per command invocation)."""
        return self.data_dir / "logs"

    @property
    def cache_dir(self) -> Path:
        """Results kept between runs, each recomputed when its inputs change: the column lineage (from the
        models' files) and each snapshot day's path counts (``shape/``, for the next day's drift check);
        safe to delete."""
        return self.data_dir / "cache"


DAGSTER_PG_URL_ENV = "RANK_PIPELINE_DAGSTER_PG_URL"
"""The PostgreSQL URL of Dagster's storage; ``dagster.yaml`` names this variable (Dagster reads it when
the instance loads) so the URL, a secret, is never copied into a file."""

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
        pg = (env.get(DAGSTER_PG_URL_ENV) or "").strip() or None
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
    """Resolved settings. Build with :meth:`from_env`; see the module docstring for the variables.

    ``rates`` paces the client (:class:`RateSettings`), ``engine`` builds the models
    (:class:`EngineSettings`), ``lock_timeout_s`` is in seconds, ``storage_version`` is a DuckDB release
    (``v1.0.0``) or ``latest`` (checked when the warehouse is opened), ``dashboard_url`` has no trailing
    ``/``; ``ops`` holds the schedule, freshness, alerts and Dagster's storage (:class:`OpsSettings`).
    """

    base_url: str | None
    accounts: tuple[AccountConfig, ...]
    data_dir: Path
    rates: RateSettings = field(default_factory=RateSettings)
    snapshots_uri: str | None = None
    shard: Shard | None = None
    shards: ShardPlan | None = None
    ops: OpsSettings = field(default_factory=OpsSettings)
    keywords_file: Path | None = None
    engine: EngineSettings = field(default_factory=EngineSettings)
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
    storage_version: str = DEFAULT_STORAGE_VERSION
    dashboard_url: str = DEFAULT_DASHBOARD_URL
    sandbox_shape: str = "default"

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
                a malformed ``RANK_PIPELINE_SNAPSHOTS_URI`` or ``RANK_PIPELINE_SHARD``, a bad shard plan
                (:meth:`ShardPlan.from_env`),
                a malformed or repeated account name (``acme,acme``; ``a-b,a_b`` share one variable),
                a rate setting that is not a finite number within its range (``nan``, ``inf``,
                ``1e-9``; :meth:`RateSettings.from_env`), a data folder that is a file, a keywords file
                that is a folder, an unknown engine (:meth:`EngineSettings.from_env`), a lock timeout
                that is not a number of seconds (:func:`lock_timeout_from_env`), or a bad operations
                setting (:meth:`OpsSettings.from_env`). The storage version is checked where the
                warehouse is opened.
        """
        env = os.environ if env is None else env
        base_url = normalise_base_url(env.get(BASE_URL_ENV))
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
        blocking = next((p for p in data_dir.parents if p.exists() and not p.is_dir()), None)
        if blocking is not None:  # it could never be created: a part of its path is a file
            raise ConfigurationError(
                f"the data folder {data_dir} cannot be created: {blocking} is a file; set RANK_PIPELINE_DATA_DIR "
                "to a folder (it is created if missing)"
            )
        snapshots_uri = snapshots_uri_from_env(env)
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
            rates=RateSettings.from_env(env),
            snapshots_uri=snapshots_uri,
            shard=shard,
            shards=ShardPlan.from_env(env),
            ops=OpsSettings.from_env(env),
            keywords_file=keywords_path if keywords_file is not None else None,
            engine=EngineSettings.from_env(env, data_dir=data_dir),
            lock_timeout_s=lock_timeout_from_env(env),
            storage_version=storage_version_from_env(env),
            dashboard_url=dashboard_url_from_env(env),
            sandbox_shape=sandbox_shape_from_env(env),
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
