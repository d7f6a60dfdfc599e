"""The models on Spark: :class:`SparkEngine`, the primitives of
:class:`rank_pipeline.transform.primitives.ModelEngine` on one session, the same ``dbt_like_sql/`` files
(views stored as tables, raw snapshots read in place). How: docs/concepts/models.md, "The Spark engine";
clusters: docs/concepts/scale-out.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from rank_pipeline.transform.dependencies import RAW_SCHEMA
from rank_pipeline.transform.errors import BuildError, TestExecutionError
from rank_pipeline.transform.nodes import Model, Seed
from rank_pipeline.transform.primitives import RawLedger, RawTable
from rank_pipeline.transform.project import Project
from rank_pipeline.transform.rewrite import full_build_sql
from rank_pipeline.transform.spark_dialect import quote as _qi
from rank_pipeline.transform.spark_dialect import raw_view, short_error, spark_type_of, to_spark_sql
from rank_pipeline.transform.spark_storage import ParquetStore
from rank_pipeline.transform.testing import failure_counts_sql, json_safe

__all__ = ["SparkEngine"]


class SparkEngine:
    """The model graph on one Spark session, tables as Parquet under ``warehouse_uri``
    (docs/concepts/models.md, "The Spark engine").

    Args:
        spark: a SparkSession (:func:`rank_pipeline.transform.spark_session.spark_session`).
        warehouse_uri: a directory path or URI (``file:///...``, ``s3a://bucket/prefix``, ``hdfs://...``).
    """

    name = "spark"
    persistent_views = False
    raw_ledger: RawLedger | None = None  # set while open_engine holds the engine
    reads_raw_in_place = True
    catalog = "spark_catalog"

    def __init__(self, spark: Any, warehouse_uri: str | Path):
        self.spark = spark
        self.store = ParquetStore(spark, str(warehouse_uri))
        self._raw_files: dict[str, tuple[str, ...]] = {}
        self._raw_dated: set[str] = set()  # raw views with a snapshot_date column
        self._last_loaded: date | None = None
        self._attached = False
        self._frames: dict[str, Any] = {}  # the last SELECT analysed, reused by the write that follows

    @property
    def warehouse_uri(self) -> str:
        """The warehouse URI, absolute."""
        return self.store.warehouse_uri

    @property
    def written_to(self) -> str:
        """Where the tables are written: the warehouse URI (``<uri>/<schema>/<name>``)."""
        return self.store.warehouse_uri

    @property
    def raw_loaded(self) -> bool:
        """True once :meth:`load_raw` registered the raw views in this session."""
        return bool(self._raw_files)

    def location(self, schema: str, name: str) -> str:
        """Where ``schema.name``'s Parquet files live: ``<warehouse URI>/<schema>/<name>``."""
        return self.store.location(schema, name)

    def prepare(self, project: Project) -> None:
        """Once per session: attach the seeds and models earlier sessions wrote under the warehouse URI
        (:meth:`attach_existing`), so a build of one model finds its parents. The raw views are the
        caller's: :meth:`load_raw`."""
        if not self._attached:
            self.attach_existing(project)
            self._attached = True

    def attach_existing(self, project: Project) -> list[str]:
        """Register in this session's catalog every seed and model of ``project`` already written under
        the warehouse URI (a new process, e.g. a Dagster step, sees the tables earlier steps built).
        Returns their qualified names."""
        found = []
        relations: list[Model | Seed] = [*project.seeds.values(), *project.topological_order()]
        for rel in relations:
            if not self.store.exists(self.location(rel.schema, rel.name)):
                continue
            try:
                self.store.register(rel.schema, rel.name)
            except Exception:  # no data file left (every day deleted): the schema of its SELECT
                if not isinstance(rel, Model):
                    raise
                self.store.register(rel.schema, rel.name, self.spark.sql(to_spark_sql(full_build_sql(rel))).schema)
            found.append(rel.qualified_name)
        return found


    # -------------------------------------------------------------- primitives

    def ensure_schema(self, schema: str) -> None:
        """Create the database ``schema`` when missing; a build starts here, so the SELECT analysed for the
        previous build is forgotten (its tables may have been registered again since)."""
        self._frames = {}
        self.spark.sql(f"create database if not exists {_qi(schema)}")

    def render(self, duckdb_sql: str) -> str:
        """The SELECT in Spark SQL (:func:`rank_pipeline.transform.spark_dialect.to_spark_sql`)."""
        return to_spark_sql(duckdb_sql)

    def _frame_of(self, sql: str, where: str):
        """The DataFrame of a Spark SELECT (analysed once: the last one is kept for the write after it).

        Raises:
            BuildError: the SQL does not run on Spark.
        """
        frame = self._frames.get(sql)
        if frame is None:
            try:
                frame = self.spark.sql(sql)
            except Exception as exc:
                raise BuildError(f"{where}: the Spark SQL does not run: {short_error(exc)}\n{sql}") from exc
            self._frames = {sql: frame}
        return frame

    def output_columns(self, sql: str, where: str) -> list[str]:
        """The columns of a Spark SELECT (analysed, not run)."""
        return list(self._frame_of(sql, where).columns)

    def last_loaded(self, project: Project) -> date | None:
        """The last day the raw tables :meth:`load_raw` registered hold."""
        return self._last_loaded

    def dated_relations(self, model: Model, column: str) -> frozenset[tuple[str, str]]:
        """The ``(schema, name)`` of every relation ``model`` reads that has ``column`` in this session."""
        dated = set()
        for qualified in model.depends_on:
            try:
                columns = self._frame(qualified).columns
            except Exception:  # not built yet: the build itself will say so
                continue
            if column in columns:
                schema, name = qualified.split(".", 1)
                dated.add((schema, name))
        return frozenset(dated)

    def stored_by_day(self, schema: str, name: str, date_column: str) -> bool:
        """True when ``schema.name`` is a directory of ``<date_column>=<day>`` directories."""
        return self.store.by_day(schema, name, date_column)

    def day_span(self, relations: Iterable[tuple[str, str]], column: str) -> tuple[date, date] | None:
        """``(min, max)`` of ``column`` over the relations (``raw.<name>``: its view), one Spark job; None when
        they hold no row."""
        from pyspark.sql import functions as F

        frames = [self._frame(f"{s}.{n}").select(F.col(_qi(column)).alias("day")) for s, n in sorted(relations)]
        if not frames:
            return None
        union = frames[0]
        for frame in frames[1:]:
            union = union.unionAll(frame)
        lo, hi = union.agg(F.min("day"), F.max("day")).collect()[0]
        return None if lo is None else (lo, hi)

    def watermark(self, schema: str, name: str, column: str) -> Any:
        """``max(column)`` of the stored table; None when it is not stored or has no such column."""
        if not self.store.exists(self.location(schema, name)):
            return None
        try:
            return self.spark.sql(f"select max({_qi(column)}) from {_qi(schema)}.{_qi(name)}").collect()[0][0]
        except Exception:
            return None  # the column is gone: rebuild

    def create_view(self, schema: str, name: str, sql: str, where: str) -> None:
        """Not offered: a Spark view lives in one session (:attr:`persistent_views` is False, so the
        materialization flow stores views as tables).

        Raises:
            BuildError: always.
        """
        raise BuildError(f"{where}: Spark keeps no view across sessions; views are stored as tables")

    def replace_whole(self, schema: str, name: str, sql: str, where: str, *,
                      date_column: str | None = None) -> int:
        """Write ``sql``'s rows beside ``schema.name`` and swap them in whole (by day when ``date_column``)."""
        frame = self._frame_of(sql, where)
        self._frames = {}
        return self.store.write(frame, schema, name, where, date_column=date_column)

    def replace_days(self, schema: str, name: str, sql: str, where: str, date_column: str, first: date,
                     last: date) -> int:
        """Write ``sql``'s rows and replace the day directories ``first .. last`` of ``schema.name``."""
        frame = self._frame_of(sql, where)
        self._frames = {}
        return self.store.write(frame, schema, name, where, date_column=date_column, days=(first, last))

    def load_seed(self, seed: Seed, sql: str) -> int:
        """Read the seed's CSV with DuckDB's typed reader (``sql``, in memory), so both engines see identical
        values, and write it as Parquet ``seeds.<name>``.

        Raises:
            BuildError: the CSV cannot be read or a value does not fit its declared type.
        """
        import duckdb

        try:
            arrow = duckdb.connect().sql(sql).to_arrow_table()
        except duckdb.Error as exc:
            raise BuildError(f"{seed.path}: loading seed {seed.qualified_name} failed: {exc}") from exc
        return self.store.write(self.spark.createDataFrame(arrow), seed.schema, seed.name,
                                f"{seed.path} ({seed.qualified_name})")

    # -------------------------------------------------------------- raw layer

    def load_raw(self, tables: Sequence[RawTable], first: date | None, last: date | None, *,
                 count: bool = True) -> dict[date, dict[str, int]]:
        """Register each ``raw.<name>`` as the view :func:`raw_view` over the files of every day handed (in place,
        plus ``loaded_at``), or an empty view without files; unchanged files are not registered again. Returns
        ``{day: {table: rows}}`` over ``first .. last`` (``{}`` unless ``count``).

        The files are read with the table's declared columns as their schema, by name, as DuckDB's raw load reads
        them: a column an older snapshot version holds beyond them is left out, and no footer is read to infer or
        merge a schema.

        Raises BuildError: a column type this engine cannot map (named).
        """
        from pyspark.sql import functions as F

        self._last_loaded = max((d.day for t in tables for d in t.days), default=None)
        for table in tables:
            if table.dated:
                self._raw_dated.add(table.name)
            key = tuple(f for d in table.days for f in d.files)
            if self._raw_files.get(table.name) == key:
                continue
            ddl = {c: f"{_qi(c)} {spark_type_of(t, table.name)}" for c, t in table.columns}
            if key:
                in_files = ", ".join(d for c, d in ddl.items() if c != "loaded_at")
                df = self.spark.read.schema(in_files).parquet(*key).withColumn("loaded_at", F.current_timestamp())
            else:
                df = self.spark.createDataFrame([], ", ".join(ddl.values()))
            df.createOrReplaceTempView(raw_view(table.name))
            self._raw_files[table.name] = key
        return self._raw_rows_by_day(first, last) if count else {}

    def replace_raw_rows(self, name: str, columns: Sequence[tuple[str, str]],
                         rows: Sequence[Mapping[str, Any]]) -> None:
        """None: Spark's raw tables are the snapshots read in place; a table no snapshot holds
        (``keywords_file``) is kept in the DuckDB warehouse only, and an empty view here."""
        return None

    def _raw_rows_by_day(self, first: date | None, last: date | None) -> dict[date, dict[str, int]]:
        """``{day: {raw table: rows}}`` of the registered raw views with a ``snapshot_date``, over
        ``first .. last`` (None: open bound)."""
        span = " and ".join([*([f"snapshot_date >= date '{first.isoformat()}'"] if first else []),
                             *([f"snapshot_date <= date '{last.isoformat()}'"] if last else [])]) or "true"
        out: dict[date, dict[str, int]] = {}
        if not self._raw_dated:
            return out
        counts = " union all ".join(  # one Spark job for every table
            f"select '{name}' as name, snapshot_date, count(*) as n from {raw_view(name)} where {span} "
            f"group by snapshot_date" for name in sorted(self._raw_dated))
        for name, day, rows in sorted(self.spark.sql(counts).collect(), key=lambda r: (r[1], r[0])):
            out.setdefault(day, {})[name] = int(rows)  # days ascending, as the rows are sorted
        return out


    # -------------------------------------------------------------- tests and reads

    def _frame(self, qualified: str):
        schema, name = qualified.split(".", 1)
        return self.spark.table(raw_view(name) if schema == RAW_SCHEMA else f"{_qi(schema)}.{_qi(name)}")

    def column_types(self, qualified: str) -> list[tuple[str, str]]:
        """``[(column, Spark type)]`` of ``schema.name`` (``raw.<endpoint>``: its view), in order."""
        return [(f.name, f.dataType.simpleString()) for f in self._frame(qualified).schema.fields]

    def row_count(self, qualified: str) -> int:
        """Rows of ``schema.name`` (``raw.<endpoint>``: its view)."""
        return int(self._frame(qualified).count())

    def failing_rows(self, duckdb_sqls: Sequence[str], sample_size: int = 5) -> list[tuple[int, list[dict]]]:
        """``(rows, the first sample_size rows as JSON-safe dicts)`` of each DuckDB SELECT, transpiled
        (:func:`to_spark_sql`): one Spark job counts the rows of all, then the failing ones are sampled.

        Raises:
            TestExecutionError: a SELECT does not run on Spark (``index``: which).
        """
        sqls = [to_spark_sql(sql) for sql in duckdb_sqls]
        if not sqls:
            return []
        try:
            counted = self.spark.sql(failure_counts_sql(sqls)).collect()
            counts: dict[int, int] | None = {int(r[0]): int(r[1]) for r in counted}
        except Exception:
            counts = None  # find the SELECT that does not run, below
        out: list[tuple[int, list[dict]]] = []
        for i, sql in enumerate(sqls):
            if counts is not None and counts[i] == 0:  # passed: nothing to sample, no plan to analyse again
                out.append((0, []))
                continue
            try:
                failing = self.spark.sql(sql)
                failures = counts[i] if counts is not None else int(failing.count())
                sample = ([json_safe(r.asDict(recursive=True)) for r in failing.limit(sample_size).collect()]
                          if failures else [])
            except Exception as exc:
                raise TestExecutionError(short_error(exc), i) from exc
            out.append((failures, sample))
        return out

    def publish(self) -> None:
        """Nothing to publish: the tables are already where readers find them (the warehouse URI)."""
        return None


    def run_unit_select(self, model: Model, inputs: Mapping[str, Any]):
        """A model's full-build SELECT on Spark over ``inputs`` (``{qualified relation: pyarrow Table}``, each a view
        of this session only), for its unit tests; returns a pyarrow Table.
        Raises BuildError: the SELECT cannot be transpiled; a Spark error as Spark raises it.
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

    def to_arrow(self, schema: str, name: str):
        """The whole relation ``schema.name`` as a pyarrow Table (for comparisons and exports)."""
        return self.spark.table(f"{_qi(schema)}.{_qi(name)}").toArrow()
