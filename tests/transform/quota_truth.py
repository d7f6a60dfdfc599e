"""The quota marts recomputed in plain Python from the sandbox World's ground truth, following their .yml.

Imported as ``quota_truth`` by the test modules of this folder (pytest puts it on ``sys.path``). Input: a
``Truth`` of tests/transform/conftest.py (its ``usage`` frame: one row per account and snapshot day, and
its ``keywords`` frame for the keyword id sets). Never reads the SQL or the warehouse.
"""

from __future__ import annotations

import calendar
import math
import statistics
from datetime import date, timedelta

ONE = timedelta(days=1)
WINDOW = 62  # days of resets a cycle is inferred from
PREVIOUS = 31  # days within which the previous snapshot counts
CADENCE_CHANGE = 3  # a cycle longer or shorter than the one before by more than this: a change of cadence


def account_days(truth) -> dict[str, list[date]]:
    return {a: sorted(g["snapshot_date"]) for a, g in truth.usage.groupby("account")}


def keyword_changes(truth) -> list[dict]:
    """agg_account_keyword_changes_daily: keyword id sets of each snapshot against the previous one."""
    ids = truth.keywords.groupby(["account", "snapshot_date"])["keyword_id"].apply(set).to_dict()
    out = []
    for account, days in account_days(truth).items():
        for i, day in enumerate(days):
            prev = days[i - 1] if i and days[i - 1] >= day - PREVIOUS * ONE else None
            now, before = ids.get((account, day), set()), ids.get((account, prev), set())
            out.append({
                "account": account, "snapshot_date": day, "previous_snapshot_date": prev,
                "days_since_previous": (day - prev).days if prev else None, "keywords_tracked": len(now),
                "keywords_added": len(now - before) if prev else None,
                "keywords_removed": len(before - now) if prev else None,
                "net_keywords_change": len(now) - len(before) if prev else None,
            })
    return out


def add_month_minus_day(d: date) -> date:
    y, m = (d.year + 1, 1) if d.month == 12 else (d.year, d.month + 1)
    return date(y, m, min(d.day, calendar.monthrange(y, m)[1])) - ONE


def round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def _evidence(resets: list[tuple[date, date]], day: date, history_start: date) -> dict:
    """The cadence of the resets ``(day seen, cycle start)`` seen in the 62 days up to ``day`` and since
    ``history_start``."""
    low = max(day - WINDOW * ONE, history_start)
    in_window = [i for i, (seen, _) in enumerate(resets) if low <= seen <= day]
    # cycle k closes at reset k and opens at reset k-1; it counts when both were seen in the window
    cycles = [(k, (resets[k][1] - resets[k - 1][1]).days) for k in in_window if k >= 1 and resets[k - 1][0] >= low]
    length = dict(cycles)
    changes = [k for k, n in cycles if k - 1 in length and resets[k - 2][0] >= low
               and abs(n - length[k - 1]) > CADENCE_CHANGE]
    counted = [n for k, n in cycles if not changes or k >= changes[-1]]
    return {
        "resets": len(in_window),
        "latest_start": max((resets[i][1] for i in in_window), default=None),
        "cycles_observed": len(counted),
        "cycle_length_days": sum(counted) / len(counted) if counted else None,
        "cycle_length_spread_days": max(counted) - min(counted) if counted else None,
        "cadence_changed_on": resets[changes[-1]][0] if changes else None,
    }


def expected_cycles(truth) -> list[dict]:
    """fct_quota_cycle_daily as its yml defines it."""
    changes = {(r["account"], r["snapshot_date"]): r for r in keyword_changes(truth)}
    out = []
    for account in sorted(truth.usage["account"].unique()):
        rows = truth.usage[truth.usage.account == account].sort_values("snapshot_date").to_dict("records")
        for metric, kind, col in (("keywords", "stock", "keywords"), ("dataRows", "flow", "data_rows")):
            resets: list[tuple[date, date]] = []  # (day seen, cycle start)
            burns: list[tuple[date, float]] = []
            limit_changes: list[date] = []
            breaks: list[date] = []  # snapshots without a previous one within 31 days
            for i, u in enumerate(rows):
                day, used = u["snapshot_date"], u[f"{col}_usage"]
                limit, remaining = u[f"{col}_limit"], u[f"{col}_remaining"]
                prev = rows[i - 1] if i and rows[i - 1]["snapshot_date"] >= day - PREVIOUS * ONE else None
                prev_day, prev_used = (prev["snapshot_date"], prev[f"{col}_usage"]) if prev else (None, None)
                prev_limit = prev[f"{col}_limit"] if prev else None
                fell = prev is not None and prev_used > 0 and used < prev_used * 0.5
                if kind == "flow":
                    is_reset = fell
                else:  # a stock resets only with the flow of the same snapshot, and not by removed records
                    flow_fell = prev is not None and prev["data_rows_usage"] > 0 and \
                        u["data_rows_usage"] < prev["data_rows_usage"] * 0.5
                    removed = changes[(account, day)]["keywords_removed"] or 0
                    is_reset = fell and flow_fell and removed * 2 < prev_used - used
                if is_reset:
                    first = day.replace(day=1)
                    resets.append((day, first if first > prev_day else prev_day + ONE))
                if prev is not None and limit != prev_limit:
                    limit_changes.append(day)
                if prev is None:
                    breaks.append(day)
                recent = [d for d in breaks if d >= day - WINDOW * ONE]
                history_start = max(recent) if recent else \
                    min(r["snapshot_date"] for r in rows if day - WINDOW * ONE <= r["snapshot_date"] <= day)
                ev = _evidence(resets, day, history_start)
                n = ev["resets"]
                start = ev["latest_start"] or (history_start.replace(day=1) if kind == "flow" else None)
                length = ev["cycle_length_days"]
                cadence = ("calendar_month_assumed" if kind == "flow" else "none") if n == 0 else \
                    "monthly_assumed" if n == 1 else "monthly" if 28 <= length <= 31 else \
                    f"every_{round_half_up(length)}_days"
                evidence = "no_reset" if n == 0 else "one_reset" if ev["cycles_observed"] == 0 else \
                    "seen_once" if ev["cycles_observed"] == 1 else "seen_repeatedly"
                if start is None:
                    expected_end = None
                elif cadence.startswith("every_"):
                    expected_end = start + (round_half_up(length) - 1) * ONE
                else:
                    expected_end = add_month_minus_day(start)
                overdue = expected_end is not None and expected_end < day
                end = None if overdue else expected_end
                if kind == "flow" and start == day:
                    burn = float(used)
                elif kind == "flow" and is_reset:
                    burn = used / ((day - start).days + 1)
                elif prev is not None and not is_reset:
                    burn = (used - prev_used) / (day - prev_day).days
                else:
                    burn = None
                if burn is not None:
                    burns.append((day, burn))
                last7 = [b for d, b in burns if d >= day - 6 * ONE]
                mean = sum(last7) / len(last7) if last7 else None
                median = statistics.median(last7) if last7 else None
                rate = max(median, 0) if median is not None else None
                projected = used + rate * (end - day).days if end is not None and rate is not None else None
                if remaining <= 0 and expected_end is not None:
                    runs_out = True
                elif end is not None and median is not None:
                    runs_out = projected >= limit
                else:
                    runs_out = None
                if remaining <= 0:
                    exhaustion = day
                elif median is not None and median > 0:
                    candidate = day + math.ceil(remaining / median) * ONE
                    exhaustion = candidate if end is None or candidate <= end else None
                else:
                    exhaustion = None
                changed = [d for d in limit_changes if d >= day - WINDOW * ONE and (start is None or d >= start)]
                kc = changes[(account, day)] if metric == "keywords" else {}
                out.append({
                    "account": account, "snapshot_date": day, "metric": metric, "metric_kind": kind,
                    "usage": used, "quota_limit": limit, "remaining": remaining,
                    "utilisation_pct": used * 100 / limit if limit else None,
                    "previous_utilisation_pct": prev_used * 100 / prev_limit if prev and prev_limit else None,
                    "previous_snapshot_date": prev_day,
                    "days_since_previous": (day - prev_day).days if prev else None,
                    "net_change": used - prev_used if prev else None,
                    "keywords_added": kc.get("keywords_added"), "keywords_removed": kc.get("keywords_removed"),
                    "is_reset": is_reset, "limit_changed": limit != prev_limit if prev else None,
                    "limit_changed_on": max(changed, default=None),
                    "crossed_80_pct": prev_used * 100 / prev_limit < 80 <= used * 100 / limit if prev else None,
                    "crossed_100_pct": prev_used * 100 / prev_limit < 100 <= used * 100 / limit if prev else None,
                    "reset_cadence": cadence, "cadence_evidence": evidence,
                    "cycles_observed": ev["cycles_observed"], "cycle_length_days": length,
                    "cycle_length_spread_days": ev["cycle_length_spread_days"],
                    "cadence_changed_on": ev["cadence_changed_on"],
                    "cycle_start": start, "expected_cycle_end": expected_end, "cycle_end": end,
                    "is_overdue": overdue, "days_overdue": (day - expected_end).days if overdue else 0,
                    "cycle_days_elapsed": (day - start).days + 1 if start else None,
                    "cycle_days_left": (end - day).days if end else None,
                    "daily_burn": burn, "burn_rate_mean_7d": mean, "burn_rate_median_7d": median,
                    "cycle_average_burn": used / ((day - start).days + 1) if kind == "flow" and start else None,
                    "projected_usage_at_cycle_end": projected,
                    "runs_out_before_reset": runs_out,
                    "projected_exhaustion_date": exhaustion,
                })
    return out


def expected_forecast_accuracy(cycles: list[dict]) -> list[dict]:
    """fct_quota_forecast_accuracy as its yml defines it, from the rows of :func:`expected_cycles`: each
    day whose cycle's end is known (a later reset was seen before any break of more than 31 days) beside
    what happened until that end."""
    by_series: dict[tuple[str, str], list[dict]] = {}
    for r in sorted(cycles, key=lambda r: r["snapshot_date"]):
        by_series.setdefault((r["account"], r["metric"]), []).append(r)
    out = []
    for (account, metric), rows in by_series.items():
        resets = [r for r in rows if r["is_reset"]]
        breaks = [r["snapshot_date"] for r in rows if r["previous_snapshot_date"] is None]
        for f in rows:
            run_end = min((b for b in breaks if b > f["snapshot_date"]), default=date.max)
            after = [r for r in resets if f["snapshot_date"] < r["snapshot_date"] < run_end]
            if not after:
                continue
            actual_end = after[0]["cycle_start"] - ONE
            cycle = [r for r in rows if f["snapshot_date"] <= r["snapshot_date"] <= actual_end]
            out_days = [r["snapshot_date"] for r in cycle if r["remaining"] <= 0]
            actual_exhaustion = min(out_days, default=None)
            last = [r for r in cycle if r["snapshot_date"] == actual_end]
            actual_usage = last[0]["usage"] if last else None
            projected = f["projected_usage_at_cycle_end"]
            error = projected - actual_usage if projected is not None and actual_usage is not None else None
            runs_out, ran_out = f["runs_out_before_reset"], actual_exhaustion is not None
            out.append({
                "account": account, "metric": metric, "snapshot_date": f["snapshot_date"],
                "cycle_start": f["cycle_start"], "reset_cadence": f["reset_cadence"],
                "cadence_evidence": f["cadence_evidence"], "is_overdue": f["is_overdue"],
                "expected_cycle_end": f["expected_cycle_end"], "actual_cycle_end": actual_end,
                "days_to_cycle_end": (actual_end - f["snapshot_date"]).days,
                "cycle_end_error_days": (f["expected_cycle_end"] - actual_end).days
                if f["expected_cycle_end"] is not None else None,
                "usage": f["usage"], "quota_limit": f["quota_limit"],
                "burn_rate_median_7d": f["burn_rate_median_7d"],
                "projected_usage_at_cycle_end": projected, "actual_usage_at_cycle_end": actual_usage,
                "usage_error_units": error,
                "usage_error_pct": error * 100 / actual_usage if error is not None and actual_usage else None,
                "projected_exhaustion_date": f["projected_exhaustion_date"],
                "actual_exhaustion_date": actual_exhaustion,
                "exhaustion_error_days": (f["projected_exhaustion_date"] - actual_exhaustion).days
                if f["projected_exhaustion_date"] is not None and actual_exhaustion is not None else None,
                "runs_out_before_reset": runs_out, "ran_out_before_reset": ran_out,
                "runs_out_forecast_correct": runs_out == ran_out if runs_out is not None else None,
                "limit_changed_after_forecast": any(r["quota_limit"] != f["quota_limit"] for r in cycle),
            })
    return out
