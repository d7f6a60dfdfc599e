"""Smoke test of benchmarks/models.py on a tiny workload: it runs and prints its three ratios, and writes them
into the results file as its own dated section when asked to (``RANK_BENCH_RECORD=1``, as ``make bench-models``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "models.py"


@pytest.mark.slow
def test_models_benchmark_prints_its_three_ratios(tmp_path):
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\nCurated tables stay.\n")
    env = {**os.environ, "RANK_BENCH_RECORD": "1", "RANK_BENCH_RESULTS": str(results)}
    proc = subprocess.run([sys.executable, str(BENCH), "--days", "3", "--keywords", "40", "--domains", "2",
                           "--workdir", str(tmp_path / "work")], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    written = results.read_text()
    assert written.startswith("# Benchmark results\n\nCurated tables stay.\n")
    assert written.count("<!-- benchmark models: begin -->") == 1 and "### models: 20" in written
    assert re.search(r"incremental / full rebuild:\s+\d+\.\d+", written.split("benchmark models: begin")[1])
    again = subprocess.run([sys.executable, str(BENCH), "--days", "3", "--keywords", "40", "--domains", "2",
                            "--workdir", str(tmp_path / "work")], capture_output=True, text=True, timeout=300,
                           env={**env, "RANK_BENCH_RECORD": ""})
    assert again.returncode == 0 and results.read_text() == written, "written without RANK_BENCH_RECORD=1"
    for label in ("incremental / full rebuild:", "raw load / bare read_parquet:", "day 30 back re-run / full rebuild:"):
        assert re.search(re.escape(label) + r"\s+\d+\.\d+", proc.stdout), (label, proc.stdout)
    assert "marts.dim_keywords" in proc.stdout and "incremental" in proc.stdout
