"""Which model rows a load of some days changes: look-back horizons carried through the model graph.

The contract (docs/concepts/any-order.md, its one home): after loading, re-loading or
backfilling the raw days ``a .. b`` in any order, every model must hold exactly the rows a full rebuild
from the same snapshots would hold. The runner keeps that contract by rebuilding, for each incremental
model, the date range this module computes, in one transaction per model.

Horizons
    An incremental model declares ``incremental.lookback_days`` = H: its rows of day d depend only on
    upstream rows dated ``d - H .. d`` (relations without the date column are read whole). A model that
    compares with "the previous available snapshot" looks for it only within those H days (so
    ``fct_keyword_rankings_daily`` ignores a previous snapshot more than 31 days old); a snapshot older
    than the horizon never influences a row, which is what makes a partition build equal a full build.

    Rows of day d of a model therefore change when an upstream row of a day in ``d - H .. d`` changes,
    i.e. a change of upstream day D reaches this model's days ``D .. D + H``. Through the graph the reach
    adds up along each path and the longest path wins (:func:`propagation_days`):

    * ``raw.*`` tables: 0 (loading D replaces the rows of D only);
    * seeds: not a change source (a changed seed CSV needs ``rebuild --full-refresh``);
    * views: the largest reach of their inputs (a view recomputes on read);
    * incremental models: the largest reach of their inputs plus their own H;
    * an incremental model that reads its own earlier rows (``Model.reads_itself``, e.g. best position
      to date) and tables (rebuilt whole from whole inputs; a dimension's row can change with any day):
      unbounded, ``None``: every later loaded day.

Ranges (:func:`affected_ranges`)
    Loading days ``a .. b`` rebuilds each incremental model's rows of ``a .. min(b + reach, last)``,
    where ``last`` is the last loaded day (the largest ``snapshot_date`` of the raw tables); unbounded
    reach goes to ``last``. A daily run of a new last day is thus the one-day build ``b .. b``; a late day
    D rebuilds ``D .. D + reach`` of the already-loaded days after it.
"""

from __future__ import annotations

from datetime import date, timedelta

import duckdb

from rank_pipeline.transform.dependencies import SEED_SCHEMA
from rank_pipeline.transform.nodes import Model
from rank_pipeline.transform.project import Project
from rank_pipeline.transform.sql import one_row, qualified, quote_ident

__all__ = ["affected_ranges", "last_loaded_date", "propagation_days"]


def propagation_days(project: Project) -> dict[str, int | None]:
    """``{qualified model name: days after a changed upstream day its rows can change}`` (None: all).

    See the module docstring for the rules. Raw tables are 0; seeds are absent (never a change).
    """
    reach: dict[str, int | None] = {q: 0 for q in project.sources}
    for model in project.topological_order():
        upstream = [reach[d] for d in model.depends_on if not d.startswith(SEED_SCHEMA + ".") and d in reach]
        inherited: int | None = 0
        for r in upstream:
            inherited = None if r is None or inherited is None else max(inherited, r)
        reach[model.qualified_name] = _own_reach(model, inherited)
    return {q: r for q, r in reach.items() if q not in project.sources}


def _own_reach(model: Model, inherited: int | None) -> int | None:
    if model.materialized == "view":
        return inherited
    if model.materialized == "table" or model.reads_itself or inherited is None:
        return None
    assert model.incremental is not None
    return inherited + model.incremental.lookback_days


def last_loaded_date(con: duckdb.DuckDBPyConnection, project: Project, date_column: str = "snapshot_date") -> date | None:
    """The largest ``date_column`` value over the project's raw tables that exist (None: nothing loaded)."""
    rows = con.execute(
        "select table_schema, table_name from information_schema.columns "
        "where table_catalog = current_database() and column_name = ?",
        [date_column],
    ).fetchall()
    present = sorted(f"{s}.{t}" for s, t in rows if f"{s}.{t}" in project.sources)
    if not present:
        return None
    union = " union all ".join(f"select max({quote_ident(date_column)}) as d from {qualified(*q.split('.', 1))}"
                               for q in present)
    (last,) = one_row(con, f"select max(d) from ({union})")
    return last


def affected_ranges(
    project: Project, start: date, end: date, last_loaded: date | None, *, views: bool = False
) -> dict[str, tuple[date, date]]:
    """``{qualified incremental model: (first, last) day to rebuild}`` after loading ``start .. end``.

    Args:
        project: the loaded project.
        start, end: the raw days just loaded (inclusive; ``start <= end``).
        last_loaded: the last loaded day (:func:`last_loaded_date`); None or earlier than ``end``
            counts as ``end``.
        views: include the views too (their reach: the largest of their inputs), for an engine that
            stores a view's rows by day (Spark) instead of recomputing them on read.

    Raises:
        ValueError: ``start > end``.
    """
    if start > end:
        raise ValueError(f"empty range: {start} is after {end}")
    last = max(end, last_loaded or end)
    reach = propagation_days(project)
    ranges: dict[str, tuple[date, date]] = {}
    for model in project.topological_order():
        if model.incremental is None and not (views and model.materialized == "view"):
            continue
        r = reach[model.qualified_name]
        ranges[model.qualified_name] = (start, last if r is None else min(last, end + timedelta(days=r)))
    return ranges
