"""Smoke tests of benchmarks/scale.py: a tiny workload on DuckDB alone, and the issue-21 rows (DuckDB, Spark
``local[2]`` and a standalone cluster of two workers, each with its incremental day) on a small one."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from spark_cluster import INTERPRETED_CONF, TINY_DATA_CONF

from tests.transform.model_folders import DOOR_MODELS, door_models

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "scale.py"


@pytest.mark.slow
def test_scale_benchmark_prints_a_row_per_size(tmp_path):
    proc = subprocess.run([sys.executable, str(BENCH), "--days", "3", "--keywords", "30,60", "--domains", "2",
                           "--engines", "duckdb", "--workdir", str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    table = proc.stdout.split("| keywords |", 1)[1]
    for n in (30, 60):
        assert re.search(rf"^\| {n} \| \d+ \| duckdb \|( [\d.]+ \|){{5}}$", table, re.M), proc.stdout
    assert "spark" not in table
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())  # cleaned up


def test_scale_benchmark_refuses_an_unknown_engine(tmp_path):
    proc = subprocess.run([sys.executable, str(BENCH), "--engines", "presto", "--workdir", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--engines takes duckdb, spark, cluster or several" in proc.stderr


SPARK_DAYS, SPARK_KEYWORDS, SPARK_DOMAINS = 2, 100, 2
"""The Spark smoke size: 2 days (a history of one day, then the incremental day) x 100 keywords over 2
domains, built with the door subset of the models (:data:`tests.transform.model_folders.DOOR_MODELS`,
``--models``). The smoke's point is the three rows and each Spark engine's incremental day, which any size
and any model of each kind shows; Spark's cost at this size is its fixed cost per relation and per day
stored, so more days, keywords or models only lengthen `make test` (the measured sizes and every model are
`make bench-scale`'s)."""

SPARK_SETTINGS = [arg for key, value in {**INTERPRETED_CONF, **TINY_DATA_CONF}.items() for arg in ("--conf", f"{key}={value}")]
"""The tests' settings for tiny tables (``spark_cluster.INTERPRETED_CONF``, ``TINY_DATA_CONF``) on both Spark
engines' sessions: the smoke shows the rows, not Spark's speed at its defaults (`make bench-scale`'s)."""

DATED = ("staging.stg_domains", "staging.stg_keywords", "marts.fct_keyword_best_position_daily",
         "marts.fct_keyword_rankings_daily")
"""The door subset's models stored by day (a dated view, incremental models): the ones the last day rebuilds
for that day only; the table and the fold (``dim_domains``, ``dim_keywords``) are built whole."""


@pytest.mark.cluster  # the benchmark starts Spark local[2] and a standalone cluster itself
@pytest.mark.xdist_group(name="spark_scale")  # its own cluster: not the session's
@pytest.mark.timeout(2400)
def test_scale_benchmark_prints_duckdb_local_and_cluster_rows_with_an_incremental_day(tmp_path):
    """DuckDB, Spark local[2] and a standalone cluster of two one-core workers in one run;
    each Spark engine's one day is an incremental build of that day. The benchmark starts the cluster and
    stops it: no JVM of it is left."""
    assert set(DATED) < set(DOOR_MODELS)
    proc = subprocess.run([sys.executable, str(BENCH), "--days", str(SPARK_DAYS), "--keywords", str(SPARK_KEYWORDS),
                           "--domains", str(SPARK_DOMAINS), "--engines", "duckdb,spark,cluster", "--cluster", "2",
                           "--executor-memory", "1g", "--driver-memory", "2g", "--workdir", str(tmp_path / "work"),
                           "--models", str(door_models(tmp_path)), *SPARK_SETTINGS],
                          capture_output=True, text=True, timeout=2300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"models: {len(DOOR_MODELS)} models and " in proc.stdout, proc.stdout
    assert "; --conf spark.sql.adaptive.enabled=false" in proc.stdout, proc.stdout  # the settings reached it
    assert re.search(r"standalone cluster spark://127\.0\.0\.1:\d+: 2 workers ALIVE", proc.stdout), proc.stdout
    for key in ("spark", "cluster"):
        found = re.search(rf"^  {key} one day: (\d+) models built for that day only", proc.stdout, re.M)
        assert found and int(found.group(1)) == len(DATED), proc.stdout
    table = proc.stdout.split("| keywords |", 1)[1]
    ratios = {}
    for engine in ("duckdb", r"spark local\[2\]", r"spark cluster \(2 workers x 1 core\)"):
        row = re.search(rf"^\| {SPARK_KEYWORDS:,} \| [\d,]+ \| {engine} \|( [\d.]+ \|){{4}} ([\d.]+) \|$", table, re.M)
        assert row, proc.stdout
        ratios[engine] = float(row.group(2))
    assert all(0 < r < 10 for r in ratios.values()), ratios
    assert len(re.findall(rf"^<!-- {SPARK_KEYWORDS:,} keywords: spark .*/duckdb full rebuild", table, re.M)) == 2, table
    leftover = subprocess.run(["pgrep", "-f", str(tmp_path / "work")], capture_output=True, text=True)
    assert not leftover.stdout.strip(), leftover.stdout
    print(proc.stdout)  # the figures, shown by `pytest -rP`
