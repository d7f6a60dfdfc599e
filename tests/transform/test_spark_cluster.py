"""The models through Spark Connect on a real standalone cluster, and the cluster module itself.

The cluster is a master and two workers, JVMs of their own started from the pyspark wheel's
``spark-class`` on loopback (``tests/spark_cluster.py``; the session fixture ``spark_cluster``). The
equality on the cluster itself (driver here, executors in the workers' JVMs) is ``test_spark_equality.py``'s.
With ``-m spark_long``: the same equality through a Spark Connect server (``sc://``) started from the
wheel's ``sbin/start-connect-server.sh``, its application on the same cluster: the client in this
process has no JVM.

The cluster module itself: it stops every JVM it started, also when the process that started it is
killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from spark_cluster import start_connect_server
from test_spark_equality import _build_and_compare

from rank_pipeline.transform.spark_engine import SparkEngine
from rank_pipeline.transform.spark_session import spark_session

# every test here starts a cluster: through the spark_cluster fixture, or one of its own
pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.xdist_group(name="spark"), pytest.mark.timeout(1800)]


@pytest.mark.spark_long  # Spark Connect stays in make test through test_spark_doors' sc:// run, also equal to DuckDB
def test_spark_marts_equal_duckdb_marts_through_spark_connect(spark_cluster, warehouse, snapshots_dirs, tmp_path):
    from rank_pipeline.transform.spark_files import is_connect

    environ = dict(os.environ)  # a Connect session sets SPARK_CONNECT_MODE_ENABLED in it
    with start_connect_server(spark_cluster.master_url, work_dir=tmp_path / "connect",
                              conf={"spark.sql.shuffle.partitions": "2"}) as server:
        spark = spark_session(server.url, shuffle_partitions=2)
        try:
            assert is_connect(spark) and not hasattr(spark, "_jvm")
            assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
            engine = SparkEngine(spark, tmp_path / "spark_warehouse")
            _build_and_compare(warehouse, engine, list(snapshots_dirs))
        finally:
            spark.stop()
            os.environ.clear()  # else the next session of this worker, and its subprocesses, ask for Connect
            os.environ.update(environ)


_STARTER = """
import os, sys
sys.path.insert(0, {tests!r})  # tests/spark_cluster.py: support code, not in the installed package
from spark_cluster import start_cluster
cluster = start_cluster(workers=1, work_dir=sys.argv[1])
print(" ".join(str(p.pid) for p in cluster.procs), flush=True)
sys.stdin.read()
""".replace("{tests!r}", repr(str(Path(__file__).resolve().parents[1])))


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _java_in(pgid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=,pgid=,comm=", "-e"], capture_output=True, text=True).stdout
    return [int(p) for p, g, c in (line.split(None, 2) for line in out.splitlines()) if int(g) == pgid and "java" in c]


def test_a_cluster_leaves_no_jvm_behind_when_its_starter_is_killed(tmp_path):
    """The process that started a master and a worker dies by SIGKILL: within a minute no process of
    either group (the JVMs included) is left."""
    proc = subprocess.Popen([sys.executable, "-c", _STARTER, str(tmp_path / "cluster")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        groups = [int(p) for p in proc.stdout.readline().split()]
        assert len(groups) == 2, groups  # the master's and the worker's
        assert all(_java_in(g) for g in groups), "a JVM in each group while the starter lives"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 60
        while any(_group_alive(g) for g in groups) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not any(_group_alive(g) for g in groups), [_java_in(g) for g in groups]
    finally:
        if proc.poll() is None:
            proc.kill()
