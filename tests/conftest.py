"""Fixtures shared by the test folders, and the tiers' markers a test gets from the fixtures it uses.

The slow kinds (``spark``, ``cluster``, ``browser``, ``daemon``, ``postgres``, ``root``, and ``slow`` for
the rest that takes long; pyproject.toml registers them, ``make test-fast`` leaves them out) are set with ``pytestmark`` where a module or test
starts the real part itself, and here for every test using a fixture that starts it (:data:`FIXTURE_MARKERS`).
A test marked ``spark`` or ``root`` then checks, before its fixtures start, that the machine has what it
needs (:func:`support.require`: skip, or fail under ``CI=true``).

Every Spark application the tests start (in this process, in a ``rank-pipeline`` or benchmark subprocess,
on the cluster and Connect server of ``spark_cluster.py``) reads Spark's defaults from
``tests/spark-conf/`` (``spark_cluster.TEST_SPARK_CONF_DIR``, which says why): its JVMs compile with C1
only, unless a session that lives through a module asks otherwise, and its drivers list local folders
without a Spark job.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest
from spark_cluster import TEST_SPARK_CONF_DIR
from support import PARTITION_START, require_root, require_spark
from work_units import heaviest_first

FIXTURE_MARKERS: dict[str, tuple[str, ...]] = {
    "spark": ("spark",),                  # tests/transform/conftest.py: a local[2] session
    "spark_cluster": ("spark", "cluster"),  # below: a standalone master and two workers
    "dashboard_tools": ("browser",),      # tests/dashboards/conftest.py: Superset's venv and chromium
    "pg_server": ("postgres",),           # tests/operations/test_postgres_storage.py: a PostgreSQL server
    "gapped": ("slow",),                  # tests/transform/conftest.py: the second, gapped history built twice
}
"""Fixture name -> the markers of every test that uses it (directly or through another fixture)."""

os.environ["SPARK_CONF_DIR"] = str(TEST_SPARK_CONF_DIR)  # the tests' and their subprocesses', whatever the developer's
# tests building the definitions in process play fixed days (2025-11-20 ..) on fresh data folders, whose partitions
# would otherwise start today (rank_pipeline.snapshots.partition_start); a test of the default passes its own
# environment without it
os.environ.update({k: os.environ.get(k, v) for k, v in PARTITION_START.items()})


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        names = {m for fixture, marks in FIXTURE_MARKERS.items() if fixture in used for m in marks}
        if item.get_closest_marker("cluster"):  # a cluster is Spark too
            names.add("spark")
        for name in sorted(names - {m.name for m in item.iter_markers()}):
            item.add_marker(name)
    items[:] = heaviest_first(items)


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures start anything
def pytest_runtest_setup(item):
    if item.get_closest_marker("spark"):
        require_spark()
    if item.get_closest_marker("root"):
        require_root(item.name)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With ``RANK_TEST_TIMELINE`` naming a folder: one line a test in ``<folder>/<xdist worker>.tsv``, its node
    id, start and end (epoch seconds, setup and teardown included) and the CPU-seconds of this worker and its
    waited-for children (JVMs and commands the test ran) in that time; what ``make test``'s wall time is made of,
    worker by worker (unset: nothing written)."""
    folder = os.environ.get("RANK_TEST_TIMELINE")
    if not folder:
        yield
        return
    import resource
    import time

    def cpu() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    started, cpu_before = time.time(), cpu()
    yield
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{worker}.tsv"), "a") as out:
        out.write(f"{item.nodeid}\t{started:.1f}\t{time.time():.1f}\t{cpu() - cpu_before:.1f}\n")


@pytest.fixture(autouse=True)
def _dagster_home_restored():
    """``DAGSTER_HOME`` as the test found it: opening a data folder's instance in process
    (:func:`rank_pipeline.defs.instance.open_instance`, as the command line does) sets it, and the next test of
    the worker would otherwise open that folder's instance for its own."""
    before = os.environ.get("DAGSTER_HOME")
    yield
    if before is None:
        os.environ.pop("DAGSTER_HOME", None)
    else:
        os.environ["DAGSTER_HOME"] = before


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
    the pyspark wheel (``tests/spark_cluster.py``) and stopped at its end,
    every JVM with it. Its tests are marked ``spark`` and ``cluster`` (:data:`FIXTURE_MARKERS`)."""
    from spark_cluster import start_cluster

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
