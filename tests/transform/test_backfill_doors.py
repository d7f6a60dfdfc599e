"""Late days and backfills through the doors users go through: Dagster runs, and ``rank-pipeline rebuild``.

Against the embedded sandbox (it plays any day): the daily job runs day 3, then ONE ranged run (a
single-run backfill, as Dagster launches it for ``BackfillPolicy.single_run()``) covers the late days
1 .. 2: extraction plays both days, the raw load and every model receive the range, and the models
rebuild day 3 too. The published warehouse must then equal a full rebuild from the same snapshots.
Then ``rank-pipeline rebuild`` as a subprocess: a range, a full refresh, and bad input; and both doors on
Spark in one test, a later day failing its shape check among the snapshots Spark reads in place.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from support import PARTITION_START, dagster_job, rank_pipeline
from test_any_order import assert_equals_full_rebuild

from rank_pipeline.defs.extract_assets import extract_snapshots
from rank_pipeline.defs.jobs import daily_job, rebuild_job
from rank_pipeline.defs.model_assets import build_model_assets
from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource
from rank_pipeline.defs.warehouse_assets import build_publish_asset, load_raw_tables
from rank_pipeline.extract.source import Source
from rank_pipeline.snapshots.schema import ENDPOINTS
from rank_pipeline.steps.shape import SHAPE_CHECK
from tests.transform.model_folders import door_models

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e_backfill_doors")]

ROOT = Path(__file__).resolve().parents[2]
DAY1 = date(2026, 3, 2)
DAYS = [DAY1 + timedelta(days=i) for i in range(3)]


def _defs(data_dir: Path) -> dg.Definitions:
    model_assets, model_keys = build_model_assets()
    return dg.Definitions(
        assets=[extract_snapshots, load_raw_tables, *model_assets, build_publish_asset(model_keys)],
        jobs=[daily_job, rebuild_job],
        resources={"source": Source(None, ()), "warehouse": WarehouseResource(data_dir=str(data_dir)),
                   "model_engine": ModelEngineResource()},
    )


def _ranged(job, instance, first: date, last: date):
    """One run over the partition range, as a single-run backfill launches it."""
    return job.execute_in_process(instance=instance, raise_on_error=False, tags={
        "dagster/asset_partition_range_start": first.isoformat(),
        "dagster/asset_partition_range_end": last.isoformat(),
    })


def _reference(data_dir: Path, tmp: Path) -> Path:
    """A full rebuild of the same snapshots (``rank-pipeline rebuild --full-refresh``), in another folder;
    returns its published file."""
    other = tmp / "reference"
    shutil.copytree(data_dir / "snapshots", other / "snapshots")
    proc = _rebuild("--full-refresh", data_dir=other,
                    env={**PARTITION_START, "RANK_PIPELINE_MODELS_DIR": str(ROOT / "dbt_like_sql")})
    assert proc.returncode == 0 and " 0 failed; published " in proc.stdout, proc.stdout + proc.stderr
    return other / "warehouse.duckdb"


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("backfill")
    defs = _defs(data_dir)
    instance = dg.DagsterInstance.ephemeral()
    daily = defs.resolve_job_def(daily_job.name)
    assert daily.execute_in_process(partition_key=DAYS[2].isoformat(), instance=instance,
                                    raise_on_error=False).success
    result = _ranged(daily, instance, DAYS[0], DAYS[1])
    return data_dir, defs, instance, result


@pytest.mark.slow
def test_a_late_day_backfilled_in_one_run_leaves_the_published_warehouse_equal_to_a_full_rebuild(
        backfilled, tmp_path):
    data_dir, _, instance, result = backfilled
    assert result.success
    # one run materialized every day of the range, checks included
    key = dg.AssetKey(["marts", "fct_keyword_rankings_daily"])
    assert {d.isoformat() for d in DAYS} == set(instance.get_materialized_partitions(key))
    checks = [e for e in result.get_asset_check_evaluations() if e.asset_key == key]
    assert checks and all(c.passed for c in checks)
    rebuilt = [e for e in result.get_asset_materialization_events()
               if e.asset_key == key][0].materialization.metadata["rebuilt_days"].value
    assert rebuilt == f"{DAYS[0]} .. {DAYS[2]}"  # the later loaded day within the horizon too
    published = data_dir / "warehouse.duckdb"
    with duckdb.connect(str(published), read_only=True) as con:
        days = [r[0] for r in con.execute(
            "select distinct snapshot_date from marts.fct_keyword_rankings_daily order by 1").fetchall()]
    assert days == DAYS
    copy = tmp_path / "published.duckdb"
    shutil.copyfile(published, copy)
    with duckdb.connect(str(copy)) as con:
        assert_equals_full_rebuild(con, _reference(data_dir, tmp_path))


@pytest.mark.slow
def test_the_rebuild_job_selects_everything_but_the_extraction(backfilled):
    _, defs, _, _ = backfilled
    job = defs.resolve_job_def(rebuild_job.name)
    keys = {k.to_user_string() for k in job.asset_layer.executable_asset_keys}
    assert "raw/keywords" in keys and "marts/fct_keyword_rankings_daily" in keys and "warehouse/published" in keys
    assert not any(k.startswith("snapshots/") for k in keys)


_rebuild = functools.partial(rank_pipeline, "rebuild", cwd=ROOT)
"""``rank-pipeline rebuild *args`` in the clone (:func:`support.rank_pipeline`): a clean environment plus ``env``,
killed past 300 s unless ``timeout`` says otherwise. Each call names :data:`support.PARTITION_START` in ``env``,
the partitions' first day this process holds (tests/conftest.py), which the command was always given: the
rebuild jobs' partitions start there."""


@pytest.mark.slow
def test_rank_pipeline_rebuild_command(backfilled, tmp_path):
    data_dir, _, _, _ = backfilled
    work = tmp_path / "data"
    shutil.copytree(data_dir / "snapshots", work / "snapshots")
    shutil.copyfile(data_dir / "warehouse.build.duckdb", work / "warehouse.build.duckdb")
    # a snapshot day removed: a range rebuild drops that day's raw rows and every model row depending on it
    shutil.rmtree(work / "snapshots" / "keywords" / f"snapshot_date={DAYS[1].isoformat()}")
    proc = _rebuild("--from", DAYS[1].isoformat(), "--to", DAYS[1].isoformat(), data_dir=work, env=PARTITION_START)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"rebuilt {DAYS[1]} .. {DAYS[1]}: 1 day(s)"), proc.stdout
    with duckdb.connect(str(work / "warehouse.duckdb"), read_only=True) as con:
        (n,) = con.execute("select count(*) from raw.keywords where snapshot_date = ?", [DAYS[1]]).fetchone()
        assert n == 0
    ranged = tmp_path / "ranged.duckdb"
    shutil.copyfile(work / "warehouse.duckdb", ranged)

    proc = _rebuild("--full-refresh", data_dir=work, env=PARTITION_START)
    assert proc.returncode == 0, proc.stderr
    assert "(full refresh)" in proc.stdout
    with duckdb.connect(str(ranged)) as con:
        assert_equals_full_rebuild(con, work / "warehouse.duckdb")

    proc = _rebuild("--from", DAYS[2].isoformat(), "--to", DAYS[0].isoformat(), data_dir=work, env=PARTITION_START)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "swap them" in proc.stderr


@pytest.mark.slow
def test_a_rebuild_whose_blocking_test_fails_exits_1_in_one_line_and_publishes_nothing(backfilled, tmp_path):
    """A models folder with a blocking test that fails: ``rank-pipeline rebuild`` exits 1 with one line
    naming the test, and the published warehouse is byte for byte the one before."""
    data_dir, _, _, _ = backfilled
    work = tmp_path / "data"
    shutil.copytree(data_dir / "snapshots", work / "snapshots")
    shutil.copyfile(data_dir / "warehouse.duckdb", work / "warehouse.duckdb")
    before = (work / "warehouse.duckdb").read_bytes()
    models = tmp_path / "models"
    shutil.copytree(ROOT / "dbt_like_sql", models)
    yml = models / "marts" / "agg_domain_daily.yml"
    text = yml.read_text()
    assert "    tests:\n      - unique_combination: [domain_id, snapshot_date]\n" in text
    yml.write_text(text.replace(
        "    tests:\n      - unique_combination: [domain_id, snapshot_date]\n",
        "    tests:\n      - name: no_domain_tracks_keywords\n        expression: \"tracked_keywords = 0\"\n"
        "        blocking: true\n      - unique_combination: [domain_id, snapshot_date]\n", 1))

    proc = _rebuild("--full-refresh", data_dir=work,
                    env={**PARTITION_START, "RANK_PIPELINE_MODELS_DIR": str(models)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = proc.stderr.strip()
    assert line.count("\n") == 0, line
    assert "blocking data test(s) failed, the published warehouse was left as it was" in line
    assert "no_domain_tracks_keywords" in line
    assert (work / "warehouse.duckdb").read_bytes() == before


def _assert_spark_models_equal(duckdb_file: Path, uri: Path, models: Path = ROOT / "dbt_like_sql") -> None:
    """Every model of the project ``models`` has its Parquet table under ``uri``, equal to the same model in
    ``duckdb_file``, row by row."""
    import pyarrow.parquet as pq
    from test_spark_equality import _close, _rows

    from rank_pipeline.transform import load_project

    with duckdb.connect(str(duckdb_file), read_only=True) as con:
        for model in load_project(models).topological_order():
            duck_names, duck = _rows(con.sql(f'select * from "{model.schema}"."{model.name}"').to_arrow_table())
            assert (uri / model.schema / model.name).is_dir(), f"{model.qualified_name}: no Parquet table under {uri}"
            # the files hold every column; a model stored by day has snapshot_date=<day> folders: no hive partitioning
            spark_names, spark = _rows(pq.read_table(uri / model.schema / model.name, partitioning=None))
            assert spark_names == duck_names, model.qualified_name
            assert len(spark) == len(duck), (model.qualified_name, len(spark), len(duck))
            for d, s in zip(duck, spark, strict=True):
                assert all(_close(x, y) for x, y in zip(d, s, strict=True)), (model.qualified_name, d, s)
        (n,) = con.execute("select count(*) from marts.fct_keyword_rankings_daily").fetchone()
        assert n > 0


def _dagster_job(data_dir: Path, home: Path, job: str, day: date, env: dict[str, str] | None = None,
                 timeout: float = 600) -> subprocess.CompletedProcess:
    """``dagster job execute -m rank_pipeline.defs.definitions -j JOB`` for partition ``day``
    (:func:`support.dagster_job`), settings in the environment, the run recorded in the instance at ``home``
    (made here)."""
    home.mkdir(parents=True, exist_ok=True)
    return dagster_job(data_dir, job, {"dagster/partition": day.isoformat()}, home=home, env=env, timeout=timeout)


def _recorded_checks(home: Path) -> dict[str, set[tuple[str, str, bool]]]:
    """``{engine of the run: {(asset, check, passed)}}`` read from the instance's event log."""
    instance = dg.DagsterInstance.from_config(str(home))
    out = {}
    try:
        for run in instance.get_runs():
            published = [e.asset_materialization for e in instance.all_logs(
                run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
                if e.asset_materialization.asset_key == dg.AssetKey(["warehouse", "published"])]
            assert len(published) == 1, run.run_id
            engine = getattr(published[0].metadata.get("engine"), "value", "duckdb")
            out[engine] = {(e.dagster_event.event_specific_data.asset_key.to_user_string(),
                            e.dagster_event.event_specific_data.check_name,
                            e.dagster_event.event_specific_data.passed)
                           for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)}
    finally:
        instance.dispose()
    return out


def _spark_days(uri: Path, models: Path) -> dict[str, set[date]]:
    """``{model: the snapshot days its Parquet table under uri holds}`` of every model of ``models`` with the
    column ``snapshot_date``."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from rank_pipeline.transform import load_project

    out = {}
    for model in load_project(models).topological_order():
        table = pq.read_table(uri / model.schema / model.name, partitioning=None)
        if "snapshot_date" in table.column_names:
            out[model.qualified_name] = {d for d in pc.unique(table["snapshot_date"]).to_pylist() if d is not None}
    return out


def _duckdb_tables(build_db: Path) -> list[str]:
    """The tables of the build file ``build_db`` but the run history and the keywords file (which are DuckDB
    tables whatever the engine)."""
    with duckdb.connect(str(build_db), read_only=True) as con:
        tables = con.execute("select table_schema || '.' || table_name from information_schema.tables "
                             "where table_catalog = current_database()").fetchall()
    return [t for (t,) in tables if t not in ("ops.run_history", "raw.keywords_file")]


@pytest.mark.timeout(1800)
# make test runs it on local[2]; on the standalone cluster with -m spark_long (the daily job on the cluster is
# test_spark_doors.py's, in make test)
@pytest.mark.parametrize("where", [pytest.param("local[2]", marks=pytest.mark.spark),
                                   pytest.param("cluster", marks=[pytest.mark.spark_long, pytest.mark.cluster])])
@pytest.mark.slow
def test_spark_builds_what_duckdb_builds_through_both_doors_and_never_a_day_that_failed_its_shape_check(
        backfilled, tmp_path, where, request):
    """With ``RANK_PIPELINE_ENGINE=spark`` (the door subset of models, :data:`model_folders.DOOR_MODELS`, on both
    engines), both doors build every seed and model as Parquet under ``RANK_PIPELINE_SPARK_WAREHOUSE_URI``, each
    equal row by row to a DuckDB full rebuild of the same snapshots, and write nothing to DuckDB but the run
    history: the Dagster job ``rebuild_full_refresh`` (``dagster job execute`` on the project's definitions, one
    Spark session), which records the same asset checks (names and pass/fail) as on DuckDB; then, a later day
    having failed its shape check, ``rank-pipeline rebuild`` over a range, which rebuilds those days
    incrementally and a model whose table is gone whole: the failed day is in no model, though its snapshot is
    committed and Spark reads the snapshots in place (only the days the raw load took:
    docs/concepts/shape-check.md). A bad engine name exits 2 before anything runs.

    ``cluster``: the same on a standalone master with two workers."""
    from rank_pipeline.steps.shape import check_shape
    from rank_pipeline.transform import load_project

    master = request.getfixturevalue("spark_cluster").master_url if where == "cluster" else where
    data_dir, _, _, _ = backfilled
    home = tmp_path / "dagster_home"
    duck, spark = tmp_path / "duck", tmp_path / "spark"
    for work in (duck, spark):
        shutil.copytree(data_dir / "snapshots", work / "snapshots")
    models = door_models(tmp_path)  # the same folder on both engines
    uri = tmp_path / "spark_warehouse"
    spark_env = {"RANK_PIPELINE_ENGINE": "spark", "RANK_PIPELINE_SPARK_MASTER": master,
                 "RANK_PIPELINE_SPARK_WAREHOUSE_URI": str(uri), "RANK_PIPELINE_MODELS_DIR": str(models)}

    proc = _rebuild(data_dir=spark, env={**PARTITION_START, **spark_env, "RANK_PIPELINE_ENGINE": "sparkk"})
    assert proc.returncode == 2 and "RANK_PIPELINE_ENGINE='sparkk'" in proc.stderr, proc.stderr

    # the Dagster door: the same job on both engines
    proc = _dagster_job(duck, home, "rebuild_full_refresh", DAYS[2], env={"RANK_PIPELINE_MODELS_DIR": str(models)})
    assert proc.returncode == 0, proc.stderr[-4000:]
    proc = _dagster_job(spark, home, "rebuild_full_refresh", DAYS[2], env=spark_env, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    log = proc.stdout + proc.stderr
    assert log.count(f"model engine: spark on {master}, seeds and models as Parquet tables under "
                     f"{uri}: opening it once for this run") == 1, log[-4000:]  # one Spark session per run
    assert "spark: nothing to publish" in log
    # nothing was published to DuckDB: Spark's tables are the warehouse. The build file holds only the
    # run history (ops.run_history is a DuckDB table whatever the engine): no raw table, seed or model
    assert not (spark / "warehouse.duckdb").exists()
    assert _duckdb_tables(spark / "warehouse.build.duckdb") == []
    _assert_spark_models_equal(duck / "warehouse.duckdb", uri, models)

    checks = _recorded_checks(home)
    assert set(checks) == {"duckdb", "spark"}, checks.keys()
    project = load_project(models)
    expected = {(f"{r.schema}/{r.name}", t.name) for r in [*project.seeds.values(), *project.models.values()]
                for t in r.tests} | {(f"raw/{r}", c) for r in ENDPOINTS for c in ("one_row_per_record", SHAPE_CHECK)} | {
        (t.qualified_name.replace(".", "/"), test.name) for t in project.tables.values() for test in t.tests}
    assert {(a, c) for a, c, _ in checks["duckdb"]} == expected
    assert checks["spark"] == checks["duckdb"]

    # a later day the vendor sent in another shape: its snapshot is committed (the system of record), and its
    # shape check fails, so no raw load ever takes it
    failed = DAYS[-1] + timedelta(days=1)
    # the partitions' first day this process holds (tests/conftest.py), which the extract was always given
    extracted = rank_pipeline("extract", "--date", failed.isoformat(), data_dir=spark,
                              env={**PARTITION_START, "RANK_SANDBOX_SHAPE": "vendor-b"}, cwd=ROOT)
    assert extracted.returncode == 0, extracted.stderr[-3000:]
    assert not check_shape(project, spark / "snapshots", failed, failed).passed

    # the command line's door, over a range: the range's days rebuilt incrementally, and a model whose table is
    # not there (one added to the folder since, or its table removed) built whole from every day raw holds
    shutil.rmtree(uri / "staging" / "stg_domains")
    proc = _rebuild("--from", DAYS[-1].isoformat(), "--to", DAYS[-1].isoformat(), data_dir=spark,
                    env={**PARTITION_START, **spark_env}, timeout=1200)
    days = _spark_days(uri, models)
    assert not {m for m, held in days.items() if failed in held}, days  # the failed day is in no model
    assert days["staging.stg_domains"] == set(DAYS)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.startswith(f"rebuilt {DAYS[-1]} .. {DAYS[-1]}: 1 day(s)"), proc.stdout
    assert f"written as Parquet tables under {uri} (Spark)" in proc.stdout and "0 failed" in proc.stdout
    assert not (spark / "warehouse.duckdb").exists()
    assert _duckdb_tables(spark / "warehouse.build.duckdb") == []
    _assert_spark_models_equal(duck / "warehouse.duckdb", uri, models)


@pytest.mark.slow
def test_an_unknown_engine_fails_the_dagster_definitions_in_one_line(tmp_path):
    proc = _dagster_job(tmp_path / "data", tmp_path / "home", "rebuild_full_refresh", DAYS[2],
                        env={"RANK_PIPELINE_ENGINE": "sparkk"}, timeout=300)
    assert proc.returncode != 0
    assert "RANK_PIPELINE_ENGINE='sparkk' is not one of duckdb, spark" in proc.stderr, proc.stderr[-3000:]
