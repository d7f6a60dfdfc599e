"""Environment-driven settings: where the API is, which accounts, where data goes, how fast to go.

Environment variables (all optional; with none set the pipeline runs on the embedded sandbox):

=================================  ==========================================================
``RANK_TRACKER_BASE_URL``          the vendor's base address (spec: ``{base_url}``, without ``/v1``).
                                   Unset: the embedded sandbox is started on 127.0.0.1.
``RANK_TRACKER_API_KEY``           the key of the single account ``default``.
``RANK_TRACKER_ACCOUNTS``          several accounts: ``acme,globex``; each key in
                                   ``RANK_TRACKER_API_KEY_<NAME>`` (upper case).
``RANK_PIPELINE_DATA_DIR``         snapshots and warehouse folder (default ``./data``).
``RANK_TRACKER_RATE_PER_KEY``      requests per key per window (spec "Limits": 300).
``RANK_TRACKER_RATE_PER_IP``       requests per IP address per window (spec "Limits": 600).
``RANK_TRACKER_RATE_WINDOW_S``     the window in seconds (spec: one minute).
``RANK_TRACKER_MAX_IN_FLIGHT``     concurrent requests per run (default 16).
``RANK_PIPELINE_STORAGE_VERSION``  DuckDB storage version of the published warehouse (default
                                   ``v1.0.0``: DuckDB 1.0+ opens it; read by ``warehouse.Warehouse``).
``RANK_PIPELINE_DASHBOARD_URL``    the dashboards' address linked from ``warehouse/published``
                                   (default http://127.0.0.1:8088; ``make dashboard``).
=================================  ==========================================================

Keys are never held by :class:`Settings`: :meth:`Settings.api_key_env` names the variable, and the
Dagster layer reads it through ``dagster.EnvVar`` so it never appears in run configuration or metadata.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["AccountConfig", "ConfigurationError", "DataPaths", "Settings"]


class ConfigurationError(ValueError):
    """A setting is missing or malformed; the message says which variable and what to set."""


@dataclass(frozen=True)
class AccountConfig:
    """One account to extract: its name (used in snapshots and the warehouse) and its key's variable."""

    name: str
    api_key_env: str


@dataclass(frozen=True)
class DataPaths:
    """Where a run's files live under ``data_dir`` (docs/architecture.md; ``data/README.md``)."""

    data_dir: Path

    @property
    def snapshots_dir(self) -> Path:
        """The Parquet snapshots, the system of record."""
        return self.data_dir / "snapshots"

    @property
    def build_db(self) -> Path:
        """The pipeline's private DuckDB file (one writer)."""
        return self.data_dir / "warehouse.build.duckdb"

    @property
    def published_db(self) -> Path:
        """The DuckDB file analysts and BI tools open read-only; replaced atomically per run."""
        return self.data_dir / "warehouse.duckdb"


@dataclass(frozen=True)
class Settings:
    """Resolved settings. Build with :meth:`from_env`; see the module docstring for the variables."""

    base_url: str | None
    accounts: tuple[AccountConfig, ...]
    data_dir: Path
    per_key_limit: int = 300
    per_ip_limit: int = 600
    window_s: float = 60.0
    max_in_flight: int = 16

    @property
    def uses_sandbox(self) -> bool:
        """True when no base URL is configured and the embedded sandbox is the source."""
        return self.base_url is None

    @property
    def paths(self) -> DataPaths:
        """The snapshot folder and DuckDB files under :attr:`data_dir`."""
        return DataPaths(self.data_dir)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read the settings from ``env`` (default ``os.environ``).

        Raises:
            ConfigurationError: a base URL without any key variable set, a malformed account list,
                or a non-numeric rate setting.
        """
        env = os.environ if env is None else env
        base_url = (env.get("RANK_TRACKER_BASE_URL") or "").strip().rstrip("/") or None
        if base_url is not None and not re.match(r"^https?://", base_url):
            raise ConfigurationError(
                f"RANK_TRACKER_BASE_URL={base_url!r} is not an http(s) address; set it to the vendor's "
                "base address, e.g. https://api.example.com (without /v1)"
            )
        names = [n.strip() for n in (env.get("RANK_TRACKER_ACCOUNTS") or "").split(",") if n.strip()]
        if names:
            for name in names:
                if not re.match(r"^[A-Za-z0-9_-]{1,64}$", name):
                    raise ConfigurationError(
                        f"RANK_TRACKER_ACCOUNTS has {name!r}: account names are letters, digits, _ and -"
                    )
            accounts = tuple(AccountConfig(n, f"RANK_TRACKER_API_KEY_{n.upper().replace('-', '_')}") for n in names)
        else:
            accounts = (AccountConfig("default", "RANK_TRACKER_API_KEY"),)
        if base_url is not None:
            missing = [a.api_key_env for a in accounts if not env.get(a.api_key_env)]
            if missing:
                raise ConfigurationError(
                    f"RANK_TRACKER_BASE_URL is set but {', '.join(missing)} is not: export the API key "
                    "(created in the vendor's web application, Account, API) in that variable"
                )

        def number(name: str, default: float, kind: type) -> float:
            raw = env.get(name)
            if raw in (None, ""):
                return default
            try:
                value = kind(raw)
            except ValueError:
                raise ConfigurationError(f"{name}={raw!r} is not a number") from None
            if value <= 0:
                raise ConfigurationError(f"{name}={raw!r} must be positive")
            return value

        return cls(
            base_url=base_url,
            accounts=accounts,
            data_dir=Path(env.get("RANK_PIPELINE_DATA_DIR") or "data").resolve(),
            per_key_limit=int(number("RANK_TRACKER_RATE_PER_KEY", 300, int)),
            per_ip_limit=int(number("RANK_TRACKER_RATE_PER_IP", 600, int)),
            window_s=float(number("RANK_TRACKER_RATE_WINDOW_S", 60.0, float)),
            max_in_flight=int(number("RANK_TRACKER_MAX_IN_FLIGHT", 16, int)),
        )
