"""Which keywords exist on a day (from their creation day to the day before their deletion): a domain's
keywords, the counts usage needs, a keyword found by id (docs/concepts/sandbox.md, "Keywords").
"""

from __future__ import annotations

import bisect
from datetime import date

from rank_pipeline.sandbox.world.generation import churn_keyword, churn_range, ensure_base, ensure_life
from rank_pipeline.sandbox.world.ids import K_BASE_KW, K_CHURN_KW, K_RUNTIME_KW, parse_id
from rank_pipeline.sandbox.world.state import AccountState, Domain, Keyword, WorldState

__all__ = ["account_count", "existing_keywords", "find_keyword"]


def existing_keywords(state: WorldState, d: Domain, day: date) -> list[Keyword]:
    """The keywords of ``d`` existing on ``day``: base, then churn, then runtime ones (not list order)."""
    ensure_base(state, d)
    assert d.base is not None  # ensure_base
    out = [k for k in d.base if k.exists(day)]
    for j in churn_range(state.config, day):
        k = churn_keyword(state, d, j)
        if k.exists(day):
            out.append(k)
    out.extend(k for k in d.runtime if k.exists(day))
    return out


def _domain_count(state: WorldState, d: Domain, day: date) -> int:
    ensure_life(state, d)
    assert d.created_days is not None and d.deleted_days is not None  # ensure_life
    n = bisect.bisect_right(d.created_days, day) - bisect.bisect_right(d.deleted_days, day)
    n += sum(1 for j in churn_range(state.config, day) if churn_keyword(state, d, j).exists(day))
    n += sum(1 for k in d.runtime if k.exists(day))
    return n


def account_count(state: WorldState, account: AccountState, day: date) -> int:
    """How many keywords of ``account`` exist on ``day``, over all its domains."""
    return sum(_domain_count(state, d, day) for d in account.domains)


def find_keyword(state: WorldState, keyword_id: str) -> tuple[Domain, Keyword] | None:
    """The domain and keyword ``keyword_id`` names (whether it exists on a given day or not), else None."""
    known = state.kw_index.get(keyword_id)
    if known is not None:
        return known
    parsed = parse_id(state.config.seed, keyword_id)
    if parsed is None:
        return None
    kind, ai, di, index = parsed
    if ai >= len(state.accounts) or di >= len(state.accounts[ai].domains):
        return None
    d = state.accounts[ai].domains[di]
    with state.lock:
        if kind == K_BASE_KW:
            ensure_base(state, d)
            assert d.base is not None  # ensure_base
            return (d, d.base[index]) if 0 <= index < len(d.base) else None
        if kind == K_CHURN_KW:
            return d, churn_keyword(state, d, index)
        if kind == K_RUNTIME_KW:
            k = state.runtime_by_id.get(str(keyword_id).lower())
            return (d, k) if k is not None else None
    return None
