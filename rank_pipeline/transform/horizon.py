"""Which model rows a load of some days changes: :func:`propagation_days` (reach in days, None unbounded) and
:func:`affected_ranges` (days to rebuild) over the model graph (docs/concepts/any-order.md, "Horizons").
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

    Rules: docs/concepts/any-order.md, "Horizons". Raw tables are 0; seeds are absent (never a change).
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
    """``{qualified incremental model: (first, last) day to rebuild}`` after loading ``start .. end`` (inclusive);
    ``last_loaded`` None or earlier than ``end`` counts as ``end``; ``views`` adds views (an engine storing them
    by day). Raises ValueError: ``start > end``.
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
