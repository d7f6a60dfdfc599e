"""Environment-driven settings: where the API is, which accounts, where data goes, how fast to go.

The one reader of the ``RANK_*`` variables (all optional; none set: the embedded sandbox), listed in
:data:`rank_pipeline.settings.variables.VARIABLES` (docs/reference/settings.md). :meth:`Settings.from_env`
reads and checks them at a command's or the definitions' door (:class:`ConfigurationError`, one line);
keys are read only when a source opens (:func:`api_key`). Design: docs/concepts/operations.md, "Settings,
read once".
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
    FULL_REFRESH_BATCH_DAYS_ENV,
    LOCK_TIMEOUT_ENV,
    STORAGE_VERSION_ENV,
    check_memory_limit,
    dashboard_url_from_env,
    duckdb_memory_limit_from_env,
    full_refresh_batch_days_from_env,
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
from rank_pipeline.settings.paths import DataPaths, models_dir, shared_cache_dir
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
    "FULL_REFRESH_BATCH_DAYS_ENV",
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
    "check_memory_limit",
    "check_spark_master",
    "check_uri",
    "component_settings_from_env",
    "compose_models",
    "dashboard_url_from_env",
    "defs_yaml_text",
    "duckdb_memory_limit_from_env",
    "file_digest",
    "find_component_file",
    "find_project",
    "full_refresh_batch_days_from_env",
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
    "shared_cache_dir",
    "source_file",
    "source_paths",
    "start_partitions_at",
    "storage_version_from_env",
    "unset_for_demo",
    "uri_scheme",
]
