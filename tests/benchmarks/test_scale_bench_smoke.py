"""Smoke test of benchmarks/scale.py on a tiny workload, DuckDB only (the Spark side of the same code is
what tests/models/test_spark_equality.py proves equal; a Spark session here would add minutes)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "scale.py"


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
    assert proc.returncode == 2 and "--engines takes duckdb, spark or both" in proc.stderr
