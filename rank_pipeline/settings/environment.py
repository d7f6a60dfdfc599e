"""The whole environment read at once: :class:`Settings` and :meth:`Settings.from_env`, made of the readers
of the other settings modules."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rank_pipeline.settings.accounts import BASE_URL_ENV, AccountConfig, key_variable, normalise_base_url
from rank_pipeline.settings.at_use import (
    DEFAULT_DASHBOARD_URL,
    DEFAULT_LOCK_TIMEOUT_S,
    DEFAULT_STORAGE_VERSION,
    dashboard_url_from_env,
    duckdb_memory_limit_from_env,
    full_refresh_batch_days_from_env,
    lock_timeout_from_env,
    sandbox_shape_from_env,
    storage_version_from_env,
)
from rank_pipeline.settings.engine import EngineSettings
from rank_pipeline.settings.operations import OpsSettings
from rank_pipeline.settings.pace import RateSettings
from rank_pipeline.settings.paths import DataPaths
from rank_pipeline.settings.sharding import SHARD_ENV, Shard, ShardPlan, parse_shard
from rank_pipeline.settings.storage import snapshots_uri_from_env
from rank_pipeline.settings.values import ConfigurationError

__all__ = ["Settings"]

@dataclass(frozen=True)
class Settings:
    """Resolved settings; build with :meth:`from_env` (the variables: docs/reference/settings.md).

    ``rates`` (:class:`RateSettings`), ``engine`` (:class:`EngineSettings`), ``lock_timeout_s`` (seconds),
    ``storage_version`` (``v1.0.0`` or ``latest``, checked when the warehouse opens), ``duckdb_memory_limit``
    (``8GB``, ``50%``; None: DuckDB's default), ``full_refresh_batch_days`` (0: one build), ``dashboard_url`` (no
    trailing ``/``), ``ops`` (:class:`OpsSettings`); ``models_dir`` None: read at use (:func:`models_dir`).
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
    duckdb_memory_limit: str | None = None
    full_refresh_batch_days: int = 0
    dashboard_url: str = DEFAULT_DASHBOARD_URL
    sandbox_shape: str = "default"
    models_dir: Path | None = None

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
        """Read and check the settings of ``env`` (default ``os.environ``).

        Raises:
            ConfigurationError: one line for the first bad value: a base URL not http(s) or without its key
                variables, a malformed snapshots URI, shard or shard plan, a bad or repeated account name, a rate out
                of range, a data folder that is a file, a keywords file that is a folder, an unknown engine, a bad
                lock timeout, DuckDB memory limit, full refresh batch or operations setting (the storage version is checked when the warehouse opens).
        """
        env = os.environ if env is None else env
        base_url = normalise_base_url(env.get(BASE_URL_ENV))
        accounts = _accounts_from_env(env, base_url)
        data_dir = _data_dir_from_env(env)
        snapshots_uri = snapshots_uri_from_env(env)
        try:
            shard = parse_shard(env.get(SHARD_ENV))
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        keywords_file = _keywords_file_from_env(env)
        return cls(
            base_url=base_url,
            accounts=accounts,
            data_dir=data_dir,
            rates=RateSettings.from_env(env),
            snapshots_uri=snapshots_uri,
            shard=shard,
            shards=ShardPlan.from_env(env),
            ops=OpsSettings.from_env(env),
            keywords_file=keywords_file,
            engine=EngineSettings.from_env(env, data_dir=data_dir),
            lock_timeout_s=lock_timeout_from_env(env),
            storage_version=storage_version_from_env(env),
            duckdb_memory_limit=duckdb_memory_limit_from_env(env),
            full_refresh_batch_days=full_refresh_batch_days_from_env(env),
            dashboard_url=dashboard_url_from_env(env),
            sandbox_shape=sandbox_shape_from_env(env),
        )


def _accounts_from_env(env: Mapping[str, str], base_url: str | None) -> tuple[AccountConfig, ...]:
    """The accounts of ``RANK_TRACKER_ACCOUNTS`` (unset: ``default``, reading ``RANK_TRACKER_API_KEY``).

    Raises ConfigurationError: a malformed or repeated name (``a-b,a_b`` share one variable), or a
    ``base_url`` without its accounts' key variables.
    """
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
    return accounts


def _data_dir_from_env(env: Mapping[str, str]) -> Path:
    """``RANK_PIPELINE_DATA_DIR`` (default ``data``), absolute. Raises ConfigurationError: it, or a part of
    it, is a file."""
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
    return data_dir


def _keywords_file_from_env(env: Mapping[str, str]) -> Path | None:
    """``RANK_PIPELINE_KEYWORDS_FILE``, absolute (``~`` expanded), None when unset or blank.
    Raises ConfigurationError: it names a folder.
    """
    keywords_file = (env.get("RANK_PIPELINE_KEYWORDS_FILE") or "").strip() or None
    if keywords_file is None:
        return None
    keywords_path = Path(keywords_file).expanduser().resolve()
    if keywords_path.is_dir():
        raise ConfigurationError(
            f"RANK_PIPELINE_KEYWORDS_FILE={keywords_file!r} is a folder: set it to a keywords YAML file "
            "(see examples/keywords.yml) or unset it"
        )
    return keywords_path
