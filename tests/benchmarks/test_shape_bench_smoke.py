"""Smoke test of benchmarks/shape.py on a toy day: it runs, prints the check, the profile and the suggestion
with their ratios, and writes nothing without ``RANK_BENCH_RECORD=1``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "shape.py"


def test_shape_benchmark_prints_the_check_profile_and_suggestion_ratios(tmp_path):
    results = tmp_path / "RESULTS.md"
    env = {k: v for k, v in os.environ.items() if k != "RANK_BENCH_RECORD"}
    proc = subprocess.run([sys.executable, str(BENCH), "--keywords", "500", "--repeats", "1"], capture_output=True,
                          text=True, timeout=300, env={**env, "RANK_BENCH_RESULTS": str(results)})
    assert proc.returncode == 0, proc.stderr
    assert "500 keyword records a day" in proc.stdout
    for label in ("check / extraction floor:", "suggestion / extraction floor:"):
        assert re.search(re.escape(label) + r" \d+\.\d{3}", proc.stdout), (label, proc.stdout)
    assert re.search(r"suggestion on a vendor-c day .* \d+\.\d+ s", proc.stdout)
    assert not results.exists()
