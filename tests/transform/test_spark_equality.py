"""The same SQL models on DuckDB and on Spark give the same marts, row by row.

Both engines read the same Parquet snapshots (conftest's 35-day world: the history root and the recent
root). DuckDB loads them into its raw tables and builds every model in full (the ``warehouse`` fixture,
every yml test run there); Spark reads the manifest-listed files in place and builds every model with
:class:`rank_pipeline.transform.spark_engine.SparkEngine`. Every staging model and mart is then compared
row by row (rows sorted; floats within 1e-9 relative; timestamps compared as UTC instants), and every yml
test of every seed and model must pass on Spark too.

The Spark session is ``tests/transform/conftest.py``'s ``local[2]`` session for this module (one shuffle
partition, :data:`SPARK_SESSION_CONF`). The build is made ONCE per module (:func:`built`). On a real standalone cluster (executors in
the workers' JVMs) the user's doors run the models: ``test_spark_doors.py`` (``rank-pipeline run`` on the
cluster and through Spark Connect, each equal to DuckDB) and, with ``-m spark_long``, the Dagster job on the
cluster in ``test_backfill_doors.py`` and every model through Spark Connect in ``test_spark_cluster.py``.
Incremental builds in any order of days are ``test_any_order_spark.py``'s.

The SQL unit tests of every model (``unit_tests:`` in the .yml) run on Spark too: the same given rows,
typed on DuckDB and handed to Spark as Arrow, the model's SELECT transpiled and run by Spark, its rows
compared with the expected ones as on DuckDB.

``-m spark_long`` selects the longer variant: the gapped history (missed days, a bulk import, deletions)
compared the same way.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import pytest
from spark_cluster import INTERPRETED_CONF, TINY_DATA_CONF

from rank_pipeline.transform import load_project
from rank_pipeline.transform.materialize import build, build_all
from rank_pipeline.transform.primitives import BuildResult
from rank_pipeline.transform.spark_engine import SparkEngine
from rank_pipeline.transform.testing import run_tests
from rank_pipeline.transform.unit_tests import run_unit_tests
from rank_pipeline.warehouse.engines import reload_raw
from rank_pipeline.warehouse.raw_load import raw_tables

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group(name="spark_equality"), pytest.mark.timeout(1800)]

SQL_DIR = Path(__file__).resolve().parents[2] / "dbt_like_sql"

SPARK_SESSION_CONF = {**INTERPRETED_CONF, **TINY_DATA_CONF}
"""This module's session (``conftest.py``'s ``spark``) evaluates plans interpreted and runs them for tiny tables
(``spark_cluster.INTERPRETED_CONF``, ``TINY_DATA_CONF``)."""


def _norm(value):
    if isinstance(value, datetime):
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, list):
        return tuple(_norm(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _norm(v)) for k, v in value.items())
    return value


def _sort_key(row: tuple) -> tuple:
    """Order rows by their values (floats rounded, so tiny float differences cannot reorder rows)."""
    return tuple((v is None, round(v, 6) if isinstance(v, float) else str(v)) for v in row)


def _close(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _rows(table) -> tuple[list[str], list[tuple]]:
    names = table.column_names
    rows = [tuple(_norm(v) for v in r.values()) for r in table.to_pylist()]
    return names, sorted(rows, key=_sort_key)


def assert_same_relation(duck_con, engine: SparkEngine, schema: str, name: str) -> int:
    """Assert DuckDB's and Spark's ``schema.name`` hold the same rows; return the row count."""
    duck_names, duck = _rows(duck_con.sql(f'select * from "{schema}"."{name}"').to_arrow_table())
    spark_names, spk = _rows(engine.to_arrow(schema, name))
    assert spark_names == duck_names, f"{schema}.{name}: columns differ: {spark_names} vs {duck_names}"
    assert len(spk) == len(duck), f"{schema}.{name}: {len(spk)} rows on Spark, {len(duck)} on DuckDB"
    for i, (d, s) in enumerate(zip(duck, spk, strict=True)):
        bad = [c for c, x, y in zip(duck_names, d, s, strict=True) if not _close(x, y)]
        assert not bad, (f"{schema}.{name}: row {i} differs in {bad}: DuckDB {dict(zip(duck_names, d, strict=True))} "
                         f"vs Spark {dict(zip(spark_names, s, strict=True))}")
    return len(duck)


class Built(NamedTuple):
    """A build of the 35-day world on Spark: its engine, and its results by qualified name."""

    engine: SparkEngine
    results: dict[str, BuildResult]


@pytest.fixture(scope="module")
def built(spark, snapshots_dirs, tmp_path_factory) -> Built:
    """The 35-day world's every seed and model built once on this module's session (:func:`_build`). The
    warehouse path is given relative (to a fresh folder, the working directory during the build): the engine
    keeps it absolute (executors elsewhere resolve a relative path in their own folder; on a cluster:
    ``test_spark_doors.py``)."""
    folder = tmp_path_factory.mktemp("equality")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        engine = SparkEngine(spark, "spark_warehouse")
        assert engine.warehouse_uri == str(folder / "spark_warehouse")
        results = _build(engine, list(snapshots_dirs))
    return Built(engine, results)


def _build(engine: SparkEngine, roots) -> dict[str, BuildResult]:
    """Register the raw views over the snapshots under ``roots`` and build every seed and model on ``engine``;
    the build's results by qualified name."""
    files = {t.name: sum(len(d.files) for d in t.days)
             for t in raw_tables(roots, None, None, strict=False, footers=False) if t.dated}
    assert all(files.values()), files  # every endpoint has files to read
    reload_raw(engine, roots, count=False)
    return build_all(engine, load_project(SQL_DIR))


def _build_and_compare(duck_con, engine: SparkEngine, roots, expected_failures=frozenset()) -> None:
    """:func:`_build`, then :func:`_compare`."""
    _build(engine, roots)
    _compare(duck_con, engine, expected_failures)


def _compare(duck_con, engine: SparkEngine, expected_failures=frozenset()) -> dict[str, int]:
    """Every yml test of every seed and model passes on ``engine`` (but ``expected_failures``,
    ``<relation>.<test>``), and every model equals ``duck_con``'s row by row; returns each model's row count
    by qualified name."""
    project = load_project(SQL_DIR)
    failed = []
    for relation in [*project.seeds.values(), *project.topological_order()]:
        for result in run_tests(engine, relation):
            name = f"{relation.qualified_name}.{result.name}"
            if not result.passed and name not in expected_failures:
                failed.append(f"{name}: {result.failures} failing, e.g. {result.sample_rows[:1]}")
    assert not failed, "yml tests failed on Spark:\n" + "\n".join(failed)
    compared = {m.qualified_name: assert_same_relation(duck_con, engine, m.schema, m.name)
                for m in project.topological_order()}
    # the comparison is not vacuous: the marts with history hold rows on both engines
    for mart in ("marts.fct_keyword_rankings_daily", "marts.dim_keywords", "marts.fct_quota_cycle_daily",
                 "marts.fct_ranking_url_flips", "marts.agg_domain_daily"):
        assert compared[mart] > 0, mart
    return compared


def test_spark_marts_equal_duckdb_marts(built, warehouse):
    """Every yml test of every shipped seed and model passes on Spark's build (:func:`built`), and
    every shipped model equals DuckDB's row by row (:func:`_compare`); each model's build counted the rows
    DuckDB's table holds (the count the write observed, what the asset's ``rows`` metadata shows)."""
    compared = _compare(warehouse, built.engine)
    counted = {q: built.results[q].rows for q in compared}
    assert counted == compared


def test_a_full_refresh_in_steps_of_days_equals_duckdb_on_spark(built, warehouse, monkeypatch):
    """``RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS=20`` on Spark: a model read from views stored by day and one
    reading itself are rebuilt over the 35 days in two steps (the first written whole, the second replacing its
    day directories), and each still equals DuckDB's relation row by row."""
    monkeypatch.setenv("RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS", "20")
    project = load_project(SQL_DIR)
    for name in ("fct_competitors_daily", "fct_keyword_best_position_daily"):
        model = project.models[name]
        upstream = [tuple(q.split(".")) for q in model.depends_on if q.startswith("staging.")]
        first, last = built.engine.day_span(upstream, "snapshot_date")
        assert (last - first).days == 34
        result = build(built.engine, model, full_refresh=True)
        assert result.mode == "full_refresh" and f"'{(first + timedelta(days=20)).isoformat()}'" in result.sql
        assert built.engine.stored_by_day("marts", name, "snapshot_date")
        assert result.rows == assert_same_relation(warehouse, built.engine, "marts", name) > 0


def test_every_unit_test_passes_on_spark(spark, tmp_path):
    project = load_project(SQL_DIR)
    engine = SparkEngine(spark, tmp_path / "spark_warehouse_unit")
    ran = []

    def on_spark(model, inputs):
        ran.append(model.name)
        return engine.run_unit_select(model, inputs)

    results = run_unit_tests(project, engine=on_spark)
    assert len(results) == len(ran) == sum(len(m.unit_tests) for m in project.models.values()) > 16
    assert {m.name for m in project.models.values() if m.schema == "marts"} <= set(ran)
    failed = [r.report() for r in results if not r.passed]
    assert not failed, "\n".join(failed)


def test_a_wrong_expectation_fails_on_spark(spark, tmp_path):
    """The comparison on Spark can fail: one expected value changed in a copy of the models."""
    import shutil

    copy = tmp_path / "models"
    shutil.copytree(SQL_DIR, copy)
    yml = copy / "marts" / "agg_domain_daily.yml"
    yml.write_text(yml.read_text().replace("volatility_7d: 2.25}", "volatility_7d: 2.5}"))
    engine = SparkEngine(spark, tmp_path / "spark_warehouse_unit_wrong")
    [result, _] = run_unit_tests(load_project(copy), ["agg_domain_daily"], engine=engine.run_unit_select)
    assert not result.passed and result.error is None
    assert result.missing and result.unexpected and result.unexpected[0][-1] == 2.25


def test_a_table_stored_by_day_without_rows_keeps_its_columns_in_its_files(spark, tmp_path):
    """A model stored by day whose result has no row (``fct_ranking_url_flips`` of a one-day world) has no
    day directory; one empty Parquet file keeps its columns for readers outside Spark, and its next build
    with rows is stored by day again."""
    import pyarrow.parquet as pq

    engine = SparkEngine(spark, tmp_path / "spark_warehouse_empty")
    where = "tests (marts.flips)"
    select = "select 'acct' as account, date '2026-03-02' as snapshot_date, 3 as position"
    for days in (None, (date(2026, 3, 2), date(2026, 3, 2))):  # a whole build, then a build of one day
        assert engine.store.write(spark.sql(select + " where false"), "marts", "flips", where,
                             date_column="snapshot_date", days=days) == 0
        files = pq.read_table(engine.location("marts", "flips"), partitioning=None)
        assert (files.column_names, files.num_rows) == (["account", "snapshot_date", "position"], 0)
        assert engine.spark.table("marts.flips").columns == ["account", "snapshot_date", "position"]
        assert not engine.store.by_day("marts", "flips", "snapshot_date")
    assert engine.store.write(spark.sql(select), "marts", "flips", where, date_column="snapshot_date") == 1
    assert engine.store.by_day("marts", "flips", "snapshot_date")
    assert pq.read_table(engine.location("marts", "flips"), partitioning=None).to_pylist() == [
        {"account": "acct", "snapshot_date": date(2026, 3, 2), "position": 3}]


def test_the_warehouse_file_calls_ask_the_jvm_for_no_package(spark, tmp_path, monkeypatch):
    """A build renames every day directory it writes (hundreds a build): each file-system call names Hadoop's
    ``Path`` class whole, so py4j asks the JVM about no package prefix (``org``, ``org.apache`` ...), each of
    which the JVM looks up, and misses, in every one of Spark's jars. The calls still do their work."""
    import py4j.java_gateway as gateway

    asked = []
    for cls in (gateway.JVMView, gateway.JavaPackage):
        original = cls.__getattr__
        monkeypatch.setattr(cls, "__getattr__", lambda self, name, _o=original: asked.append(name) or _o(self, name))
    store = SparkEngine(spark, tmp_path / "spark_warehouse_files").store
    folder = tmp_path / "spark_warehouse_files" / "marts" / "t"
    (folder / "a").mkdir(parents=True)
    assert store.exists(str(folder / "a")) and not store.exists(str(folder / "b"))
    store.rename(str(folder / "a"), str(folder / "b"))
    assert store.entries(str(folder)) == ["b"]
    store.delete(str(folder / "b"))
    assert not (folder / "b").exists()
    assert asked == [], asked


@pytest.mark.spark_long
def test_spark_marts_equal_duckdb_marts_gapped_history(spark, gapped, tmp_path):
    """The gapped history: the DuckDB full build against Spark over the same snapshots."""
    roots = list(gapped.snapshot_roots)
    engine = SparkEngine(spark, tmp_path / "spark_warehouse_gapped")
    _build_and_compare(gapped.full, engine, roots,
                       expected_failures={"marts.fct_account_snapshot_coverage_daily.previous_day_snapshot_present"})


def test_the_contracts_selectors_timestamps_and_value_maps_read_alike_on_spark(spark):
    """The flattening of a contract with paths into arrays (an empty one included), epoch and text timestamps
    and value maps (tests/shape/test_contract_grammar.py's fields and records) gives on Spark what it gives on
    DuckDB, row by row."""
    import json
    import sys

    import duckdb

    from rank_pipeline.transform.flatten import flattening_sql
    from rank_pipeline.transform.spark_dialect import raw_view, to_spark_sql

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shape"))
    from test_contract_grammar import FIELDS, RECORDS

    sql = flattening_sql("things", FIELDS, ["n", "attributes"])
    with duckdb.connect() as con:
        con.execute("create schema raw; create table raw.things (n integer, attributes json)")
        con.executemany("insert into raw.things values (?, ?)", [(i, json.dumps(r)) for i, r in enumerate(RECORDS)])
        expected = [tuple(_norm(v) for v in row) for row in con.execute(f"select * from ({sql}) order by n").fetchall()]
    spark.createDataFrame([(i, json.dumps(r)) for i, r in enumerate(RECORDS)], "n int, attributes string") \
        .createOrReplaceTempView(raw_view("things"))
    got = [tuple(_norm(v) for v in row) for row in spark.sql(to_spark_sql(sql)).orderBy("n").collect()]
    assert got == expected


def test_raw_views_read_the_declared_columns_by_name_from_every_snapshot_version(spark, world, tmp_path):
    """Spark's raw views read what DuckDB's raw load reads, row by row: a day of the current snapshot version,
    and a day whose keyword files are version 1's (flattened copies of fields after the common columns,
    which are left out) with their columns in another order (read by name)."""
    import json

    import duckdb
    import pyarrow.parquet as pq
    from conftest import DAYS, write_snapshots

    from rank_pipeline.snapshots.reader import read_manifest
    from rank_pipeline.snapshots.schema import ENDPOINTS, partition_dir
    from rank_pipeline.transform.spark_dialect import raw_view
    from rank_pipeline.warehouse.raw_load import reload_raw_from_snapshots
    from rank_pipeline.warehouse.warehouse_file import SCHEMAS

    root = tmp_path / "snapshots"
    old_day, new_day = DAYS[:2]
    for day in (old_day, new_day):
        write_snapshots(world, root, day)
    folder = partition_dir(root, "keywords", old_day)
    for name in read_manifest(root, "keywords", old_day).files:
        current = pq.read_table(folder / name)
        old = current.append_column("match_type", current.column("type")).append_column("host", current.column("id"))
        pq.write_table(old.select(list(reversed(old.column_names))), folder / name)
    manifest = json.loads((folder / "_manifest.json").read_text())
    (folder / "_manifest.json").write_text(json.dumps({**manifest, "schema_version": 1}))

    engine = SparkEngine(spark, tmp_path / "spark_warehouse")
    counts = reload_raw(engine, root)
    with duckdb.connect() as con:
        for schema in SCHEMAS:
            con.execute(f"create schema if not exists {schema}")
        assert reload_raw_from_snapshots(con, root) == counts
        for name in ENDPOINTS:
            columns = [c for (c,) in con.execute(
                "select column_name from information_schema.columns where table_schema = 'raw' and table_name = ? "
                "and column_name <> 'loaded_at' order by ordinal_position", [name]).fetchall()]
            frame = spark.table(raw_view(name))
            assert frame.columns == [*columns, "loaded_at"], name
            duck = con.sql(f'select {", ".join(columns)} from raw."{name}"').to_arrow_table()
            assert _rows(frame.select(*columns).toArrow()) == _rows(duck), name
    assert counts[old_day]["keywords"] > 0


def test_a_table_of_many_day_folders_is_listed_in_as_many_tasks_as_the_session_s_parallelism(spark, tmp_path):
    """Past Spark's threshold of day folders, registering a table lists them in a Spark job: its tasks are capped
    at the session's default parallelism (``spark_session``), not one a folder (Spark's default, up to 10,000)."""
    from rank_pipeline.transform.spark_session import LISTING_PARALLELISM
    from rank_pipeline.transform.spark_storage import ParquetStore

    context = spark.sparkContext
    assert spark.conf.get(LISTING_PARALLELISM) == str(context.defaultParallelism)
    store = ParquetStore(spark, tmp_path / "spark_warehouse")
    days = spark.sql("select date_add(date '2026-01-01', cast(id as int)) as snapshot_date, id from range(40)")
    store.write(days, "marts", "many_days", "test", date_column="snapshot_date")
    threshold = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    kept = spark.conf.get(threshold)  # the tests' defaults list on the driver (tests/spark-conf)
    spark.conf.set(threshold, "32")
    context.setJobGroup("listing", "a table of 40 day folders registered")
    try:
        store.register("marts", "many_days")
    finally:
        spark.conf.set(threshold, kept)
        context.setLocalProperty("spark.jobGroup.id", None)
    tracker = context.statusTracker()
    tasks = [tracker.getStageInfo(stage).numTasks for job in tracker.getJobIdsForGroup("listing")
             for stage in tracker.getJobInfo(job).stageIds]
    assert tasks and max(tasks) <= context.defaultParallelism, tasks
    assert spark.table("marts.many_days").count() == 40
