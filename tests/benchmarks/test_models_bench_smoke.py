"""Smoke test of benchmarks/models.py on a tiny workload: it runs and prints its three ratios."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "models.py"


@pytest.mark.slow
def test_models_benchmark_prints_its_three_ratios(tmp_path):
    proc = subprocess.run([sys.executable, str(BENCH), "--days", "3", "--keywords", "40", "--domains", "2",
                           "--workdir", str(tmp_path / "work")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for label in ("incremental / full rebuild:", "raw load / bare read_parquet:", "day 30 back re-run / full rebuild:"):
        assert re.search(re.escape(label) + r"\s+\d+\.\d+", proc.stdout), (label, proc.stdout)
    assert "marts.dim_keywords" in proc.stdout and "incremental" in proc.stdout
