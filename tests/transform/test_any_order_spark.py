"""Any order of partition runs on Spark equals a full rebuild from the same snapshots.

Over the last five days ``d0 .. d4`` of the sandbox World of ``conftest.py``, one history runs days as the
daily job does on Spark: the day's snapshot is committed (copied into the run's snapshot root), the raw views
are re-registered (:meth:`SparkEngine.load_partitions`) and every model is built for the day
(:func:`rank_pipeline.transform.materialize.build_all` on a :class:`SparkEngine`): ``d0``, ``d1`` (days in
order), ``d4`` (a new last day after a gap), ``d2`` (a late day, backfill); ``d3`` is skipped (never run). Then every staging model and mart must equal, row by row, DuckDB's full rebuild
of the same snapshots (floats within 1e-9 relative), with the column types of the model's full-build SELECT
as Spark analyses it over the same tables (what a full Spark rebuild writes; that a full Spark build equals
DuckDB's is ``test_spark_equality.py``'s).

It also proves the builds were incremental: a new last day rebuilds only that day of the dated models
(``BuildResult.partition_date == until == day``, the other days' Parquet files untouched), and a late
day rebuilds that day up to the horizon of each model (:func:`rank_pipeline.transform.horizon.affected_ranges`).
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import duckdb
import pytest
from spark_cluster import INTERPRETED_CONF, LONG_SESSION_CONF, TINY_DATA_CONF
from test_spark_equality import assert_same_relation

from rank_pipeline.snapshots.schema import ENDPOINTS, partition_dir
from rank_pipeline.transform import load_project
from rank_pipeline.transform.materialize import build_all
from rank_pipeline.transform.rewrite import full_build_sql
from rank_pipeline.transform.spark_engine import SparkEngine
from rank_pipeline.transform.testing import partition_column
from rank_pipeline.warehouse.engines import load_partitions
from rank_pipeline.warehouse.raw_load import reload_raw_from_snapshots
from rank_pipeline.warehouse.warehouse_file import SCHEMAS

SPARK_SESSION_CONF = {**LONG_SESSION_CONF, **INTERPRETED_CONF, **TINY_DATA_CONF}
"""This module's session (``conftest.py``'s ``spark``) keeps Spark's own JIT (four builds, where C2 pays),
evaluates plans interpreted and runs them for tiny tables (``spark_cluster.INTERPRETED_CONF``,
``TINY_DATA_CONF``)."""

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group(name="spark_local"), pytest.mark.timeout(900)]

SQL_DIR = Path(__file__).resolve().parents[2] / "dbt_like_sql"


def _commit(sources: dict[date, Path], root: Path, day: date) -> None:
    """Put ``day``'s committed snapshot of every resource under ``root`` (what extraction of the day leaves)."""
    for resource in ENDPOINTS:
        target = Path(partition_dir(root, resource, day))
        if not target.exists():
            shutil.copytree(partition_dir(sources[day], resource, day), target)


def _files(engine: SparkEngine, schema: str, name: str, day: date) -> set[str]:
    folder = Path(engine.location(schema, name)) / f"snapshot_date={day.isoformat()}"
    return {p.name for p in folder.iterdir()}


def test_any_order_of_days_on_spark_equals_a_full_rebuild(spark, snapshots_dirs, scenario, tmp_path):
    days = list(scenario.days)[-5:]
    history, recent = snapshots_dirs
    sources = {d: (history if i < len(scenario.days) - scenario.incremental_days else recent)
               for i, d in enumerate(scenario.days)}
    d0, d1, d2, d3, d4 = days
    project = load_project(SQL_DIR)
    root = tmp_path / "snapshots"
    root.mkdir()
    engine = SparkEngine(spark, tmp_path / "spark_history")

    def run(day: date) -> dict:
        _commit(sources, root, day)
        load_partitions(engine, root, day, day)
        return build_all(engine, project, day)

    for day in (d0, d1):  # in order; d2 late, d3 never
        run(day)
    kept = _files(engine, "staging", "stg_keywords", d1)
    kept_rankings = _files(engine, "marts", "fct_keyword_rankings_daily", d0)

    new_day = run(d4)  # a new last day after a gap (d2 not yet run, d3 never): that day only
    for q in ("staging.stg_keywords", "marts.fct_keyword_rankings_daily", "marts.fct_keyword_best_position_daily",
              "marts.agg_domain_daily", "staging.stg_keyword_tags"):
        built = new_day[q]
        assert (built.mode, built.partition_date, built.until) == ("incremental", d4, d4), (q, built)
    assert new_day["marts.dim_keywords"].mode == "incremental"  # folded in after its watermark
    for q, built in new_day.items():  # the rows a build counted are the rows of its days in the table
        if built.mode == "incremental" and built.until is not None:
            schema, name = q.split(".")
            column = partition_column(project.relation(q))
            stored = engine.spark.table(f"`{schema}`.`{name}`").where(
                f"`{column}` between date '{built.partition_date}' and date '{built.until}'").count()
            assert built.rows == stored, (q, built.rows, stored)
    assert _files(engine, "staging", "stg_keywords", d1) == kept, "a day outside the build was rewritten"
    assert _files(engine, "marts", "fct_keyword_rankings_daily", d0) == kept_rankings

    late = run(d2)  # a late day: that day, and the later loaded days within each model's horizon
    assert (late["staging.stg_keywords"].partition_date, late["staging.stg_keywords"].until) == (d2, d2)
    assert (late["marts.fct_keyword_rankings_daily"].partition_date,
            late["marts.fct_keyword_rankings_daily"].until) == (d2, d4)
    assert late["marts.dim_keywords"].mode == "full_refresh"  # a day at or before the watermark
    # (a re-run of a built day on Spark: the rebuild door, test_backfill_doors.py, rebuilds the last day)

    loaded = [d0, d1, d2, d4]
    con = duckdb.connect(str(tmp_path / "full.duckdb"))
    for schema in SCHEMAS:
        con.execute(f"create schema if not exists {schema}")
    reload_raw_from_snapshots(con, root)
    from rank_pipeline.transform.duckdb_engine import DuckDBEngine

    build_all(DuckDBEngine(con), project, full_refresh=True)
    assert sorted(r[0] for r in con.execute("select distinct snapshot_date from raw.keywords").fetchall()) == loaded

    for model in project.topological_order():
        n = assert_same_relation(con, engine, model.schema, model.name)  # vs DuckDB's full rebuild
        # the types a full rebuild writes: its SELECT as Spark analyses it (not run)
        full_types = [(f.name, f.dataType.simpleString())
                      for f in spark.sql(engine.render(full_build_sql(model))).schema.fields]
        assert engine.column_types(model.qualified_name) == full_types, model.qualified_name
        if model.qualified_name in ("marts.fct_keyword_rankings_daily", "marts.dim_keywords"):
            assert n > 0
    con.close()
