"""benchmarks/results.py: a benchmark's section of RESULTS.md is replaced by its next run, and nothing else moves."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from results import HEADING, record_section  # noqa: E402


def test_a_section_is_added_once_then_replaced_and_the_rest_of_the_file_kept(tmp_path):
    path = tmp_path / "RESULTS.md"
    path.write_text("# Benchmark results\n\n| curated | table |\n")
    record_section("models", "### models: first run\n1.0", path)
    record_section("overhead", "### overhead: first run\n2.0", path)
    record_section("models", "### models: second run\n3.0", path)
    text = path.read_text()
    assert text.startswith("# Benchmark results\n\n| curated | table |\n")
    assert text.count(HEADING) == 1
    assert text.count("<!-- benchmark models: begin -->") == 1 and "first run\n1.0" not in text
    assert text.index("### models: second run\n3.0") < text.index("### overhead: first run\n2.0")
