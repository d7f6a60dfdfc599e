"""Dagster resources: the rank-tracking source (vendor API or embedded sandbox) and the warehouse paths.

Keys reach Dagster only as ``dagster.EnvVar`` references (see :func:`source_from_env`), so run
configuration, the UI and run metadata show the variable's name, never its value.
"""


from datetime import date
from pathlib import Path

import dagster as dg

from rank_pipeline.api import ClientConfig
from rank_pipeline.extract import AccountSource
from rank_pipeline.settings import DataPaths, Settings

__all__ = ["AccountKey", "RankTrackerResource", "WarehouseResource", "source_from_env", "warehouse_from_env"]


class AccountKey(dg.Config):
    """One account: its name (written to snapshots and the warehouse) and its key (an ``EnvVar``)."""

    name: str
    api_key: str


class RankTrackerResource(dg.ConfigurableResource):
    """Where the day's records come from.

    ``base_url`` None means the embedded sandbox (started on 127.0.0.1 in the run's process, its clock
    set to the partition date). Rates follow the spec's "Limits" section (per key and per IP address,
    per ``window_s`` seconds); ``per_page`` (at most 1000), ``max_passes`` and ``settle_budget_requests``
    (re-reads of a list whose records shift between pages; None: the ClientConfig defaults) go to
    :class:`rank_pipeline.api.ClientConfig`.
    """

    base_url: str | None = None
    accounts: list[AccountKey] = []
    per_key_limit: int = 300
    per_ip_limit: int = 600
    window_s: float = 60.0
    max_in_flight: int = 16
    per_page: int = 1000
    max_passes: int | None = None
    settle_budget_requests: int | None = None

    @property
    def uses_sandbox(self) -> bool:
        return self.base_url is None

    def client_config(self) -> ClientConfig:
        """The extractor's pacing and pagination settings (:class:`rank_pipeline.api.ClientConfig`)."""
        optional = {k: v for k, v in (("max_passes", self.max_passes),
                                      ("settle_budget_requests", self.settle_budget_requests)) if v is not None}
        return ClientConfig(per_key_limit=self.per_key_limit, per_ip_limit=self.per_ip_limit,
                            window_s=self.window_s, max_in_flight=self.max_in_flight,
                            per_page=self.per_page, **optional)

    def open_source(self, snapshot_date: date) -> tuple[str, list[AccountSource]]:
        """``(base_url, accounts)`` to extract ``snapshot_date`` from.

        With the embedded sandbox, starts it if needed and sets its simulated today to the date.
        """
        if self.base_url is None:
            from rank_pipeline.embedded_sandbox import EmbeddedSandbox

            sandbox = EmbeddedSandbox.get().at(snapshot_date)
            return sandbox.base_url, sandbox.accounts()
        return self.base_url, [AccountSource(a.name, a.api_key) for a in self.accounts]

    def describe(self) -> str:
        """A log-safe description of the source (no key)."""
        if self.base_url is None:
            return "the embedded sandbox (RANK_TRACKER_BASE_URL is not set)"
        names = ", ".join(a.name for a in self.accounts)
        return f"{self.base_url} (accounts: {names})"


class WarehouseResource(dg.ConfigurableResource):
    """Paths of the snapshots and the DuckDB files, under ``data_dir`` (docs/architecture.md)."""

    data_dir: str

    @property
    def snapshots_dir(self) -> Path:
        return DataPaths(Path(self.data_dir)).snapshots_dir

    def warehouse(self):
        """The :class:`rank_pipeline.warehouse.Warehouse` over the build and published files."""
        from rank_pipeline.warehouse import Warehouse

        paths = DataPaths(Path(self.data_dir))
        return Warehouse(paths.build_db, paths.published_db)


def source_from_env(settings: Settings | None = None) -> RankTrackerResource:
    """The source resource described by the environment (see :mod:`rank_pipeline.settings`)."""
    settings = settings or Settings.from_env()
    common = dict(per_key_limit=settings.per_key_limit, per_ip_limit=settings.per_ip_limit,
                  window_s=settings.window_s, max_in_flight=settings.max_in_flight)
    if settings.uses_sandbox:
        return RankTrackerResource(**common)
    return RankTrackerResource(
        base_url=settings.base_url,
        accounts=[AccountKey(name=a.name, api_key=dg.EnvVar(a.api_key_env)) for a in settings.accounts],
        **common,
    )


def warehouse_from_env(settings: Settings | None = None) -> WarehouseResource:
    settings = settings or Settings.from_env()
    return WarehouseResource(data_dir=str(settings.data_dir))
