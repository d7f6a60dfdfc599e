"""Fixtures shared by the test folders."""

from __future__ import annotations

from contextlib import contextmanager

import pytest


@pytest.fixture(scope="session")
def served_source():
    """``served_source(base_url, {account: key}, **client_config)``: a context manager giving the
    ``source`` resource (:class:`rank_pipeline.extract.source.Source`) for a sandbox served at
    ``base_url``, each account's key in its own environment variable for the ``with`` block (keys reach
    a source only through the environment)."""
    from rank_pipeline.api import ClientConfig
    from rank_pipeline.extract.source import Source
    from rank_pipeline.settings import AccountConfig

    @contextmanager
    def source(base_url: str, keys: dict[str, str], **client):
        with pytest.MonkeyPatch.context() as env:
            for name, key in keys.items():
                env.setenv(f"TEST_RANK_KEY_{name.upper()}", key)
            yield Source(base_url, tuple(AccountConfig(n, f"TEST_RANK_KEY_{n.upper()}") for n in keys),
                         ClientConfig(**client))

    return source


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A Spark standalone master and two 1-core workers on loopback, started once per test session from
    the pyspark wheel (:func:`rank_pipeline.models.spark_cluster.start_cluster`) and stopped at its end,
    every JVM with it. Skipped without pyspark."""
    pytest.importorskip("pyspark")
    from rank_pipeline.models.spark_cluster import start_cluster

    with start_cluster(workers=2, cores=1, memory="1g", work_dir=tmp_path_factory.mktemp("spark_cluster")) as cluster:
        yield cluster


def _comparable(value):
    """Hashable and order-free: floats to 12 significant digits (sums over rows read in another order
    differ in the last bits), lists as tuples, dicts as sorted pairs."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, (list, tuple)):
        return tuple(_comparable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _comparable(v)) for k, v in value.items()))
    return value


@pytest.fixture(scope="session")
def published_marts():
    """``published_marts(path)``: every table of the schemas ``staging`` and ``marts`` of the DuckDB file
    at ``path`` as ``{"schema.name": sorted rows}``, the load's timestamps (``loaded_at``,
    ``extracted_at``, ``built_at``) left out and values made comparable (:func:`_comparable`)."""
    import duckdb

    def read(path) -> dict[str, list[tuple]]:
        out = {}
        with duckdb.connect(str(path), read_only=True) as con:
            tables = con.execute("select table_schema, table_name from information_schema.tables "
                                 "where table_schema in ('staging', 'marts') order by 1, 2").fetchall()
            for schema, name in tables:
                cols = [c for (c,) in con.execute(
                    "select column_name from information_schema.columns where table_schema = ? and "
                    "table_name = ? and column_name not in ('loaded_at', 'extracted_at', 'built_at') "
                    "order by ordinal_position", [schema, name]).fetchall()]
                select = ", ".join(f'"{c}"' for c in cols)
                rows = con.execute(f'select {select} from "{schema}"."{name}"').fetchall()
                out[f"{schema}.{name}"] = sorted((_comparable(tuple(row)) for row in rows), key=repr)
        return out

    return read
