"""The plan's allowances: usage as GET /v1/account/usage answers it, and the check a keyword create makes
against it (docs/concepts/sandbox.md, "Usage"; spec, "Limits")."""

from __future__ import annotations

from datetime import date, timedelta

from rank_pipeline.sandbox import assumptions as A
from rank_pipeline.sandbox.world.config import AccountSpec
from rank_pipeline.sandbox.world.errors import QuotaExceeded
from rank_pipeline.sandbox.world.queries import account_count
from rank_pipeline.sandbox.world.state import WorldState

__all__ = ["check_quota", "data_row_cycle_start", "usage"]


def data_row_cycle_start(spec: AccountSpec, start_date: date, day: date) -> date:
    """The first day of the data-row cycle holding ``day``: the latest of ``spec.data_row_resets`` on or
    before it (``start_date`` before the first), or the 1st of ``day``'s month when none are listed."""
    if not spec.data_row_resets:
        return day.replace(day=1)
    seen = [r for r in spec.data_row_resets if r <= day]
    return seen[-1] if seen else start_date


def usage(state: WorldState, account_id: str, day: date) -> dict:
    """The ``data`` object of GET /v1/account/usage on ``day``: keywords existing that day, keyword-days
    since the cycle's first day (:func:`data_row_cycle_start`), and the plan's limits that day. KeyError
    for an unknown account id."""
    account = state.by_account_id.get(account_id)
    if account is None:
        raise KeyError(f"no account with id {account_id!r}")
    spec = account.spec
    kw_limit, row_limit = spec.keyword_limit, spec.data_row_limit
    if spec.limit_change is not None and day >= spec.limit_change.day:
        kw_limit, row_limit = spec.limit_change.keyword_limit, spec.limit_change.data_row_limit
    with state.lock:
        count_today = account_count(state, account, day)
        rows = 0
        d = data_row_cycle_start(spec, state.config.start_date, day)
        while d <= day:  # a cycle's days (31 for a month), O(domains * log n) each
            rows += count_today if d == day else account_count(state, account, d)
            d += timedelta(days=1)
    return A.usage_record(
        account_id,
        api_enabled=spec.api_enabled,
        keywords_usage=count_today,
        keywords_limit=kw_limit,
        data_rows_usage=rows,
        data_rows_limit=row_limit,
    )


def check_quota(state: WorldState, account_id: str, day: date, new: int) -> None:
    """Raise :class:`QuotaExceeded` unless ``new`` keywords and ``new`` data rows fit in what the account's
    allowances still hold on ``day`` (keywords checked first)."""
    remaining = usage(state, account_id, day)["attributes"]
    for resource in ("keywords", "dataRows"):
        if new > remaining[resource]["remaining"]:
            raise QuotaExceeded(resource, new, remaining[resource]["remaining"])
