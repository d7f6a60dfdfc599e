"""The one materialization flow, for every engine: which days a model builds, whether it is replaced, folded
or rebuilt whole, seeds before the graph, then its tests (:func:`rank_pipeline.transform.testing.test_days`).
Engines supply primitives only (:class:`rank_pipeline.transform.primitives.ModelEngine`). Per
materialization: docs/concepts/models.md, "One materialization flow"; docs/concepts/any-order.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta

from rank_pipeline.settings import FULL_REFRESH_BATCH_DAYS_ENV, full_refresh_batch_days_from_env
from rank_pipeline.transform.dependencies import MODEL_SCHEMAS
from rank_pipeline.transform.errors import BuildError
from rank_pipeline.transform.horizon import affected_ranges as _horizon_ranges
from rank_pipeline.transform.nodes import Model, Seed
from rank_pipeline.transform.primitives import BuildResult, ModelEngine
from rank_pipeline.transform.project import Project
from rank_pipeline.transform.rewrite import fold_start, full_build_sql, strip_sql, windowed_sql
from rank_pipeline.transform.sql import quote_ident
from rank_pipeline.transform.testing import TestResult, run_tests, test_days

__all__ = ["VIEW_DATE_COLUMN", "RelationBuild", "affected_ranges", "build", "build_all", "build_and_test",
           "build_seed", "seed_sql", "run_all_tests"]

VIEW_DATE_COLUMN = "snapshot_date"
"""The column by which a view's rows are stored per day on an engine that keeps no views."""

_OPEN_END = date(9999, 12, 31)
"""The last day of a fold: every upstream day after the watermark."""


def _where(relation: Model | Seed) -> str:
    return f"{relation.path} ({relation.qualified_name})"


def seed_sql(seed: Seed) -> str:
    """The DuckDB SELECT that reads a seed's CSV (header row), typed by its ``.yml`` ``column_types``."""
    path = str(seed.path).replace("'", "''")
    types = ""
    if seed.column_types:
        pairs = ", ".join(
            f"'{k.replace(chr(39), chr(39) * 2)}': '{v.replace(chr(39), chr(39) * 2)}'"
            for k, v in seed.column_types.items()
        )
        types = f", types = {{{pairs}}}"
    return f"select * from read_csv('{path}', header = true, auto_detect = true{types})\n"


def build_seed(engine: ModelEngine, seed: Seed) -> BuildResult:
    """Load a seed's CSV whole as ``seeds.<name>``, typed by its ``.yml``.

    Raises:
        BuildError: the CSV cannot be read or a value does not fit its declared type.
    """
    started = time.perf_counter()
    sql = seed_sql(seed)
    engine.ensure_schema(seed.schema)
    rows = engine.load_seed(seed, sql)
    return BuildResult(rows, time.perf_counter() - started, sql, "seed")


def affected_ranges(engine: ModelEngine, project: Project, first: date, last: date) -> dict[str, tuple[date, date]]:
    """``{model: (first day, last day)}`` a load of the raw days ``first .. last`` makes it rebuild
    (:func:`rank_pipeline.transform.horizon.affected_ranges`; views too on an engine that stores them)."""
    return _horizon_ranges(project, first, last, engine.last_loaded(project), views=not engine.persistent_views)


def _date_column(engine: ModelEngine, model: Model, full_sql: str, where: str) -> str | None:
    """The column ``model`` is stored by (None: stored whole)."""
    if model.incremental is not None:
        return model.incremental.date_column
    if model.materialized == "view":
        columns = engine.output_columns(engine.render(full_sql), where)
        return VIEW_DATE_COLUMN if VIEW_DATE_COLUMN in columns else None
    return None


def build(engine: ModelEngine, model: Model, partition_date: date | None = None, *, until: date | None = None,
          full_refresh: bool = False, progress: Callable[[str], None] | None = None) -> BuildResult:
    """Build ``model`` for the days ``partition_date .. until`` (``until`` default ``partition_date``) by its
    materialization (docs/concepts/models.md, "One materialization flow"); whole without ``partition_date``
    or with ``full_refresh``; ``progress`` gets a line per step of a full refresh in steps of days.

    Raises:
        BuildError: the SQL failed, an incremental model's output lacks its date column, or the range is
            empty; naming the model. The relation keeps its previous state (on an engine storing by day,
            the days not replaced keep their rows).
    """
    started = time.perf_counter()
    where = _where(model)
    engine.ensure_schema(model.schema)
    inc = model.incremental
    if model.materialized == "view" and engine.persistent_views:
        sql = engine.render(strip_sql(model.sql))
        engine.create_view(model.schema, model.name, sql, where)
        return BuildResult(None, time.perf_counter() - started, sql, "view")
    if inc is not None and inc.strategy == "fold":
        return _fold(engine, model, None if full_refresh else partition_date, started, where)
    full_sql = full_build_sql(model)
    column = _date_column(engine, model, full_sql, where)
    if (column is None or full_refresh or partition_date is None
            or not engine.stored_by_day(model.schema, model.name, column)):
        sql = engine.render(full_sql)
        if inc is None:
            rows = engine.replace_whole(model.schema, model.name, sql, where, date_column=column)
            return BuildResult(rows, time.perf_counter() - started, sql, "table")
        if inc.date_column not in engine.output_columns(sql, where):
            raise BuildError(f"{where}: an incremental model must output its date column {inc.date_column!r}")
        return _full_refresh(engine, model, sql, started, where, progress)
    end = until or partition_date
    if end < partition_date:
        raise BuildError(f"{model.path}: empty build range {partition_date} .. {end}")
    if inc is not None:
        select = windowed_sql(model, partition_date, end, engine.dated_relations(model, column))
    else:  # a view stored by day: its rows of the days (the engine pushes the filter down)
        select = (f"select * from (\n{full_sql}) as __model\nwhere {quote_ident(column)} between "
                  f"date '{partition_date.isoformat()}' and date '{end.isoformat()}'\n")
    sql = engine.render(select)
    rows = engine.replace_days(model.schema, model.name, sql, where, column, partition_date, end)
    return BuildResult(rows, time.perf_counter() - started, sql, "incremental", partition_date, end)


def _full_refresh(engine: ModelEngine, model: Model, sql: str, started: float, where: str,
                  progress: Callable[[str], None] | None) -> BuildResult:
    """An incremental model (``delete+insert``) built whole: one build of ``sql``, or, with
    ``RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS`` N and more than N days upstream, in steps of N days (the first
    built whole with no own rows, each later one replacing its days as a daily build does: the same rows,
    docs/concepts/scale-out.md, "Memory"). Raises BuildError: a build failed (out of memory: naming the
    setting); after the first step the relation keeps the steps built so far."""
    inc = model.incremental
    assert inc is not None
    batch = full_refresh_batch_days_from_env()
    dated = engine.dated_relations(model, inc.date_column) if batch else frozenset()
    upstream = [r for r in dated if f"{r[0]}.{r[1]}" in model.depends_on and r != (model.schema, model.name)]
    span = engine.day_span(upstream, inc.date_column) if upstream else None
    if span is None or (span[1] - span[0]).days < batch:
        return _whole(engine, model, sql, started, where, hint=not batch)
    first, last = span
    starts = [first + timedelta(days=d) for d in range(0, (last - first).days + 1, batch)]
    rows = 0
    for number, start in enumerate(starts, start=1):
        end = min(start + timedelta(days=batch - 1), last)
        step = engine.render(windowed_sql(model, start, end, dated, mode="first" if number == 1 else "range"))
        if number > 1:
            rows += engine.replace_days(model.schema, model.name, step, where, inc.date_column, start, end)
        else:
            rows = engine.replace_whole(model.schema, model.name, step, where, date_column=inc.date_column)
            if not engine.stored_by_day(model.schema, model.name, inc.date_column):  # no row in it (Spark)
                return _whole(engine, model, sql, started, where, hint=False)
        if progress is not None:
            progress(f"{model.qualified_name}: full refresh, days {start} .. {end} built "
                     f"(step {number} of {len(starts)}; {rows} rows, {time.perf_counter() - started:.1f} s so far)")
    return BuildResult(rows, time.perf_counter() - started, step, "full_refresh", steps=len(starts))


def _whole(engine: ModelEngine, model: Model, sql: str, started: float, where: str, *, hint: bool) -> BuildResult:
    """An incremental model's full refresh in one build of ``sql``; ``hint``: an out-of-memory error gets a line
    naming ``RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS``."""
    assert model.incremental is not None
    try:
        rows = engine.replace_whole(model.schema, model.name, sql, where, date_column=model.incremental.date_column)
    except BuildError as exc:
        if not hint or not _out_of_memory(exc):
            raise
        raise BuildError(f"{exc}\n{where}: to build its history in steps of days, set "
                         f"{FULL_REFRESH_BATCH_DAYS_ENV} (30, say)") from exc
    return BuildResult(rows, time.perf_counter() - started, sql, "full_refresh")


def _out_of_memory(exc: BuildError) -> bool:
    """True when the engine's error says it ran out of memory (DuckDB's or the JVM's)."""
    text = str(exc).lower()
    return "out of memory" in text or "outofmemory" in text or "java heap space" in text


def _fold(engine: ModelEngine, model: Model, partition_date: date | None, started: float,
          where: str) -> BuildResult:
    """``strategy: fold``: the upstream days after the watermark folded into the previous relation, or a
    whole rebuild (:func:`rank_pipeline.transform.rewrite.fold_start`); swapped in whole either way."""
    inc = model.incremental
    assert inc is not None and inc.watermark is not None
    watermark = (engine.watermark(model.schema, model.name, inc.watermark)
                 if partition_date is not None else None)
    first = fold_start(watermark, partition_date)
    if first is None:
        sql = engine.render(full_build_sql(model))
        rows = engine.replace_whole(model.schema, model.name, sql, where)
        return BuildResult(rows, time.perf_counter() - started, sql, "full_refresh")
    dated = engine.dated_relations(model, inc.date_column)
    sql = engine.render(windowed_sql(model, first, _OPEN_END, dated, mode="fold"))
    rows = engine.replace_whole(model.schema, model.name, sql, where)
    return BuildResult(rows, time.perf_counter() - started, sql, "incremental", first, None)


def build_all(engine: ModelEngine, project: Project, partition_date: date | None = None, *,
              until: date | None = None, full_refresh: bool = False) -> dict[str, BuildResult]:
    """Every seed, then every model in :meth:`Project.topological_order`.

    With ``partition_date`` (and ``until``, default the same day), the raw days just loaded: each model
    rebuilds the days that load changed, later loaded days within its horizon included
    (:func:`affected_ranges`).

    Returns:
        ``{qualified name: BuildResult}`` in build order. Stops at the first :class:`BuildError`.
    """
    for schema in MODEL_SCHEMAS:
        engine.ensure_schema(schema)
    engine.prepare(project)
    results = {seed.qualified_name: build_seed(engine, seed) for seed in project.seeds.values()}
    ranges: dict[str, tuple[date, date]] = {}
    if partition_date is not None and not full_refresh:
        ranges = affected_ranges(engine, project, partition_date, until or partition_date)
    for model in project.topological_order():
        first, last = ranges.get(model.qualified_name, (partition_date, until))
        results[model.qualified_name] = build(engine, model, first, until=last, full_refresh=full_refresh)
    return results


@dataclass
class RelationBuild:
    """What :func:`build_and_test` did: the build, the test results, and the days the tests read
    (``first`` None: the whole relation)."""

    built: BuildResult
    tests: list[TestResult]
    first: date | None
    last: date | None


def build_and_test(engine: ModelEngine, project: Project, relation: Model | Seed, first: date, last: date, *,
                   full_refresh: bool = False, progress: Callable[[str], None] | None = None) -> RelationBuild:
    """Build one relation for the run's days ``first .. last`` (a seed and a full refresh whole; ``progress``:
    :func:`build`'s), then run its ``.yml`` tests over the days :func:`rank_pipeline.transform.testing.test_days`
    gives.

    Raises:
        BuildError: the build failed (the old relation is kept);
        rank_pipeline.transform.TestExecutionError: a test's SQL failed.
    """
    if isinstance(relation, Seed):
        built = build_seed(engine, relation)
    elif full_refresh:
        built = build(engine, relation, full_refresh=True, progress=progress)
    else:
        start, end = affected_ranges(engine, project, first, last).get(relation.qualified_name, (first, last))
        built = build(engine, relation, start, until=end, progress=progress)
    scope = test_days(relation, built, *((None, None) if full_refresh else (first, last)))
    return RelationBuild(built, run_tests(engine, relation, scope[0], until=scope[1]), *scope)


def run_all_tests(engine: ModelEngine, project: Project, built: dict[str, BuildResult], first: date | None,
             last: date | None) -> Iterator[tuple[str, list[TestResult]]]:
    """``(qualified name, test results)`` of every seed and model of ``project`` in build order, each over
    the days :func:`rank_pipeline.transform.testing.test_days` gives for its entry of ``built``
    (:func:`build_all`'s result; ``first``, ``last`` None after a full refresh)."""
    relations: list[Model | Seed] = [*project.seeds.values(), *project.topological_order()]
    for relation in relations:
        scope = test_days(relation, built.get(relation.qualified_name), first, last)
        yield relation.qualified_name, run_tests(engine, relation, scope[0], until=scope[1])
