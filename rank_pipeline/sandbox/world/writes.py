"""Writes on the simulated today: keyword create (all-or-nothing) and the shifting-records fault's writes
(recorded in ``WorldState.writes``); each bumps the domain's version, other positions do not change.
"""

from __future__ import annotations

import bisect
import random
import time
from collections.abc import Iterable
from dataclasses import replace

from rank_pipeline.sandbox.world.config import KeywordSpec
from rank_pipeline.sandbox.world.errors import UnknownDomain
from rank_pipeline.sandbox.world.generation import add_runtime_keyword, random_spec
from rank_pipeline.sandbox.world.ids import K_BASE_KW, K_CHURN_KW, parse_id
from rank_pipeline.sandbox.world.queries import existing_keywords, find_keyword
from rank_pipeline.sandbox.world.quota import check_quota
from rank_pipeline.sandbox.world.rendering import keyword_record
from rank_pipeline.sandbox.world.state import Keyword, WorldState, WriteEvent

__all__ = ["create_keywords", "delete_keyword", "insert_keyword"]


def create_keywords(
    state: WorldState, account_id: str, domain_id: str, entries: Iterable[KeywordSpec]
) -> list[dict]:
    """Keyword create on today: one record per distinct combination of ``entries`` (request order), new ones
    created (one keyword and one data row each, :func:`.quota.check_quota`), tracked ones returned.
    Raises UnknownDomain (not this account's) or QuotaExceeded (nothing created).
    """
    d = state.domain_of(account_id, domain_id)
    if d is None:
        raise UnknownDomain(f"Domain {domain_id!r} is not a domain of account {account_id!r}")
    day = state.today
    with state.lock:
        existing = {k.combination(): k for k in existing_keywords(state, d, day)}
        plan = _plan(existing, entries)
        new = sum(1 for _, k in plan if k is None)
        if new:
            check_quota(state, account_id, day, new)
        out = []
        for spec, k in plan:
            if k is None:
                k = add_runtime_keyword(state, d, spec, day)
            out.append(keyword_record(state, d, k, day))
        return out


def _plan(
    existing: dict[tuple, Keyword], entries: Iterable[KeywordSpec]
) -> list[tuple[KeywordSpec, Keyword | None]]:
    """One ``(spec, keyword)`` per distinct combination of ``entries`` in request order: the keyword the
    domain already tracks, or None for a combination to create."""
    plan: list[tuple[KeywordSpec, Keyword | None]] = []
    seen: set[tuple] = set()
    for e in entries:
        combo = e.combination()
        if combo in seen:
            continue
        seen.add(combo)
        plan.append((e, existing.get(combo)))
    return plan


def delete_keyword(state: WorldState, domain_id: str, keyword_id: str) -> bool:
    """Stop tracking a keyword from today on (it existed up to yesterday). True if it existed today."""
    day = state.today
    found = find_keyword(state, keyword_id)
    if found is None or found[0].id != domain_id or not found[1].exists(day):
        return False
    d, k = found
    with state.lock:
        parsed = parse_id(state.config.seed, k.id)
        assert parsed is not None  # find_keyword parsed it
        kind, _, _, index = parsed
        if kind == K_BASE_KW:
            assert d.deleted_days is not None  # find_keyword ensured the domain's base
            if k.deleted is not None:
                d.deleted_days.pop(bisect.bisect_left(d.deleted_days, k.deleted))
            k.deleted = day
            bisect.insort(d.deleted_days, day)
        elif kind == K_CHURN_KW:
            d.churn_overrides[index] = day
        else:
            k.deleted = day
        d.version += 1
        state.writes.append(WriteEvent(time.monotonic(), domain_id, "delete", keyword_id))
    return True


def insert_keyword(state: WorldState, domain_id: str, rng: random.Random) -> dict:
    """Track one new random keyword (a combination the domain does not track) from today on, bypassing
    quota. Returns its record; KeyError for an unknown domain id."""
    d = state.by_domain_id[domain_id]
    day = state.today
    with state.lock:
        existing = {k.combination() for k in existing_keywords(state, d, day)}
        for _ in range(100):
            spec = random_spec(state, rng)
            if spec.combination() not in existing:
                break
        else:  # pragma: no cover - vocabulary is far larger than any domain
            spec = replace(spec, word=f"{spec.word} {rng.randrange(10**9)}")
        k = add_runtime_keyword(state, d, spec, day)
        state.writes.append(WriteEvent(time.monotonic(), domain_id, "insert", k.id))
        return keyword_record(state, d, k, day)
