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
                                   (:mod:`rank_pipeline.settings.sharding`); unset: every account. For a
                                   worker started by hand (``rank-pipeline extract``).
``RANK_PIPELINE_SHARDS``           ``n`` (2..1024): Dagster runs each day's extraction as ``n`` shard
                                   partitions (day x shard ``i-of-n``) and the models once all have
                                   committed (:class:`ShardPlan`); unset or 1: one extraction per day.
``RANK_PIPELINE_SHARD_ADDRESSES``  ``shared`` (default) or ``own``: with ``RANK_PIPELINE_SHARDS``, whether
                                   the shard runs of a day leave from one IP address (each paces to 1/n
                                   of ``RANK_TRACKER_RATE_PER_IP``) or each from its own (full ceiling).
``RANK_PIPELINE_MODELS_DIR``       the SQL models project (default: inside a user's project, its models
                                   over the package's; else the ``dbt_like_sql/`` shipped with the
                                   package); see :func:`models_dir`.
``RANK_TRACKER_RATE_PER_KEY``      requests per key per window (spec "Limits": 300), 1..100000.
``RANK_TRACKER_RATE_PER_IP``       requests per IP address per window (spec "Limits": 600), 1..100000.
``RANK_TRACKER_RATE_WINDOW_S``     the window in seconds (spec: one minute), 1..86400.
``RANK_TRACKER_MAX_IN_FLIGHT``     concurrent requests per run (default 16), 1..1024.
``RANK_PIPELINE_LOCK_TIMEOUT_S``   seconds a run waits for another run of the same data folder
                                   (default 3600; used by :mod:`rank_pipeline.folder_lock`).
``RANK_PIPELINE_STORAGE_VERSION``  DuckDB storage version of the published warehouse (default
                                   ``v1.0.0``: DuckDB 1.0+ opens it; checked by ``warehouse.Warehouse``).
``RANK_PIPELINE_DASHBOARD_URL``    the dashboards' address linked from ``warehouse/published``
                                   (default http://127.0.0.1:8088; ``make dashboard``).
``RANK_SANDBOX_SHAPE``             the shape the embedded sandbox serves its records in: ``default``,
                                   ``vendor-b``, ``vendor-c``, ``vendor-d``, ``vendor-e``,
                                   ``engine-upper`` or ``language-string``, optionally
                                   ``NAME@YYYY-MM-DD`` from that simulated day on
                                   (``rank_pipeline.sandbox.shapes``).
``RANK_PIPELINE_PARTITION_START`` the first daily partition (``YYYY-MM-DD``, UTC); overrides the
                                   component's ``partition_start``; both unset: the data folder's first
                                   committed snapshot day, else the day of ``rank-pipeline init``
                                   (``[tool.rank_pipeline] started``), else today. A start after the first
                                   committed snapshot day is refused (it would drop materialized days).
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
                                   (:mod:`rank_pipeline.settings.engine`).
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

This package is the only one that reads these variables. :meth:`Settings.from_env` reads and checks
them all, at the door of a command or of the Dagster definitions, except two read where they are used:
the models folder (:func:`models_dir`, which a command's ``--models-dir`` replaces) and the keys' values
(:func:`api_key`). The readers :meth:`Settings.from_env` is made of are also called where a value is
read at the moment of use: :func:`lock_timeout_from_env` (a lock about to be waited for),
:func:`storage_version_from_env` and :func:`dashboard_url_from_env` (a publish),
:meth:`EngineSettings.from_env`, :meth:`OpsSettings.from_env`.

The rate defaults are declared once (:class:`RateSettings`; the client's
:class:`rank_pipeline.api.ClientConfig` extends it). Keys are never held by :class:`Settings`:
:attr:`AccountConfig.api_key_env` names the variable, and :func:`api_key` reads it when a run opens the
source (:func:`rank_pipeline.extract.source.read_keys`); a key is never logged.

One module per job; the names the rest of the package, the tests, benchmarks and examples use are re-exported here
(import them from ``rank_pipeline.settings``), the others are imported from their module:
:mod:`~rank_pipeline.settings.values` (:class:`ConfigurationError`, the bounded-number reader),
:mod:`~rank_pipeline.settings.pace` (the client's rate), :mod:`~rank_pipeline.settings.sharding`,
:mod:`~rank_pipeline.settings.storage` (where the snapshots live), :mod:`~rank_pipeline.settings.engine`
(the model engine), :mod:`~rank_pipeline.settings.at_use` (values read at the moment of use),
:mod:`~rank_pipeline.settings.accounts` (accounts, keys, the base address),
:mod:`~rank_pipeline.settings.paths` (the data folder's layout, the models project),
:mod:`~rank_pipeline.settings.user_project` (a user's project: its models laid over the package's),
:mod:`~rank_pipeline.settings.operations` (:class:`OpsSettings`) and
:mod:`~rank_pipeline.settings.environment` (:class:`Settings`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rank_pipeline.settings.accounts import (
    BASE_URL_ENV,
    AccountConfig,
    api_key,
    key_variable,
    unset_for_demo,
)
from rank_pipeline.settings.at_use import (
    DEFAULT_STORAGE_VERSION,
    LOCK_TIMEOUT_ENV,
    STORAGE_VERSION_ENV,
    dashboard_url_from_env,
    lock_timeout_from_env,
    sandbox_shape_from_env,
    storage_version_from_env,
)
from rank_pipeline.settings.engine import (
    DEFAULT_SPARK_MASTER,
    ENGINE_ENV,
    EngineSettings,
    check_spark_master,
)
from rank_pipeline.settings.environment import Settings
from rank_pipeline.settings.operations import (
    DAGSTER_PG_URL_ENV,
    SENSOR_INTERVAL_S,
    OpsSettings,
    start_partitions_at,
)
from rank_pipeline.settings.pace import (
    DEFAULT_MAX_IN_FLIGHT,
    SPEC_PER_IP_LIMIT,
    SPEC_PER_KEY_LIMIT,
    SPEC_WINDOW_S,
    RateSettings,
)
from rank_pipeline.settings.paths import DataPaths, models_dir
from rank_pipeline.settings.project_folder import load_project_dotenv
from rank_pipeline.settings.sharding import (
    SHARDS_ENV,
    Shard,
    ShardPlan,
    shard_of,
)
from rank_pipeline.settings.storage import (
    PYARROW_SCHEMES,
    S3_SCHEMES,
    SNAPSHOTS_URI_ENV,
    StorageError,
    check_uri,
    redact_uri,
    snapshots_uri_from_env,
    uri_scheme,
)
from rank_pipeline.settings.user_project import (
    UserProject,
    compose_models,
    file_digest,
    find_project,
    model_files,
    package_models_dir,
    source_file,
    source_paths,
)
from rank_pipeline.settings.values import ConfigurationError

if TYPE_CHECKING:
    from rank_pipeline.settings.component_file import ComponentAttributes, defs_yaml_text, find_component_file
    from rank_pipeline.settings.project import component_settings_from_env, project_settings_from_env

_LAZY = {"ComponentAttributes": "component_file", "defs_yaml_text": "component_file",
         "find_component_file": "component_file", "component_settings_from_env": "project",
         "project_settings_from_env": "project"}
"""Names read from a module on first use: the component's schema is a pydantic model, which a command that
does not read ``defs.yaml`` (``query``, ``--help``) does not import."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)

__all__ = [
    "BASE_URL_ENV",
    "DAGSTER_PG_URL_ENV",
    "DEFAULT_MAX_IN_FLIGHT",
    "DEFAULT_SPARK_MASTER",
    "DEFAULT_STORAGE_VERSION",
    "ENGINE_ENV",
    "LOCK_TIMEOUT_ENV",
    "PYARROW_SCHEMES",
    "S3_SCHEMES",
    "SENSOR_INTERVAL_S",
    "SHARDS_ENV",
    "SNAPSHOTS_URI_ENV",
    "SPEC_PER_IP_LIMIT",
    "SPEC_PER_KEY_LIMIT",
    "SPEC_WINDOW_S",
    "STORAGE_VERSION_ENV",
    "AccountConfig",
    "ComponentAttributes",
    "ConfigurationError",
    "DataPaths",
    "EngineSettings",
    "OpsSettings",
    "RateSettings",
    "Settings",
    "Shard",
    "ShardPlan",
    "StorageError",
    "UserProject",
    "api_key",
    "check_spark_master",
    "check_uri",
    "component_settings_from_env",
    "compose_models",
    "dashboard_url_from_env",
    "defs_yaml_text",
    "file_digest",
    "find_component_file",
    "find_project",
    "load_project_dotenv",
    "key_variable",
    "lock_timeout_from_env",
    "model_files",
    "models_dir",
    "package_models_dir",
    "project_settings_from_env",
    "redact_uri",
    "sandbox_shape_from_env",
    "shard_of",
    "snapshots_uri_from_env",
    "source_file",
    "source_paths",
    "start_partitions_at",
    "storage_version_from_env",
    "unset_for_demo",
    "uri_scheme",
]
