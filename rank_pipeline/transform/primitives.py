"""What a model engine supplies (:class:`ModelEngine`) and what a build reports (:class:`BuildResult`).

The engines (:class:`rank_pipeline.transform.duckdb_engine.DuckDBEngine`,
:class:`rank_pipeline.transform.spark_engine.SparkEngine`) supply primitives only: render a SELECT in
their dialect, read a watermark, create as select, replace these days, swap a whole relation in, count.
Which days a model builds, and whether it is replaced, folded or rebuilt, is decided once, by
:mod:`rank_pipeline.transform.materialize`, for every engine. :func:`rank_pipeline.warehouse.engines.open_engine`
is the one place that turns an engine's name (``RANK_PIPELINE_ENGINE``) into an engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Protocol

from rank_pipeline.transform.nodes import Model, Seed
from rank_pipeline.transform.project import Project
from rank_pipeline.transform.testing import TestResult

__all__ = ["BuildResult", "ModelEngine"]


@dataclass(frozen=True)
class BuildResult:
    """What a build did.

    Attributes:
        rows: rows written (a table: all rows; an incremental build of days: rows of those days; a seed:
            all rows); None for views.
        seconds: wall time of the build, for metadata (never asserted).
        sql: the SELECT that ran, in the engine's dialect (for a build of days, the windowed one).
        mode: ``view``, ``table``, ``full_refresh``, ``incremental`` or ``seed``.
        partition_date: the first day built incrementally, else None.
        until: the last day built incrementally (``partition_date`` for a one-day build; None for a fold,
            which folds every upstream day after its watermark), else None.
    """

    rows: int | None
    seconds: float
    sql: str
    mode: str
    partition_date: date | None = None
    until: date | None = None


class ModelEngine(Protocol):
    """The primitives an engine supplies to :mod:`rank_pipeline.transform.materialize`, and the reads and
    tests the steps use.

    Attributes:
        name: ``duckdb`` or ``spark`` (asset kinds, metadata).
        incremental: True when a build of days rebuilds only those days; False when every build is whole
            and tests read whole relations.
        persistent_views: True when a view outlives the session that made it (DuckDB); else a view is
            stored as a table (by day when it has ``snapshot_date``), as on Spark.
        catalog: the catalog readers see the tables in (``warehouse``, ``spark_catalog``).

    Every ``sql`` argument is already in the engine's dialect (:meth:`render`); every ``where`` is the
    model's path and name, for error messages. The raw tables are not the engine's: whoever opens it loads
    them (:mod:`rank_pipeline.warehouse.engines`).
    """

    name: str
    incremental: bool
    persistent_views: bool

    @property
    def catalog(self) -> str:
        """The catalog readers see the tables in (``warehouse``, ``spark_catalog``)."""

    @property
    def written_to(self) -> str:
        """Where the tables are written (the build file's path, the Spark warehouse URI); no secret."""

    def location(self, schema: str, name: str) -> str:
        """Where ``schema.name`` is stored (a file path or URI)."""

    def prepare(self, project: Project) -> None:
        """Make the relations of earlier builds readable (once per engine)."""

    def ensure_schema(self, schema: str) -> None:
        """Create the schema (Spark: database) ``schema`` when missing; every build starts here."""

    def render(self, duckdb_sql: str) -> str:
        """A SELECT written in DuckDB SQL, in this engine's dialect."""

    def output_columns(self, sql: str, where: str) -> list[str]:
        """The column names a SELECT outputs (nothing is written). Raises BuildError when it does not run."""

    def last_loaded(self, project: Project) -> date | None:
        """The last raw day loaded (the horizon's end), or None."""

    def dated_relations(self, model: Model, column: str) -> frozenset[tuple[str, str]]:
        """``(schema, name)`` of the relations ``model`` reads that have ``column``."""

    def stored_by_day(self, schema: str, name: str, date_column: str) -> bool:
        """True when ``schema.name`` is stored so that :meth:`replace_days` can replace some of its days."""

    def watermark(self, schema: str, name: str, column: str) -> Any:
        """``max(column)`` of the stored relation; None when it is not stored or the column is gone."""

    def create_view(self, schema: str, name: str, sql: str, where: str) -> None:
        """Create or replace the view ``schema.name`` as ``sql`` (only called when :attr:`persistent_views`).
        Raises BuildError and leaves the relation as it was."""

    def replace_whole(self, schema: str, name: str, sql: str, where: str, *,
                      date_column: str | None = None) -> int:
        """Build ``sql`` beside ``schema.name`` and swap it in whole (stored by ``date_column`` when the
        engine stores by day); the rows written. Raises BuildError and leaves the relation as it was."""

    def replace_days(self, schema: str, name: str, sql: str, where: str, date_column: str, first: date,
                     last: date) -> int:
        """Replace the days ``first .. last`` of ``schema.name`` by the rows of ``sql`` in one step; the
        rows written. Raises BuildError and leaves the relation as it was."""

    def load_seed(self, seed: Seed, sql: str) -> int:
        """Load the seed's CSV (``sql``: DuckDB's typed reader) as ``seeds.<name>``; the rows loaded."""

    def run_tests(self, relation: Model | Seed, partition_date: date | None = None, *,
                  until: date | None = None) -> list[TestResult]:
        """The ``.yml`` tests of ``relation`` over ``partition_date .. until`` (None: the whole relation),
        as :func:`rank_pipeline.transform.testing.run_tests`. Raises TestExecutionError when a test's SQL fails."""

    def failing_rows(self, duckdb_sql: str, sample_size: int = 5) -> tuple[int, list[dict]]:
        """``(rows, sample)`` of a SELECT written in DuckDB SQL."""

    def column_types(self, qualified: str) -> list[tuple[str, str]]:
        """``[(column, the engine's type name)]`` of ``schema.name``, in table order."""

    def row_count(self, qualified: str) -> int:
        """Rows of the whole relation ``schema.name``."""

    def publish(self) -> Path | None:
        """Make the build visible to readers; the published file, or None when nothing needs copying."""
