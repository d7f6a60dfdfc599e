"""Model tables as Parquet directories under a warehouse URI, written beside and swapped in (no table format).

A table stored by day is ``<date column>=<day>`` directories; a write of days replaces only those. How a
write is swapped in, and what a killed write leaves: docs/concepts/models.md, "Model tables on Spark".
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from rank_pipeline.transform.errors import BuildError
from rank_pipeline.transform.spark_dialect import quote, short_error
from rank_pipeline.transform.spark_files import absolute_uri, file_system, list_names

__all__ = ["ParquetStore"]

_PART = "__rp_day"
"""The column a write's output is partitioned by in its side directory (a copy of the date column, so the
files keep the date column in its place; the directories are renamed ``<date column>=<day>``)."""

_DAY_DIR = re.compile(r"^(?P<column>[^=]+)=(?P<day>\d{4}-\d{2}-\d{2})$")


class ParquetStore:
    """The tables of one Spark session ``spark`` under ``warehouse_uri`` (a path, ``file:///``, ``s3a://``,
    ``hdfs://``); docs/concepts/models.md, "Model tables on Spark".
    """

    def __init__(self, spark: Any, warehouse_uri: str):
        self.spark = spark
        self.warehouse_uri = absolute_uri(warehouse_uri)  # executors resolve relative paths elsewhere

    def location(self, schema: str, name: str) -> str:
        """Where ``schema.name``'s Parquet files live: ``<warehouse URI>/<schema>/<name>``."""
        return f"{self.warehouse_uri}/{schema}/{name}"

    def _fs_path(self, uri: str):
        """``(fs, path)`` with Hadoop ``FileSystem``'s exists/delete/rename (:func:`.spark_files.file_system`:
        Hadoop through the JVM, or pyarrow on a Spark Connect session)."""
        return file_system(self.spark, uri)

    def exists(self, uri: str) -> bool:
        """True when ``uri`` (a file or directory) exists."""
        fs, path = self._fs_path(uri)
        return bool(fs.exists(path))

    def delete(self, uri: str) -> None:
        """Delete ``uri`` and everything under it (nothing when absent)."""
        fs, path = self._fs_path(uri)
        fs.delete(path, True)

    def rename(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target`` (parent existing, target not). Raises BuildError: the file system
        refused."""
        fs, source_path = self._fs_path(source)
        _, target_path = self._fs_path(target)
        if not fs.rename(source_path, target_path):
            raise BuildError(f"could not rename {source} to {target}")

    def entries(self, uri: str) -> list[str]:
        """The names of the entries directly under directory ``uri`` ([] when absent)."""
        fs, path = self._fs_path(uri)
        if not fs.exists(path):
            return []
        return list_names(fs, path)

    def register(self, schema: str, name: str, struct=None) -> None:
        """Point the catalog's ``schema.name`` at its Parquet directory (a new file listing). ``struct``:
        its Spark schema (default: read from the files). A directory of ``<date column>=<day>``
        sub-directories is a table partitioned by day whose columns stay in the files' order."""
        location = self.location(schema, name)
        table = f"{quote(schema)}.{quote(name)}"
        self.spark.sql(f"create database if not exists {quote(schema)}")
        self.spark.sql(f"drop table if exists {table}")
        try:  # the schema inferred from the files: a date column found in the folder names stays in place
            self.spark.sql(f"create table {table} using parquet location '{location}'")
        except Exception:
            if struct is None:
                raise
            # no data file (every day of the table deleted): the schema given
            self.spark.catalog.createTable(f"{schema}.{name}", path=location, source="parquet", schema=struct)

    def by_day(self, schema: str, name: str, date_column: str) -> bool:
        """True when ``schema.name`` is stored by day of ``date_column`` (no data file at its root)."""
        entries = self.entries(self.location(schema, name))
        return bool(entries) and not any(e.startswith("part-") for e in entries) and all(
            e.startswith(("_", ".")) or e.startswith(f"{date_column}=") for e in entries)

    def write(self, df, schema: str, name: str, where: str, *, date_column: str | None = None,
               days: tuple[date, date] | None = None) -> int:
        """Write ``df`` as ``schema.name``; returns the rows written (counted by the write itself).

        ``date_column`` None: one directory swapped in whole. Else stored by day; ``days`` None: the whole table
        swapped in; ``(first, last)``: only those days' directories replaced (``df`` holds rows of those days).

        Raises:
            BuildError: the Spark job failed (the table is unchanged), or a rename was refused.
        """
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        target = self.location(schema, name)
        side = f"{target}.__build"
        self.delete(side)  # what a killed build left
        written = Observation()
        observed = df.observe(written, F.count(F.lit(1)).alias("rows"))
        if date_column is None:
            self._write_side(observed.write, side, where, f"{schema}.{name}")
        else:
            self._write_side(observed.withColumn(_PART, F.col(quote(date_column))).write.partitionBy(_PART), side,
                             where, f"{schema}.{name}")
        built = [e.split("=", 1)[1] for e in self.entries(side) if e.startswith(_PART + "=")] if date_column else []
        kept = False  # a day directory of the table outside the days built stays
        if days is None:
            for day in built:
                self.rename(f"{side}/{_PART}={day}", f"{side}/{date_column}={day}")
            if self.exists(target):
                self.delete(target)
            self.rename(side, target)
        else:
            first, last = days[0].isoformat(), days[1].isoformat()
            for entry in self.entries(target):
                found = _DAY_DIR.match(entry)
                if found and found["column"] == date_column:
                    if first <= found["day"] <= last:
                        self.delete(f"{target}/{entry}")
                    else:
                        kept = True
            for day in built:
                self.rename(f"{side}/{_PART}={day}", f"{target}/{date_column}={day}")
            self.delete(side)
        rows = int(written.get["rows"])  # the write's own count
        if date_column is not None and not built and not kept:  # no day directory left
            self._write_schema_only(df, target, where, f"{schema}.{name}")
        self.register(schema, name, df.schema)
        return rows

    def _write_side(self, writer, side: str, where: str, qualified: str) -> None:
        """Run ``writer`` (a ``DataFrameWriter``) into the directory ``side``, replacing it.
        Raises BuildError: the Spark job failed; ``side`` is deleted.
        """
        try:
            writer.mode("overwrite").parquet(side)
        except Exception as exc:
            self.delete(side)
            raise BuildError(f"{where}: the Spark build failed: {short_error(exc)}. {qualified} is unchanged") from exc

    def _write_schema_only(self, df, target: str, where: str, qualified: str) -> None:
        """A table stored by day that has no row on any day has no day directory, so no file would hold
        its columns for readers outside Spark (pyarrow, DuckDB): write one empty Parquet file in its place
        (Spark writes the schema for an empty result). The table is then not stored by day
        (:meth:`by_day`), so its next build is whole, as the first build of a table is."""
        side = f"{target}.__build"
        self._write_side(df.limit(0).write, side, where, qualified)
        self.delete(target)
        self.rename(side, target)
