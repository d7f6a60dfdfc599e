"""The data folder's layout (:class:`DataPaths`) and the SQL models project (:func:`models_dir`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rank_pipeline.settings.user_project import UserProject, find_project, package_models_dir
from rank_pipeline.settings.values import ConfigurationError

__all__ = ["MODELS_DIR_ENV", "DataPaths", "models_dir", "shared_cache_dir"]

MODELS_DIR_ENV = "RANK_PIPELINE_MODELS_DIR"


def shared_cache_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """The user's cache folder of results derived from the models' files, shared by every data folder:
    ``$XDG_CACHE_HOME/rank-pipeline``, else ``~/.cache/rank-pipeline``; None when there is no home folder."""
    env = os.environ if env is None else env
    base = (env.get("XDG_CACHE_HOME") or "").strip()
    if base and Path(base).is_absolute():
        return Path(base) / "rank-pipeline"
    try:
        home = Path.home()
    except RuntimeError:  # no HOME and no password entry
        return None
    return home / ".cache" / "rank-pipeline" if home.is_absolute() else None  # 3.11: "~" left unexpanded


def models_dir(env: Mapping[str, str] | None = None, start: Path | None = None, *, component: bool = True) -> Path:
    """The SQL models project (``staging/``, ``marts/``, ``seeds/``, ``sources/``) the pipeline builds:
    ``RANK_PIPELINE_MODELS_DIR``; else, inside a user's project found from ``start``, the package's models with
    the project's files over them; else the ``dbt_like_sql/`` shipped in the package (or the checkout's).

    Raises ConfigurationError: the variable is not a folder, a project names a missing models folder, or no
    project is found.
    """
    env = os.environ if env is None else env
    raw = (env.get(MODELS_DIR_ENV) or "").strip()
    if raw:
        path = Path(raw).expanduser().resolve()
        if not path.is_dir():
            raise ConfigurationError(
                f"RANK_PIPELINE_MODELS_DIR={raw!r} is not a folder: set it to a models project (a copy of "
                "the shipped dbt_like_sql/ with your models added) or unset it"
            )
        return path
    found = None
    if component:  # the schema (pydantic) is loaded only when a models folder is asked for
        from rank_pipeline.settings.component_file import find_component_file

        found = find_component_file(start, env)
    if found is not None and found.attributes.models_dir is not None:
        return UserProject(found.root, (found.root / found.attributes.models_dir).resolve()).composed()
    project = find_project(start)
    return project.composed() if project is not None else package_models_dir()


@dataclass(frozen=True)
class DataPaths:
    """Where a run's files live under ``data_dir`` (docs/concepts/architecture.md; ``data/README.md``).

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
        (daily, or day x shard count; ``rank_pipeline.defs.shard_runs.check_partitioning``)."""
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
