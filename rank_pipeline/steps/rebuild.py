"""Rebuild the warehouse from the Parquet snapshots, without calling the API (``rank-pipeline rebuild``).

The snapshots are the system of record; the raw tables and every model can be rebuilt from them at
any time, on either engine (:func:`rank_pipeline.warehouse.engines.open_engine`):

``rebuild(paths, project_dir)``
    every committed snapshot day: the raw days are replaced from the snapshots, then each incremental
    model rebuilds those days and every later loaded day within its horizon
    (:mod:`rank_pipeline.transform.horizon`); views and tables rebuild whole.
``rebuild(..., first=D1, last=D2)``
    only the days ``D1 .. D2`` (either bound optional): raw rows of those days are replaced by what the
    snapshots hold (a day whose snapshot was removed loses its raw rows), and the models rebuild every
    row that depends on those days, later days included, as after a backfill.
``rebuild(..., full_refresh=True)``
    drop and reload every raw table, then build every model from scratch (after a model's columns
    changed, or a seed CSV changed meaning).
``rebuild(..., engine=EngineSettings(engine="spark", ...))``
    the same models on a Spark session (:mod:`rank_pipeline.transform.spark_engine`), with the same
    ranges (incremental on Spark too), written as Parquet tables under the Spark
    warehouse URI; the DuckDB warehouse is not touched.

Before anything is loaded, the committed snapshots of the days are checked against the vendor's contract
(:mod:`rank_pipeline.steps.shape`); a mismatch stops the rebuild with one line per path, nothing built or
published. Then every data test of every seed and model runs on the rows rebuilt (the whole relation after a full
refresh); a failing blocking test stops here and nothing is published. Otherwise the build is published
(:mod:`rank_pipeline.steps.publish`: the DuckDB build file copied atomically; on Spark the tables are
already in place). The same rebuild from the Dagster UI: the job ``rebuild_from_snapshots``
(:mod:`rank_pipeline.defs.jobs`).

No Dagster here. The rebuild holds the data folder's writer lock
(:func:`rank_pipeline.folder_lock.hold_writer`), so a daily run waits for it and the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from rank_pipeline.folder_lock import hold_writer
from rank_pipeline.settings import DataPaths, EngineSettings
from rank_pipeline.steps.publish import publish as publish_build
from rank_pipeline.steps.shape import SHAPE_CHECK, check_shape
from rank_pipeline.transform import load_project
from rank_pipeline.transform.materialize import build_all, run_all_tests
from rank_pipeline.transform.primitives import ModelEngine
from rank_pipeline.transform.testing import TestResult
from rank_pipeline.warehouse.engines import open_engine, reload_raw
from rank_pipeline.warehouse.errors import WarehouseError
from rank_pipeline.warehouse.raw_load import snapshot_dates

__all__ = ["RebuildError", "RebuildReport", "rebuild"]


class RebuildError(WarehouseError):
    """Nothing to rebuild, a bad range, or a blocking data test failed (then nothing was published).

    Attributes:
        report: the :class:`RebuildReport` when blocking data tests failed (None otherwise).
    """

    report: RebuildReport | None = None

    @classmethod
    def tests_failed(cls, report: RebuildReport, message: str) -> RebuildError:
        """The error for a build whose blocking data tests failed: ``message``, carrying ``report``."""
        exc = cls(message)
        exc.report = report
        return exc


@dataclass
class RebuildReport:
    """What :func:`rebuild` did.

    Attributes:
        first, last: the snapshot days reloaded into raw (None, None: every day, full refresh).
        full_refresh: raw tables dropped and models built from scratch.
        days: snapshot days reloaded; raw_rows: rows loaded into raw over those days.
        models: models built; model_ranges: ``{incremental model: (first day, last day)}`` rebuilt.
        tests_passed: data tests that passed; tests_failed: ``relation.test: n failing`` of the others.
        published: the published file, None when a blocking test failed.
    """

    first: date | None
    last: date | None
    full_refresh: bool
    days: int = 0
    raw_rows: int = 0
    models: int = 0
    model_ranges: dict[str, tuple[date, date]] = field(default_factory=dict)
    tests_passed: int = 0
    tests_failed: list[str] = field(default_factory=list)
    blocking_failed: list[str] = field(default_factory=list)
    shape_lines: list[str] = field(default_factory=list)
    published: Path | None = None
    written_to: str | None = None

    def add_tests(self, relation: str, results: Iterable[TestResult]) -> None:
        """Count the data test results of ``relation`` (a qualified name) into the report."""
        for result in results:
            if result.passed:
                self.tests_passed += 1
                continue
            line = f"{relation}.{result.name}: {result.failures} failing"
            self.tests_failed.append(line)
            if result.blocking:
                self.blocking_failed.append(line)

    def summary(self) -> str:
        """One line: days, rows, models, tests passed/failed, where it was published (or written, on Spark)."""
        span = "every snapshot day" if self.first is None else f"{self.first} .. {self.last}"
        where = (f"published {self.published}" if self.published
                 else f"written as Parquet tables under {self.written_to} (Spark)" if self.written_to
                 else "NOT published")
        return (f"rebuilt {span}{' (full refresh)' if self.full_refresh else ''}: {self.days} day(s), "
                f"{self.raw_rows:,} raw rows, {self.models} models, tests {self.tests_passed} passed, "
                f"{len(self.tests_failed)} failed; {where}")


def rebuild(
    paths: DataPaths,
    project_dir: Path,
    first: date | None = None,
    last: date | None = None,
    *,
    full_refresh: bool = False,
    publish: bool = True,
    engine: EngineSettings | None = None,
    holder: str = "a rebuild",
    log: Callable[[str], object] | None = None,
) -> RebuildReport:
    """Rebuild raw tables and models from the snapshots under ``paths``, test, then publish (module doc).

    Args:
        paths: the data folder's layout (snapshots, build and published DuckDB files).
        project_dir: the SQL models folder (``dbt_like_sql``).
        first, last: the days to rebuild (inclusive); default the first and last committed snapshot day.
        full_refresh: drop every raw table and model and rebuild all days (``first``/``last`` not allowed).
        publish: publish the build when no blocking test failed.
        engine: the model engine and its settings (default DuckDB).
        holder, log: who holds the writer lock, and where a wait for it or removed leftovers are told.

    Raises:
        RebuildError: ``first`` after ``last``, a range with ``full_refresh`` or on an engine that is not
            incremental, no committed snapshot in the range, or a blocking test failed (the report is in
            ``exc.report``; nothing published).
        rank_pipeline.folder_lock.LockTimeout: another run holds the data folder.
        rank_pipeline.warehouse.errors.LoadError: a snapshot is damaged (raw tables rolled back).
        rank_pipeline.transform.SqlModelError: a model failed to build.
    """
    if full_refresh and (first is not None or last is not None):
        raise RebuildError("--full-refresh rebuilds every day; drop --from/--to, or drop --full-refresh")
    if first is not None and last is not None and first > last:
        raise RebuildError(f"--from {first} is after --to {last}; swap them")
    settings = engine or EngineSettings()
    with hold_writer(paths.data_dir, holder=holder, log=log), open_engine(settings, paths) as models:
        return _rebuild(models, paths, load_project(project_dir), first, last, full_refresh=full_refresh,
                        publish=publish)


def _rebuild(engine: ModelEngine, paths: DataPaths, project, first: date | None, last: date | None, *,
             full_refresh: bool, publish: bool) -> RebuildReport:
    if not engine.incremental:
        if first is not None or last is not None:
            raise RebuildError(f"on {engine.name} (RANK_PIPELINE_ENGINE={engine.name}) a rebuild is always every "
                               "day in full; drop --from/--to")
        full_refresh = True
    days = [d for d in snapshot_dates(paths.snapshot_store_uri)
            if (first is None or d >= first) and (last is None or d <= last)]
    if not days:
        span = f"between {first or 'the first day'} and {last or 'the last day'} " if first or last else ""
        raise RebuildError(
            f"no committed snapshot {span}under {paths.snapshot_store_uri}; extract days first "
            "(`rank-pipeline run --date D`) or widen the range"
        )
    report = RebuildReport(first=None if full_refresh else (first or days[0]),
                           last=None if full_refresh else (last or days[-1]), full_refresh=full_refresh)
    shape = check_shape(project, paths.snapshot_store_uri, report.first or days[0], report.last or days[-1],
                        paths.vendor_fields, paths.cache_dir / "shape")
    if not shape.passed:
        report.shape_lines = shape.lines()
        report.blocking_failed = [f"raw.{e}.{SHAPE_CHECK}: {len(r.findings)} failing"
                                  for e, r in shape.results.items() if not r.passed]
        raise RebuildError.tests_failed(report, (
            f"the vendor's shape does not match the contract ({'; '.join(report.blocking_failed)}): nothing was "
            "built or published; the paths and what to edit are listed above"))
    loaded = reload_raw(engine, paths.snapshot_store_uri, report.first, report.last)
    built = build_all(engine, project, report.first, until=report.last, full_refresh=full_refresh)
    report.days = len(loaded)
    report.raw_rows = sum(sum(r.values()) for r in loaded.values())
    report.models = sum(1 for q in built if not q.startswith("seeds."))
    report.model_ranges = {q: (b.partition_date, b.until) for q, b in built.items()
                           if b.partition_date is not None and b.until is not None}
    for qualified, results in run_all_tests(engine, project, built, report.first, report.last):
        report.add_tests(qualified, results)
    if report.blocking_failed:
        raise RebuildError.tests_failed(report, (
            f"blocking data test(s) failed, the published warehouse was left as it was: "
            f"{'; '.join(report.blocking_failed[:5])}. Inspect them in {engine.written_to}"))
    if publish:
        report.published = publish_build(engine)
        if report.published is None:
            report.written_to = engine.written_to
    return report
