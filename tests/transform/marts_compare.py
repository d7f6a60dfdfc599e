"""Comparing a built relation with rows computed independently from the sandbox's ground truth.

One helper for every test module under tests/models (imported as ``marts_compare``: pytest puts
this folder on ``sys.path`` because it is not a package). Values compare as SQL means them: NULL, NaN
and NaT are None; timestamps compare as their date; lists and arrays as tuples; numbers as floats equal
within a relative and absolute tolerance of 1e-9 (float sums differ in their last bits with the order of
addition, which rounding to a fixed number of digits can turn into a false difference).
"""

from __future__ import annotations

import math
from datetime import date

import pandas as pd

TOLERANCE = 1e-9


def movement(now: int | None, then: int | None, comparable: bool) -> str:
    """Movement state of a keyword as fct_keyword_rankings_daily.yml defines it, computed independently of
    the SQL: ``new`` when there is nothing to compare with, else not_ranking/entered/dropped_out/
    improved/declined/unchanged (a lower position is better)."""
    if not comparable:
        return "new"
    if now is None and then is None:
        return "not_ranking"
    if then is None:
        return "entered"
    if now is None:
        return "dropped_out"
    return "improved" if now < then else "declined" if now > then else "unchanged"


def mart(con, name: str, order_by: str | None = None) -> pd.DataFrame:
    """A whole relation as a DataFrame (values as DuckDB returns them: dates as date)."""
    cur = con.execute(f"select * from {name}" + (f" order by {order_by}" if order_by else ""))
    return pd.DataFrame.from_records(cur.fetchall(), columns=[d[0] for d in cur.description])


def norm(value):
    """Comparable form of one value (see the module docstring); numbers become floats."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return tuple(value)
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
        if isinstance(value, list):
            return tuple(value)
    if value is pd.NaT or (not isinstance(value, (str, bool, date)) and pd.isna(value)):
        return None
    if isinstance(value, pd.Timestamp):
        return value.date()
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return value


def same(a, b) -> bool:
    """``a`` and ``b`` are equal as values of a relation (floats within :data:`TOLERANCE`)."""
    a, b = norm(a), norm(b)
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    return a == b


def assert_matches(actual: pd.DataFrame, expected: list[dict], keys: list[str], what: str) -> None:
    """``actual`` has exactly the rows of ``expected`` (by ``keys``) with equal values in every column
    ``expected`` names. An empty ``expected`` fails: the scenario the test needs is missing."""
    assert expected, f"{what}: nothing expected: the scenario is missing"
    columns = list(expected[0].keys())
    exp = {tuple(norm(r[k]) for k in keys): r for r in expected}
    act = {tuple(norm(r[k]) for k in keys): r for r in actual.to_dict("records")}
    missing, extra = sorted(set(exp) - set(act), key=str), sorted(set(act) - set(exp), key=str)
    assert not missing and not extra, (
        f"{what}: {len(missing)} expected rows missing (first {missing[:3]}), "
        f"{len(extra)} unexpected rows (first {extra[:3]})"
    )
    diffs = [
        f"{key} {col}: expected {row[col]!r}, got {act[key][col]!r}"
        for key, row in exp.items() for col in columns if not same(row[col], act[key][col])
    ]
    assert not diffs, f"{what}: {len(diffs)} differing values, first: " + "; ".join(diffs[:5])
