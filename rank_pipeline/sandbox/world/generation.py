"""Generation from the seed: accounts with keys and tags, domains, base, churn and runtime keywords, competitors.

Each thing is drawn from a ``random.Random`` seeded by a hash of the seed and what it is, so it does not
depend on what was generated before; rules: docs/concepts/sandbox.md, "The world".
"""

from __future__ import annotations

import functools
import hashlib
import math
import random
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

from rank_pipeline.sandbox import assumptions as A
from rank_pipeline.sandbox.world import vocabulary as V
from rank_pipeline.sandbox.world.config import Account, AccountSpec, KeywordSpec, WorldConfig
from rank_pipeline.sandbox.world.ids import (
    K_ACCOUNT,
    K_BASE_KW,
    K_CHURN_KW,
    K_COMPETITOR,
    K_DOMAIN,
    K_RUNTIME_KW,
    K_TAG,
    hash64,
    make_id,
)
from rank_pipeline.sandbox.world.state import AccountState, Domain, Keyword, WorldState

__all__ = [
    "CHURN_MAX_LIFE", "CHURN_SPACING_DAYS", "add_runtime_keyword", "churn_keyword", "churn_range",
    "competitor_schedule", "ensure_base", "ensure_life", "make_accounts", "random_spec",
]

CHURN_SPACING_DAYS = 4
"""Mean number of days between two churn keywords of one domain."""
CHURN_MAX_LIFE = 30
"""Longest life of a churn keyword, in days."""

_CHURN_CACHE_SIZE = 100_000


# ---------------------------------------------------------------- accounts and domains


def make_accounts(config: WorldConfig) -> list[AccountState]:
    """The accounts of ``config`` in order, with keys, tags and (lazy) domains. Raises ValueError: more than 255
    accounts or 65535 domains in one (what an id holds).
    """
    seed = config.seed
    if len(config.accounts) > 255:
        raise ValueError("a world holds at most 255 accounts")
    accounts = []
    for ai, spec in enumerate(config.accounts):
        if spec.domains > 65_535:
            raise ValueError(f"account {spec.name!r}: at most 65535 domains")
        account_id = make_id(seed, K_ACCOUNT, ai, 0, 0)
        key = spec.api_key or hashlib.blake2b(f"key|{seed}|{spec.name}".encode(), digest_size=16).hexdigest()
        extra = tuple(hashlib.blake2b(f"key|{seed}|{spec.name}|{n}".encode(), digest_size=16).hexdigest()
                      for n in range(2, spec.keys + 1))
        account = Account(spec.name, account_id, key, spec.api_enabled, (key, *extra))
        rng = random.Random(hash64("account", seed, ai))
        tag_names = rng.sample(V.TAGS, rng.randint(3, 6))
        tags = [(make_id(seed, K_TAG, ai, 0, ti), n, c) for ti, (n, c) in enumerate(tag_names)]
        domains = [_make_domain(seed, ai, spec, di) for di in range(spec.domains)]
        accounts.append(AccountState(spec, account, ai, domains, tags))
    return accounts


def _make_domain(seed: int, ai: int, spec: AccountSpec, di: int) -> Domain:
    rng = random.Random(hash64("domain", seed, ai, di))
    if spec.domains <= 6:
        suffixes = ("", "-shop", "-blog", "-store", "-outlet", "-deals")
        name = f"{spec.name}{suffixes[di]}.{V.TLDS[rng.randrange(len(V.TLDS))]}"
        project = f"{spec.name.title()} {(suffixes[di].strip('-') or 'main').title()}"
    else:
        name = f"{spec.name}-site{di + 1}.example"
        project = f"{spec.name.title()} site {di + 1}"
    lo, hi = spec.keywords_per_domain
    return Domain(
        id=make_id(seed, K_DOMAIN, ai, di, 0),
        account_index=ai,
        index=di,
        name=name,
        host=f"www.{name}",
        match_type=A.MATCH_TYPES[rng.randrange(len(A.MATCH_TYPES))],
        project_name=project,
        n_base=rng.randint(lo, hi),
    )


def competitor_schedule(config: WorldConfig, d: Domain) -> list[tuple[str, str, str, date, date | None]]:
    """(id, domain, name, created, removed) of every competitor the domain ever has."""
    seed, start = config.seed, config.start_date
    rng = random.Random(hash64("competitors", seed, d.account_index, d.index))
    n_base = rng.randint(2, 4)
    picks = rng.sample(V.COMPETITORS, n_base + 1)
    out: list[list[Any]] = []
    for ci, name in enumerate(picks):
        cid = make_id(seed, K_COMPETITOR, d.account_index, d.index, ci)
        if ci < n_base:
            created = start - timedelta(days=rng.randint(30, 400))
        else:
            created = start + timedelta(days=rng.randint(1, 60))
        out.append([cid, f"{name}.{V.TLDS[ci % len(V.TLDS)]}", name.title(), created, None])
    if rng.random() < 0.5:
        out[rng.randrange(n_base)][4] = start + timedelta(days=rng.randint(61, 180))
    return [(c[0], c[1], c[2], c[3], c[4]) for c in out]


# ---------------------------------------------------------------- keywords


def random_spec(state: WorldState, rng: random.Random) -> KeywordSpec:
    """A random keyword combination (word, engine, device, locale, frequency) drawn from the vocabulary."""
    word = f"{rng.choice(V.ADJECTIVES)} {rng.choice(V.NOUNS)}{rng.choice(V.SUFFIXES)}"
    engine = V.weighted(rng, V.ENGINES)[0]
    device = "desktop" if rng.random() < 0.55 else "mobile"
    loc_key, lang, _ = V.weighted(rng, V.LOCALES)
    frequency = "daily" if rng.random() < 0.85 else "weekly"
    return KeywordSpec(word, engine, device, _locale_row(state, engine, loc_key)["code"], lang, frequency)


def ensure_life(state: WorldState, d: Domain) -> None:
    """Creation and deletion days of the base keywords: a cheap stream of its own, so counting
    keywords (usage) never needs the full records."""
    if d.life is not None:
        return
    start = state.config.start_date
    rng = random.Random(hash64("life", state.config.seed, d.account_index, d.index))
    life = []
    for _ in range(d.n_base):
        offset = -rng.randint(1, 365) if rng.random() < 0.75 else rng.randint(0, 364)
        created = start + timedelta(days=offset)
        deleted = created + timedelta(days=rng.randint(30, 700)) if rng.random() < 0.08 else None
        life.append((created, deleted))
    d.life = life
    d.created_days = sorted(c for c, _ in life)
    d.deleted_days = sorted(x for _, x in life if x is not None)


def ensure_base(state: WorldState, d: Domain) -> None:
    """Generate the domain's base keywords (unique combinations) unless done, and index them by id."""
    if d.base is not None:
        return
    ensure_life(state, d)
    seed = state.config.seed
    rng = random.Random(hash64("keywords", seed, d.account_index, d.index))
    tags = state.accounts[d.account_index].tags
    seen: set[tuple] = set()
    base: list[Keyword] = []
    for i in range(d.n_base):
        for _ in range(50):
            spec = random_spec(state, rng)
            if spec.combination() not in seen:
                break
        else:
            spec = replace(spec, word=f"{spec.word} {i}")
        seen.add(spec.combination())
        assert d.life is not None  # ensure_life above
        created, deleted = d.life[i]
        kid = make_id(seed, K_BASE_KW, d.account_index, d.index, i)
        base.append(_build_keyword(d, kid, spec, created, deleted, rng, tags, pivot_range=(0, 365)))
    d.base = base
    state.kw_index.update((k.id, (d, k)) for k in base)


def churn_keyword(state: WorldState, d: Domain, j: int) -> Keyword:
    """The domain's churn keyword of index ``j`` (created about ``j * CHURN_SPACING_DAYS`` days after
    ``start_date``), with a deletion made at runtime applied."""
    key = (d.id, j)
    k = state.churn_cache.get(key)
    if k is None:
        seed, start = state.config.seed, state.config.start_date
        rng = random.Random(hash64("churn", seed, d.account_index, d.index, j))
        created = start + timedelta(days=j * CHURN_SPACING_DAYS + rng.randrange(CHURN_SPACING_DAYS))
        deleted = created + timedelta(days=rng.randint(3, CHURN_MAX_LIFE))
        spec = random_spec(state, rng)
        spec = replace(spec, word=f"{spec.word} {rng.choice(V.CHURN_TOPICS)}")
        kid = make_id(seed, K_CHURN_KW, d.account_index, d.index, j)
        tags = state.accounts[d.account_index].tags
        t = (created - start).days
        k = _build_keyword(d, kid, spec, created, deleted, rng, tags, pivot_range=(t, t + CHURN_MAX_LIFE))
        state.churn_cache[key] = k
        while len(state.churn_cache) > _CHURN_CACHE_SIZE:
            state.churn_cache.popitem(last=False)
    override = d.churn_overrides.get(j)
    if override is not None and k.deleted is not None and override < k.deleted:
        k.deleted = override
    return k


def churn_range(config: WorldConfig, day: date) -> range:
    """Indexes of the churn keywords that may exist on ``day`` (a superset: check ``exists``)."""
    t = (day - config.start_date).days
    lo = (t - CHURN_MAX_LIFE - CHURN_SPACING_DAYS) // CHURN_SPACING_DAYS
    return range(lo, t // CHURN_SPACING_DAYS + 1)


def add_runtime_keyword(state: WorldState, d: Domain, spec: KeywordSpec, day: date) -> Keyword:
    """Track ``spec`` on ``d`` from ``day`` on (no tags, ``createdAt`` the current UTC time of ``day``)."""
    seed = state.config.seed
    idx = len(d.runtime)
    kid = make_id(seed, K_RUNTIME_KW, d.account_index, d.index, idx)
    rng = random.Random(hash64("runtime", seed, kid))
    now = datetime.now(UTC)
    created_at = A.timestamp(datetime.combine(day, now.time()))
    t = (day - state.config.start_date).days
    tags = state.accounts[d.account_index].tags
    k = _build_keyword(d, kid, spec, day, None, rng, tags, pivot_range=(t, t + 60), created_at=created_at)
    k = replace(k, tag_ids=())  # created through the API: no tags yet
    d.runtime.append(k)
    state.runtime_by_id[kid] = k
    state.kw_index[kid] = (d, k)
    d.version += 1
    return k


def _build_keyword(d, kid, spec: KeywordSpec, created, deleted, rng, tags, *, pivot_range, created_at=None):
    r = rng.random()
    if r < 0.45:
        base = 1 + 39 * rng.random() ** 1.5
    elif r < 0.80:
        base = 30 + 55 * rng.random()
    else:
        base = 85 + 45 * rng.random()
    t = rng.random()
    trend = 1 if t < 0.07 else 2 if t < 0.14 else 0
    if trend:
        base = 3 + 60 * rng.random()
    u = rng.random()
    url_kind = 0 if u < 0.80 else 1 if u < 0.88 else 2 if u < 0.94 else 3
    slug = _slug(spec.word)
    root = f"https://{d.host}/"
    url_a = root if url_kind == 1 else f"{root}{slug}/"
    url_b = f"{root}blog/{slug}/" if url_kind == 2 else f"{root}products/{slug}/"
    n_tags = rng.choice((0, 1, 1, 2)) if tags else 0
    tag_ids = tuple(sorted(t[0] for t in rng.sample(tags, min(n_tags, len(tags)))))
    return Keyword(
        id=kid,
        int_id=int(kid.replace("-", ""), 16),
        word=spec.word,
        engine=spec.search_engine,
        device=spec.device,
        location_code=spec.location_code,
        language_code=spec.language_code,
        frequency=spec.frequency,
        tag_ids=tag_ids,
        search_volume=int(round(10 * math.exp(rng.random() * 9.5), -1)) or 10,
        created=created,
        created_at=created_at or _midnight(created),
        deleted=deleted,
        base=base,
        out_level=104 + 25 * rng.random(),
        trend=trend,
        pivot=rng.randint(*pivot_range),
        amp=6 * rng.random(),
        period=20 + 70 * rng.random(),
        phase=100 * rng.random(),
        url_kind=url_kind,
        url_a=url_a,
        url_b=url_b,
        url_change=rng.randint(*pivot_range),
    )


@functools.lru_cache(maxsize=4096)
def _midnight(day: date) -> str:
    return A.timestamp(day)


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split())


# ---------------------------------------------------------------- catalogue access


def _locale_row(state: WorldState, engine: str, key: str) -> dict:
    row = state.locale_rows.get((engine, key))
    if row is None:
        row = _catalogue_location(engine, V.NYC_CODE if key == "NYC" else key, city=key == "NYC")
        state.locale_rows[(engine, key)] = row
    return row


def _catalogue_location(engine: str, key: str, *, city: bool) -> dict:
    from rank_pipeline.sandbox import catalogues

    row = catalogues.location_by_code(engine, key) if city else catalogues.country_location(engine, key)
    if row is None:
        raise LookupError(f"the {engine} location catalogue has no row for {key!r}; the world needs it")
    return row
