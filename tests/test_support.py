"""``support.require``: a missing real part skips a test, saying why, and fails it under ``CI=true``.

A tiny generated test file runs in a pytest subprocess (its own rootdir and ini file, so neither this
project's options nor its conftest apply), once without CI, once with ``CI=false`` and once with ``CI=true``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

GENERATED = '''
from support import require


def test_with_the_part():
    require(True, "never said")


def test_without_the_part():
    require(False, "the frobnicator is not installed")
    raise AssertionError("require went on without the part")
'''


def _pytest(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_generated.py").write_text(GENERATED)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), env.get("PYTHONPATH")) if p)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-rfs",
                           "test_generated.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("ci", [None, "false"])
def test_outside_ci_a_missing_part_skips_with_its_reason(tmp_path, ci):
    done = _pytest(tmp_path, ci)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 1 skipped" in done.stdout, done.stdout
    assert "SKIPPED [1] test_generated.py" in done.stdout and "the frobnicator is not installed" in done.stdout
    assert "CI=true" not in done.stdout


def test_under_ci_a_missing_part_fails_with_its_reason(tmp_path):
    done = _pytest(tmp_path, "true")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout, done.stdout
    assert "FAILED test_generated.py::test_without_the_part - Failed: the frobnicator is not installed" in done.stdout
    assert "CI=true: a test whose real part is missing fails instead of skipping" in done.stdout
    assert "require went on without the part" not in done.stdout
