"""The engine that builds the SQL models (``RANK_PIPELINE_ENGINE``) and its Spark master and warehouse."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rank_pipeline.settings.values import ConfigurationError

__all__ = ["DEFAULT_SPARK_MASTER", "ENGINES", "ENGINE_ENV", "SPARK_MASTER_ENV", "EngineKind", "EngineSettings",
           "check_spark_master", "describe", "needs_warehouse_uri"]

ENGINE_ENV = "RANK_PIPELINE_ENGINE"


@dataclass(frozen=True)
class EngineKind:
    """What is known of an engine before it is opened: ``description`` (one log line, ``{spark_master}`` and
    ``{spark_warehouse_uri}`` filled in), ``catalog`` its tables are named in, ``raw_kinds`` (Dagster kinds of
    its raw tables), ``writes_under_uri`` (``spark_warehouse_uri`` is then required).
    """

    description: str
    catalog: str
    raw_kinds: frozenset[str]
    writes_under_uri: bool = False


ENGINES: dict[str, EngineKind] = {
    "duckdb": EngineKind("model engine: duckdb (the warehouse's build file)", "warehouse", frozenset({"duckdb"})),
    "spark": EngineKind("model engine: spark on {spark_master}, seeds and models as Parquet tables under "
                        "{spark_warehouse_uri}", "spark_catalog", frozenset({"spark", "parquet"}),
                        writes_under_uri=True),
}
"""The engines that can build the SQL models, by name (``RANK_PIPELINE_ENGINE``; opened by
:func:`rank_pipeline.warehouse.engines.open_engine`)."""
DEFAULT_SPARK_MASTER = "local[2]"
SPARK_MASTER_ENV = "RANK_PIPELINE_SPARK_MASTER"
_SPARK_MASTER = re.compile(
    r"local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?"                       # local, local[2], local[*], local[2,3]
    r"|spark://[^\s:/,]+:\d{1,5}(,[^\s:/,]+:\d{1,5})*"                # a standalone master (or several, HA)
    r"|sc://[^\s:/;]+(:\d{1,5})?/?(;[^\s;=]+=[^\s;]*)*"               # a Spark Connect server
    r"|yarn|k8s://\S+")
"""The Spark master URLs ``RANK_PIPELINE_SPARK_MASTER`` accepts (:func:`check_spark_master`)."""


def check_spark_master(master: str) -> str:
    """``master`` if a Spark master URL: ``local[N]`` (``local``, ``local[*]``), ``spark://host:port``,
    ``sc://host[:port]``, ``yarn`` or ``k8s://...``. Raises ConfigurationError: anything else (one line).
    """
    if _SPARK_MASTER.fullmatch(master) is None:
        raise ConfigurationError(f"{SPARK_MASTER_ENV}={master!r} is not a Spark master URL; use local[N], "
                                 "spark://host:port (a standalone cluster), sc://host:port (Spark Connect), "
                                 "yarn or k8s://...")
    return master


@dataclass(frozen=True)
class EngineSettings:
    """The model engine and its Spark settings (``RANK_PIPELINE_ENGINE``, ``RANK_PIPELINE_SPARK_MASTER``,
    ``RANK_PIPELINE_SPARK_WAREHOUSE_URI``; :mod:`rank_pipeline.warehouse.engines`)."""

    engine: str = "duckdb"
    spark_master: str = DEFAULT_SPARK_MASTER
    spark_warehouse_uri: str = "data/spark_warehouse"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, data_dir: str | Path | None = None) -> EngineSettings:
        """Read the engine variables; the Spark warehouse defaults to ``<data_dir>/spark_warehouse``.

        Raises ConfigurationError: an unknown engine or a malformed Spark master (:func:`check_spark_master`).
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


def needs_warehouse_uri(settings: EngineSettings) -> bool:
    """True when the engine writes its tables under ``settings.spark_warehouse_uri`` (which is then required)."""
    return ENGINES[settings.engine].writes_under_uri


def describe(settings: EngineSettings) -> str:
    """One log line: the engine, and where it writes (no secret)."""
    return ENGINES[settings.engine].description.format(spark_master=settings.spark_master,
                                                       spark_warehouse_uri=settings.spark_warehouse_uri)
