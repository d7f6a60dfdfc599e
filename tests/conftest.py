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
