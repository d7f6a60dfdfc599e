"""What a model engine supplies (:class:`ModelEngine`: primitives only, one module per engine) and what a build
reports (:class:`BuildResult`); which days a model builds is :mod:`rank_pipeline.transform.materialize`'s,
for every engine (docs/concepts/models.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Protocol

from rank_pipeline.transform.nodes import Model, Seed
from rank_pipeline.transform.project import Project

__all__ = ["BuildResult", "ModelEngine", "RawDay", "RawLedger", "RawTable"]


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
        steps: the builds it took: more than 1 for a full refresh in steps of days (``sql`` is the last one's).
    """

    rows: int | None
    seconds: float
    sql: str
    mode: str
    partition_date: date | None = None
    until: date | None = None
    steps: int = 1


@dataclass(frozen=True)
class RawDay:
    """One committed day of a raw table, as the pipeline hands it to :meth:`ModelEngine.load_raw`.

    Attributes:
        day: the ``snapshot_date``.
        files: the Parquet files, each a path or URI a reader opens (``s3://...``: an object store).
        rows: the rows the files hold, by their manifest.
        folder: the day's folder as a user reads it (for messages).
        columns: the table's columns the files hold, read by name (``attributes`` as JSON); empty when the
            files' footers were not read (an engine that reads the files in place needs none).
        dataset: for files on an object store, a ``pyarrow.dataset.Dataset`` over them (DuckDB scans it
            without an extension); None for local files or when not read.
        complete: False when the extraction recorded the day as incomplete (loaded anyway, with a warning).
    """

    day: date
    files: tuple[str, ...]
    rows: int
    folder: str
    columns: tuple[str, ...] = ()
    dataset: Any = None
    complete: bool = True


@dataclass(frozen=True)
class RawTable:
    """A raw table (``raw.<name>``) and the committed days handed to :meth:`ModelEngine.load_raw`.

    Attributes:
        name: the bare table name (``keywords``).
        columns: ``((column, DuckDB type), ...)`` as ``sources:`` declares them, ``loaded_at`` included.
        days: the committed days, ascending. A table without ``snapshot_date`` is no snapshot's
            (``keywords_file``): it is created when missing and its rows are never replaced by a load.
    """

    name: str
    columns: tuple[tuple[str, str], ...]
    days: tuple[RawDay, ...] = ()

    @property
    def dated(self) -> bool:
        """True when the table has ``snapshot_date`` (its days come from the snapshots)."""
        return any(column == "snapshot_date" for column, _ in self.columns)


class RawLedger(Protocol):
    """Where the pipeline records the snapshot days an engine's raw tables hold (the data folder's
    :class:`rank_pipeline.warehouse.raw_days.RawDays`)."""

    def read(self) -> frozenset[date] | None:
        """The days recorded; None when nothing is."""

    def held(self) -> frozenset[date] | None:
        """The days the raw tables hold; None when it cannot tell."""

    def write(self, days: Iterable[date]) -> None:
        """Record ``days``, replacing what was recorded."""


class ModelEngine(Protocol):
    """The primitives an engine supplies to the flows (:mod:`rank_pipeline.transform.materialize`,
    :mod:`rank_pipeline.transform.testing`, :mod:`rank_pipeline.warehouse.raw_load`) and the reads the steps use.

    Attributes:
        name: ``duckdb`` or ``spark`` (asset kinds, metadata).
        persistent_views: True when a view outlives the session that made it (DuckDB); else a view is
            stored as a table (by day when it has ``snapshot_date``), as on Spark.
        reads_raw_in_place: True when the raw tables read the snapshots' files where they are, so every day
            they hold is handed to each :meth:`load_raw` (Spark; the pipeline records which); False when the days
            loaded are copied into the engine's storage, which keeps them (DuckDB's build file).
        catalog: the catalog readers see the tables in (``warehouse``, ``spark_catalog``).
        raw_ledger: the data folder's record of the days the raw tables hold while
            :func:`rank_pipeline.warehouse.engines.open_engine` has the engine open; None for an engine made
            otherwise (a test's, a benchmark's), whose raw loads then record nothing.

    Every ``sql`` argument is already in the engine's dialect (:meth:`render`); every ``where`` is the
    model's path and name, for error messages. What the raw tables hold is the pipeline's to say
    (:func:`rank_pipeline.warehouse.raw_load.load_raw` hands :meth:`load_raw` the committed days).
    """

    name: str
    persistent_views: bool
    reads_raw_in_place: bool
    raw_ledger: RawLedger | None

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

    def day_span(self, relations: Iterable[tuple[str, str]], column: str) -> tuple[date, date] | None:
        """The first and last ``column`` value over the relations ``(schema, name)`` (raw ones included); None
        when they hold no row."""

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

    @property
    def raw_loaded(self) -> bool:
        """True when the raw tables are readable without a :meth:`load_raw` first (an engine that keeps them:
        always; Spark: once this session loaded them)."""

    def load_raw(self, tables: Sequence[RawTable], first: date | None, last: date | None, *,
                 count: bool = True) -> dict[date, dict[str, int]]:
        """Make each ``raw.<name>`` of ``tables`` hold its committed days: the days ``first .. last`` (None: an
        open bound; both None: the tables reloaded whole) replaced by the days handed, other days kept, in one
        step. Returns ``{day: {table: rows}}`` of ``first .. last`` (``{}`` when not ``count``; an engine that
        reads in place then scans nothing). Raises RawLoadError (nothing changed) when a file cannot be read or
        its rows disagree with :attr:`RawDay.rows` or its day."""

    def replace_raw_rows(self, name: str, columns: Sequence[tuple[str, str]],
                         rows: Sequence[Mapping[str, Any]]) -> int | None:
        """Replace every row of ``raw.<name>`` (a table no snapshot holds, created from ``columns`` when
        missing) with ``rows``, in one step; the rows written, or None when the engine keeps no such table."""

    def failing_rows(self, duckdb_sqls: Sequence[str], sample_size: int = 5) -> list[tuple[int, list[dict]]]:
        """``(rows, the first sample_size rows as JSON-safe dicts)`` of each SELECT written in DuckDB SQL.
        Raises TestExecutionError (its ``index`` names the SELECT) when one does not run."""

    def column_types(self, qualified: str) -> list[tuple[str, str]]:
        """``[(column, the engine's type name)]`` of ``schema.name``, in table order."""

    def row_count(self, qualified: str) -> int:
        """Rows of the whole relation ``schema.name``."""

    def publish(self) -> Path | None:
        """Make the build visible to readers; the published file, or None when nothing needs copying."""
