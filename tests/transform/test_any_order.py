"""Any order of partition runs gives the warehouse a full rebuild from the same snapshots gives.

Over the sandbox World of ``conftest.py`` (35 days, 2 accounts), a *history* runs
days as the daily job does (load the day's raw partition, then build every model for it with the
runner): in order, out of order, re-run, skipped, and runs killed part-way (an exception injected before
the k-th model build; the raw load of that run is committed, later models are not) then retried. After
the history, every table and view of ``raw``, ``staging`` and ``marts`` must equal, row by row, a full
rebuild from the snapshots of the days the history loaded (floats within 1e-9 relative).

``make test`` runs :data:`DEFAULT_HISTORIES` seeded histories; ``RANK_PIPELINE_HISTORIES=N`` runs N
(seeds 0 .. N-1), e.g. ``RANK_PIPELINE_HISTORIES=50 .venv/bin/python -m pytest
tests/transform/test_any_order.py``. A real ``kill -9`` is covered by the ops tests; a rename of an
account by the doors tests.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from rank_pipeline.transform import DuckDBEngine, load_project, materialize
from rank_pipeline.warehouse.raw_load import load_partition
from rank_pipeline.warehouse.warehouse_file import SCHEMAS

DEFAULT_HISTORIES = 2
HISTORIES = int(os.environ.get("RANK_PIPELINE_HISTORIES", DEFAULT_HISTORIES))


class Killed(RuntimeError):
    """Stands for a run killed mid-way (the process dies between two model builds)."""


@contextmanager
def _killed_after(builds: int) -> Iterator[None]:
    """Make the runner die before its ``builds + 1``-th model build."""
    real = materialize.build
    count = [0]

    def dying(*args, **kwargs):
        if count[0] >= builds:
            raise Killed(f"killed before build {builds + 1}")
        count[0] += 1
        return real(*args, **kwargs)

    materialize.build = dying
    try:
        yield
    finally:
        materialize.build = real


def _open(path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    for schema in SCHEMAS:
        con.execute(f"create schema if not exists {schema}")
    return con


class Runs:
    """Plays daily runs into one warehouse; remembers the days loaded."""

    def __init__(self, path: Path, roots: dict[date, Path], sql_dir: Path):
        self.con = _open(path)
        self.roots = roots
        self.project = load_project(sql_dir)
        self.loaded: set[date] = set()

    def run(self, day: date, kill_after: int | None = None) -> None:
        """One daily run of ``day`` (raw load, then every model), optionally killed before a model build."""
        load_partition(self.con, self.roots[day], day)
        self.loaded.add(day)
        if kill_after is None:
            materialize.build_all(DuckDBEngine(self.con), self.project, day)
            return
        with _killed_after(kill_after % len(self.project.models)), pytest.raises(Killed):
            materialize.build_all(DuckDBEngine(self.con), self.project, day)


def _full_rebuild(path: Path, roots: dict[date, Path], days: set[date], sql_dir: Path) -> Path:
    """Load ``days`` from their snapshots and build every model in full; returns the file."""
    con = _open(path)
    for day in sorted(days):
        load_partition(con, roots[day], day)
    materialize.build_all(DuckDBEngine(con), load_project(sql_dir), full_refresh=True)
    con.close()
    return path


def _relations(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "select table_schema, table_name from information_schema.tables "
        "where table_catalog = current_database() and table_schema in ('raw', 'staging', 'marts') "
        "and table_name not like '\\_\\_%' escape '\\' order by 1, 2"
    ).fetchall()
    return [f"{s}.{t}" for s, t in rows]


def _cell(value: object) -> str:
    """A comparable text for one non-float value (nulls of every kind alike; lists by their items)."""
    if isinstance(value, list | tuple | np.ndarray):
        return repr([_cell(v) for v in value])
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return "<null>"
    return str(value)


def _differences(got: pd.DataFrame, want: pd.DataFrame) -> str | None:
    """None when both frames hold the same rows (any order; floats within 1e-9 relative), else why not."""
    if list(got.columns) != list(want.columns):
        return f"columns differ: {list(got.columns)} vs {list(want.columns)}"
    if len(got) != len(want):
        return f"{len(got)} rows vs {len(want)} in a full rebuild"
    floats = [c for c in want.columns if want[c].dtype.kind == "f" or got[c].dtype.kind == "f"]
    keys = [c for c in want.columns if c not in floats]

    def canonical(df: pd.DataFrame) -> pd.DataFrame:
        out = pd.DataFrame({c: [_cell(v) for v in df[c].astype(object)] for c in keys}, index=df.index)
        for c in floats:
            out[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
        return out.sort_values(keys + floats, na_position="last").reset_index(drop=True)

    a, b = canonical(got), canonical(want)
    bad = pd.Series(False, index=a.index)
    for c in keys:
        bad |= a[c] != b[c]
    for c in floats:
        x, y = a[c], b[c]
        both_nan = x.isna() & y.isna()
        close = np.isclose(x.fillna(0).to_numpy(), y.fillna(0).to_numpy(), rtol=1e-9, atol=1e-12)
        bad |= ~(both_nan | (pd.Series(close, index=a.index) & (x.isna() == y.isna())))
    if bad.any():
        return f"{int(bad.sum())} row(s) differ, e.g. {a[bad].head(2).to_dict('records')} vs {b[bad].head(2).to_dict('records')}"
    return None


def assert_equals_full_rebuild(con: duckdb.DuckDBPyConnection, reference_path: Path) -> None:
    """Every relation of raw, staging and marts in ``con`` holds the rows of the full rebuild at
    ``reference_path`` (exactly, checked in DuckDB; where not exact, again with floats within 1e-9)."""
    reference = duckdb.connect(str(reference_path), read_only=True)
    relations = _relations(reference)
    reference.close()
    assert relations == _relations(con), "the history built other relations than a full rebuild"
    con.execute(f"attach '{reference_path}' as full_rebuild (read_only)")
    problems = []
    try:
        for relation in relations:
            schema, table = relation.split(".")
            has_loaded_at = con.execute("select count(*) from information_schema.columns where table_schema = ? "
                                        "and table_name = ? and column_name = 'loaded_at'",
                                        [schema, table]).fetchone()[0]
            exclude = " exclude (loaded_at)" if has_loaded_at else ""
            a, b = f"select *{exclude} from {relation}", f"select *{exclude} from full_rebuild.{relation}"
            (n,) = con.execute(f"select count(*) from (({a} except all {b}) union all ({b} except all {a}))").fetchone()
            if n == 0:
                continue
            why = _differences(con.execute(a).df(), con.execute(b).df())
            if why:
                problems.append(f"{relation}: {why}")
    finally:
        con.execute("detach full_rebuild")
    assert not problems, "differs from a full rebuild of the same snapshots:\n" + "\n".join(problems)


@pytest.fixture(scope="module")
def roots(snapshots_dirs, scenario) -> dict[date, Path]:
    """``{day: snapshot root holding it}`` for every day of the World (two roots in conftest)."""
    history, recent = snapshots_dirs
    days = scenario.days
    return {d: (history if i < len(days) - scenario.incremental_days else recent) for i, d in enumerate(days)}


@pytest.mark.slow
def test_late_backfill_leaves_no_stale_row(roots, scenario, tmp_path):
    """Late backfill, no stale row: the 35 days but one were run (their state is a build
    without that day: loaded, then built in full, which the random histories below show equals running
    them day by day), then the skipped day runs last, as a backfill. Every later day within the
    horizons must be rebuilt: the warehouse equals a full rebuild with the day."""
    days = list(scenario.days)
    late = days[20]
    runs = Runs(tmp_path / "history.duckdb", roots, scenario.sql_dir)
    for day in days:
        if day != late:
            load_partition(runs.con, roots[day], day)
            runs.loaded.add(day)
    materialize.build_all(DuckDBEngine(runs.con), runs.project, full_refresh=True)
    runs.run(late)
    assert_equals_full_rebuild(runs.con, _full_rebuild(tmp_path / "full.duckdb", roots, runs.loaded, scenario.sql_dir))


def _history(rng: random.Random, days: list[date]) -> list[tuple[date, int | None]]:
    """A random history over ``days``: a random subset (the others never run), mostly forward, with
    days moved later (late days, backfills), blocks shuffled, re-runs, and runs killed before a random
    model build then retried later."""
    order = [d for d in days if rng.random() < 0.85]
    for _ in range(rng.randint(1, 3)):  # late days
        if len(order) > 2:
            i = rng.randrange(len(order) - 1)
            order.insert(rng.randrange(i + 1, len(order)), order.pop(i))
    i = rng.randrange(len(order))  # a shuffled block
    block = order[i:i + rng.randint(2, 4)]
    rng.shuffle(block)
    order[i:i + len(block)] = block
    for _ in range(rng.randint(1, 3)):  # re-runs of days already run
        j = rng.randrange(len(order))
        order.insert(rng.randrange(j, len(order)) + 1, order[j])
    steps: list[tuple[date, int | None]] = []
    pending: list[date] = []
    for day in order:
        if pending and rng.random() < 0.5:
            steps.append((pending.pop(0), None))  # the retry of a killed run
        if rng.random() < 0.2:
            steps.append((day, rng.randint(0, 24)))  # killed before model build k
            pending.append(day)
        else:
            steps.append((day, None))
    steps.extend((d, None) for d in pending)
    return steps


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(HISTORIES))
def test_random_history_equals_full_rebuild(seed, roots, scenario, tmp_path):
    """Property: a seeded random history (order, gaps, re-runs, kills and retries) equals a full rebuild."""
    rng = random.Random(seed)
    days = list(scenario.days)
    # a shorter window keeps `make test` fast; longer runs (RANK_PIPELINE_HISTORIES) vary it
    start = rng.randrange(0, len(days) - 12)
    window = days[start:start + rng.randint(12, len(days) - start)] if HISTORIES > DEFAULT_HISTORIES else days[-10:]
    steps = _history(rng, window)
    runs = Runs(tmp_path / "history.duckdb", roots, scenario.sql_dir)
    for day, kill_after in steps:
        runs.run(day, kill_after)
    assert_equals_full_rebuild(runs.con, _full_rebuild(tmp_path / "full.duckdb", roots, runs.loaded, scenario.sql_dir))


def test_horizons_add_up_along_the_model_graph(scenario):
    """A change of raw day D reaches each model's days D .. D + reach (models.horizon)."""
    from rank_pipeline.transform.horizon import affected_ranges, propagation_days

    project = load_project(scenario.sql_dir)
    reach = propagation_days(project)
    assert reach["staging.stg_keywords"] == 0
    assert reach["marts.fct_keyword_rankings_daily"] == 31
    assert reach["marts.agg_domain_segment_daily"] == 31  # reads the rankings mart: 31 + 0
    assert reach["marts.fct_keyword_best_position_daily"] is None  # a running state: every later day
    d = date(2026, 3, 1)
    ranges = affected_ranges(project, d, d, date(2026, 6, 1))
    assert ranges["marts.fct_keyword_rankings_daily"] == (d, date(2026, 4, 1))
    assert ranges["marts.fct_keyword_best_position_daily"] == (d, date(2026, 6, 1))
    assert ranges["staging.stg_keywords"] == (d, d)
    assert affected_ranges(project, d, d, d)["marts.fct_keyword_rankings_daily"] == (d, d)  # a new last day


@pytest.mark.slow
def test_a_full_refresh_in_steps_of_days_equals_one_build(roots, scenario, tmp_path, monkeypatch):
    """``RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS=4``: each incremental model's full refresh over the 35 days is
    built 4 days at a time (the first step whole, each later one replacing its days), and the warehouse equals
    one build of every day; a self-reading model is among them."""
    days = set(scenario.days)
    monkeypatch.setenv("RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS", "4")
    con = _open(tmp_path / "steps.duckdb")
    for day in sorted(days):
        load_partition(con, roots[day], day)
    project = load_project(scenario.sql_dir)
    built = materialize.build_all(DuckDBEngine(con), project, full_refresh=True)
    stepped = [q for q, r in built.items() if r.mode == "full_refresh" and r.steps == 9]  # 4 x 8 days + 3
    incremental = [m.qualified_name for m in project.topological_order()
                   if m.incremental is not None and m.incremental.strategy == "delete+insert"]
    assert incremental and sorted(stepped) == sorted(incremental), "each incremental model built in steps"
    assert any(project.relation(q).reads_itself for q in stepped)
    monkeypatch.delenv("RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS")
    assert_equals_full_rebuild(con, _full_rebuild(tmp_path / "full.duckdb", roots, days, scenario.sql_dir))
