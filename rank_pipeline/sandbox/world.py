"""The sandbox's seeded world: accounts, domains, keywords, competitors, tags, usage and positions.

Everything here is ground truth that the marts are tested against. The world is a pure function of
``(WorldConfig, day)`` plus the writes made through it at runtime (:meth:`World.create_keywords`,
:meth:`World.delete_keyword`); two ``World`` objects built from the same config answer the same.
Records are JSON:API dicts exactly as served (shapes in :mod:`rank_pipeline.sandbox.assumptions`).

Time
----
``day`` is a UTC calendar date. ``t = (day - config.start_date).days`` is the day index used by every
formula below. :attr:`World.today` is the simulated "today" (default: the real UTC date), settable
with :meth:`World.set_today` (the control endpoint ``PUT /_sandbox/today``).

Accounts and plans
------------------
One :class:`Account` per :class:`AccountSpec`. The demo world (``WorldConfig()``) has three:
``acme`` and ``globex`` with API access and ``initech`` whose plan lacks it (its requests get 403).
``globex`` has a *limit change*: its plan limits rise on ``start_date + 10`` days. API keys are
derived from the seed (32 hex characters) unless the spec gives one.

Domains
-------
``AccountSpec.domains`` domains per account, existing on every day. Attributes are the spec's:
``domain``, ``host`` (``www.`` + domain), ``matchType`` (from ``assumptions.MATCH_TYPES``),
``projectName``. Listed in a fixed order (creation order).

Keywords
--------
Each domain has ``n`` *base* keywords (``n`` drawn per domain from ``AccountSpec.keywords_per_domain``),
generated lazily from a per-domain seeded RNG the first time the domain is needed, then cached:

* combination: word, engine (google 60 %, bing 25 %, yahoo 15 %), device (desktop/mobile),
  location (country rows US 2840, GB 2826, DE 2276, FR 2250 and the city row New York City 6128581,
  taken from :mod:`~rank_pipeline.sandbox.catalogues`), language (en; es for some US rows; de; fr).
  The combination (word, engine, device, location code, language code) is unique on a domain.
* ``createdAt``: 75 % of base keywords are created in the 365 days before ``start_date``, 25 % in the
  365 days from it. A keyword exists from its creation day on.
* deletion: 8 % of base keywords are deleted 30..700 days after creation; from that day on they no
  longer exist (they leave the list, their position is None).
* *churn* keywords: besides the base set, each domain creates one short-lived keyword about every
  ``CHURN_SPACING_DAYS`` days, for ever (before and after ``start_date``), each living 3..30 days.
  So the keyword count of a domain changes on most days, on any date, with O(1) work per day.
* runtime keywords: created by :meth:`World.create_keywords` (keyword create) and by the
  shifting-records fault; they exist from the simulated day they were created on.

The keyword list of a domain is ordered by (keyword text, engine, device, location code, language
code, id), so a keyword inserted between page requests moves the later records to later pages.

Positions (``World.position(keyword_id, day)``): 1..100, or None when the keyword does not rank in
the top 100 or does not exist on ``day``. A pure O(1) function of (seed, keyword, day)::

    level(t) = base                                  (most keywords, base 1..130, skewed to the top)
             | out -> in after pivot (ramp of 14 days)   "entering" keywords (7 %)
             | in -> out after pivot (ramp of 14 days)   "dropping" keywords (7 %)
    raw(t)   = level(t) + amp * sin(2 pi (t + phase) / period) + noise(t)
    noise(t) = integer in -2..2 from a hash of (seed, keyword, t)
    position = max(1, round(raw)); None if position > 100

Keywords whose base lies near 100 enter and leave the top 100 from day to day; "entering" and
"dropping" keywords cross it once, on their pivot day (t in 0..365 for base keywords).

Ranking URL (``World.ranking_url(keyword_id, day)``): None exactly when the position is None, else
one of: the keyword's single URL (80 %); the homepage ``https://<host>/`` (8 %, shared by many
keywords); two URLs that flip by a hash of (keyword, day) (6 %, *cannibalisation*); a URL that
changes once, on a hashed day (6 %). Keyword records show ``results.organic.position`` and ``url``
of the day asked for, ``capturedAt`` at 06:00 UTC that day (regardless of ``frequency``).

Competitors
-----------
2-4 *base* competitors per domain exist from before ``start_date``; one more is added on day index
``t_add`` in 1..60 (so the set grows on that day), and on half the domains one base competitor is
removed on day index 61..180. Ordered by creation, then id.

Tags
----
3-6 account-level tags, all created before ``start_date``; every keyword carries 0-2 ``tagIds`` of
its account's tags.

Usage (``World.usage(account_id, day)``, the ``data`` of GET /v1/account/usage)
-------------------------------------------------------------------------------
* ``keywords.usage`` = number of the account's keywords existing on ``day``;
* ``dataRows.usage`` = the sum of the daily keyword counts from the first of ``day``'s month to
  ``day`` inclusive (keyword-days), so it drops back on the 1st of each month (a *usage reset*);
* ``limit`` = the plan's limit on that day (an :class:`LimitChange` switches it from its day on);
* ``remaining`` = ``max(0, limit - usage)``; ``apiEnabled`` = the plan's API access.

Keyword create (:meth:`World.create_keywords`) checks one keyword and one data row per new
combination against ``usage(account_id, today)``; over quota it raises :class:`QuotaExceeded` and
creates nothing. Combinations the domain already tracks are returned as they are and cost nothing.

Identifiers are UUID strings (version 4 layout) whose low bits encode what they name, and whose high
bits are a hash of the seed: ids of another seed or random UUIDs name nothing here.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import math
import random
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import NamedTuple

from rank_pipeline.errors import RankPipelineError
from rank_pipeline.sandbox import assumptions as A

__all__ = [
    "Account",
    "AccountSpec",
    "KeywordSpec",
    "LimitChange",
    "QuotaExceeded",
    "UnknownDomain",
    "World",
    "WriteEvent",
    "WorldConfig",
]

CHURN_SPACING_DAYS = 4
"""Mean number of days between two churn keywords of one domain."""
_CHURN_MAX_LIFE = 30

# id kinds (6 bits in the UUID)
_K_ACCOUNT, _K_DOMAIN, _K_BASE_KW, _K_CHURN_KW, _K_RUNTIME_KW, _K_COMPETITOR, _K_TAG = 1, 2, 3, 4, 5, 6, 7
_INDEX_OFFSET = 1 << 31  # churn indexes may be negative


# --------------------------------------------------------------------------------------------------
# configuration


@dataclass(frozen=True)
class LimitChange:
    """A plan limit change: from ``day`` on, the account's limits are these."""

    day: date
    keyword_limit: int
    data_row_limit: int


@dataclass(frozen=True)
class AccountSpec:
    """One account of the world.

    ``keywords_per_domain`` is an inclusive (min, max) range of base keywords per domain.
    ``keyword_limit`` and ``data_row_limit`` are the plan's allowances (spec, "Limits") until
    ``limit_change.day``. ``api_key`` None derives a key from the seed and the name. ``keys`` is how
    many valid keys the account holds at once (spec "Authentication" 5: create the new key, switch,
    delete the old); keys after the first are derived from the seed, the name and their position.
    """

    name: str
    plan: str = "pro"
    api_enabled: bool = True
    domains: int = 4
    keywords_per_domain: tuple[int, int] = (20, 120)
    keyword_limit: int = 2_000
    data_row_limit: int = 60_000
    limit_change: LimitChange | None = None
    api_key: str | None = None
    keys: int = 1


_DEMO_START = date(2026, 1, 1)


def _demo_accounts(start: date) -> tuple[AccountSpec, ...]:
    return (
        AccountSpec("acme", plan="pro", domains=4, keyword_limit=1_500, data_row_limit=40_000),
        AccountSpec(
            "globex",
            plan="business",
            domains=5,
            keyword_limit=1_200,
            data_row_limit=30_000,
            limit_change=LimitChange(start + timedelta(days=10), 2_500, 75_000),
        ),
        AccountSpec("initech", plan="starter", api_enabled=False, domains=3, keyword_limit=500, data_row_limit=15_000),
    )


@dataclass(frozen=True)
class WorldConfig:
    """What the world is made of; the world is deterministic in ``(seed, day)`` for one config.

    ``start_date`` anchors every day index (see the module docstring). The default is the small demo
    world (3 accounts, 3-5 domains each, 20-120 keywords per domain).
    """

    seed: int = 7
    accounts: tuple[AccountSpec, ...] = field(default_factory=lambda: _demo_accounts(_DEMO_START))
    start_date: date = _DEMO_START

    @classmethod
    def scaled(
        cls,
        domains: int = 300,
        keywords_per_domain: int = 1_000,
        *,
        accounts: int = 1,
        seed: int = 7,
        start_date: date = _DEMO_START,
    ) -> WorldConfig:
        """A big world for benchmarks: ``accounts`` API accounts named ``bench1``.. each with
        ``domains`` domains of exactly ``keywords_per_domain`` base keywords and ample limits."""
        specs = tuple(
            AccountSpec(
                f"bench{i + 1}",
                plan="enterprise",
                domains=domains,
                keywords_per_domain=(keywords_per_domain, keywords_per_domain),
                keyword_limit=10 * domains * keywords_per_domain + 10_000,
                data_row_limit=400 * domains * keywords_per_domain + 400_000,
            )
            for i in range(accounts)
        )
        return cls(seed=seed, accounts=specs, start_date=start_date)


@dataclass(frozen=True)
class Account:
    """An account as the API sees it (docs/concepts/architecture.md, "Sandbox")."""

    name: str
    account_id: str
    api_key: str
    api_enabled: bool
    api_keys: tuple[str, ...] = ()
    """Every key of the account in list order (position 1 is ``api_key``), revoked ones included."""


@dataclass(frozen=True)
class KeywordSpec:
    """One keyword to create: a (word, engine, device, location, language) combination.

    Values are already validated and normalised by the keyword-create handler: ``search_engine`` and
    ``device`` lower case, ``location_code`` a catalogue geo-target id of that engine (string),
    ``language_code`` a catalogue language code of that engine, ``frequency`` lower case.
    """

    word: str
    search_engine: str
    device: str
    location_code: str
    language_code: str
    frequency: str = "daily"


class QuotaExceeded(RankPipelineError):
    """A keyword create would exceed the plan's keyword or data-row allowance (spec: 402 ``over_quota``).

    ``resource`` is ``"keywords"`` or ``"dataRows"``; ``requested`` the number of new combinations;
    ``remaining`` what the allowance still holds today. Nothing was created.
    """

    def __init__(self, resource: str, requested: int, remaining: int):
        self.resource, self.requested, self.remaining = resource, requested, remaining
        label = "keyword" if resource == "keywords" else "data-row"
        super().__init__(
            f"Creating {requested} keyword(s) would exceed the plan's {label} allowance "
            f"({remaining} remaining); nothing was created. Remove keywords or upgrade the plan."
        )


class UnknownDomain(RankPipelineError, LookupError):
    """The domain id does not name a domain of that account (the API answers 404 ``Domain not found``)."""


# --------------------------------------------------------------------------------------------------
# hashing and ids


def _hash64(*parts: object) -> int:
    data = "\x1f".join(map(str, parts)).encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def _make_id(seed: int, kind: int, account: int, domain: int, index: int) -> str:
    stored = index + _INDEX_OFFSET
    h = _hash64("id", seed, kind, account, domain, stored)
    high = ((h >> 16) << 16) | (0x4 << 12) | (h & 0x0FFF)  # 48 hash bits | version 4 | 12 hash bits
    low = (0b10 << 62) | (kind << 56) | (account << 48) | (domain << 32) | stored
    h = f"{(high << 64) | low:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _parse_id(seed: int, text: str) -> tuple[int, int, int, int] | None:
    """(kind, account, domain, index) of an id this world made, else None."""
    try:
        value = uuid.UUID(str(text)).int
    except (ValueError, TypeError, AttributeError):
        return None
    low = value & ((1 << 64) - 1)
    if low >> 62 != 0b10:
        return None
    kind, account, domain = (low >> 56) & 0x3F, (low >> 48) & 0xFF, (low >> 32) & 0xFFFF
    index = (low & 0xFFFFFFFF) - _INDEX_OFFSET
    if _make_id(seed, kind, account, domain, index) != str(uuid.UUID(int=value)):
        return None
    return kind, account, domain, index


# --------------------------------------------------------------------------------------------------
# vocabulary


_ADJECTIVES = (
    "best", "cheap", "organic", "wireless", "waterproof", "vintage", "electric", "kids", "mens", "womens",
    "lightweight", "portable", "smart", "eco", "handmade", "premium", "discount", "used", "custom", "mini",
    "large", "outdoor", "indoor", "professional", "budget", "luxury", "compact", "quiet", "fast", "durable",
)
_NOUNS = (
    "running shoes", "coffee maker", "headphones", "backpack", "desk chair", "yoga mat", "water bottle",
    "rain jacket", "standing desk", "bike helmet", "air fryer", "phone case", "sunglasses", "tent",
    "sleeping bag", "blender", "vacuum cleaner", "office lamp", "kettle", "watch", "sneakers", "laptop bag",
    "espresso machine", "hiking boots", "winter coat", "dog bed", "garden hose", "toaster", "mattress",
    "notebook", "bookshelf", "pillow", "rug", "bluetooth speaker", "tablet stand", "keyboard", "monitor",
    "mouse pad", "wallet", "umbrella",
)
_SUFFIXES = ("", "", "", " online", " near me", " reviews", " sale", " 2026", " deals", " for sale")
# churn keywords (short-lived) carry one of these topics, so they never repeat a base combination
_CHURN_TOPICS = ("gift ideas", "how to choose", "comparison", "black friday", "trends", "vs", "guide", "tips")
_COMPETITORS = (
    "rivalgoods", "shopzilla", "bestbuyz", "megamart", "trendhub", "dealfinder", "outfitco", "gearpoint",
    "homeessentials", "urbanstore", "pricewise", "buyrite", "nordshop", "zenmarket", "brightcart",
)
_TAGS = (
    ("brand", "#e4572e"), ("non-brand", "#29335c"), ("product", "#f3a712"), ("blog", "#a8c686"),
    ("local", "#669bbc"), ("high-intent", "#8e44ad"), ("seasonal", "#16a085"), ("competitor-gap", "#c0392b"),
)
_TLDS = ("com", "co.uk", "de", "fr", "io", "net")

# (location key, language code, weight): "US" etc. resolve to the engine's country row; "NYC" is the
# city row New York City (geo-target id 6128581 in the catalogues)
_LOCALES = (("US", "en", 34), ("US", "es", 6), ("GB", "en", 20), ("DE", "de", 15), ("FR", "fr", 15), ("NYC", "en", 10))
_NYC_CODE = "6128581"
_ENGINES = (("google", 60), ("bing", 25), ("yahoo", 15))


_CUMULATIVE: dict[int, tuple[list[float], float]] = {}


def _weighted(rng: random.Random, options: Sequence[tuple]) -> tuple:
    """One of ``options`` (tuples whose last item is a weight), drawn with one ``rng.random()``."""
    cached = _CUMULATIVE.get(id(options))
    if cached is None:
        cumulative, total = [], 0.0
        for o in options:
            total += o[-1]
            cumulative.append(total)
        cached = _CUMULATIVE[id(options)] = (cumulative, total)
    cumulative, total = cached
    return options[min(bisect.bisect_right(cumulative, rng.random() * total), len(options) - 1)]


@functools.lru_cache(maxsize=4096)
def _midnight(day: date) -> str:
    return A.timestamp(day)


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split())


# --------------------------------------------------------------------------------------------------
# internal state


@dataclass(slots=True)
class _Keyword:
    id: str
    int_id: int
    word: str
    engine: str
    device: str
    location_code: str
    language_code: str
    frequency: str
    tag_ids: tuple[str, ...]
    search_volume: int
    created: date
    created_at: str
    deleted: date | None
    base: float  # level while stable / "in" level
    out_level: float  # level while out of the top 100 (entering/dropping)
    trend: int  # 0 stable, 1 entering, 2 dropping
    pivot: int
    amp: float
    period: float
    phase: float
    url_kind: int  # 0 single, 1 homepage, 2 flip, 3 change once
    url_a: str
    url_b: str
    url_change: int

    def combination(self) -> tuple[str, str, str, str, str]:
        return (self.word, self.engine, self.device, self.location_code, self.language_code)

    def exists(self, day: date) -> bool:
        return self.created <= day and (self.deleted is None or day < self.deleted)


@dataclass
class _Domain:
    id: str
    account_index: int
    index: int
    name: str
    host: str
    match_type: str
    project_name: str
    n_base: int
    base: list[_Keyword] | None = None  # lazily generated
    life: list[tuple[date, date | None]] | None = None  # (created, deleted) per base keyword, lazily
    created_days: list[date] | None = None  # sorted creation days of base keywords
    deleted_days: list[date] | None = None  # sorted deletion days of base keywords
    runtime: list[_Keyword] = field(default_factory=list)
    churn_overrides: dict[int, date] = field(default_factory=dict)  # churn index -> runtime deletion day
    version: int = 0


class WriteEvent(NamedTuple):
    """One outside write (:meth:`World.insert_keyword`, :meth:`World.delete_keyword`): when
    (``time.monotonic()`` seconds), which domain, ``op`` ``"insert"`` or ``"delete"``, which keyword."""

    at: float
    domain_id: str
    op: str
    keyword_id: str


@dataclass
class _AccountState:
    spec: AccountSpec
    account: Account
    index: int
    domains: list[_Domain]
    tags: list[tuple[str, str, str]]  # (id, name, color)


# --------------------------------------------------------------------------------------------------


class World:
    """The seeded world behind the sandbox API (docs/concepts/architecture.md, "Sandbox").

    ``World(config=WorldConfig(), today=None)``: ``today`` None is the real UTC date. All readers take
    ``day=None`` meaning :attr:`today`. Thread-safe: the HTTP server thread and test code may use one
    world at once. Records are returned as fresh dicts (callers may mutate them).
    """

    def __init__(self, config: WorldConfig | None = None, today: date | None = None):
        self.config = config if config is not None else WorldConfig()
        self._today = today if today is not None else datetime.now(UTC).date()
        self._lock = threading.RLock()
        self._cache: OrderedDict[tuple, list[dict]] = OrderedDict()
        self._locale_rows: dict[tuple[str, str], dict] = {}
        seed = self.config.seed
        self._accounts: list[_AccountState] = []
        if len(self.config.accounts) > 255:
            raise ValueError("a world holds at most 255 accounts")
        for ai, spec in enumerate(self.config.accounts):
            if spec.domains > 65_535:
                raise ValueError(f"account {spec.name!r}: at most 65535 domains")
            account_id = _make_id(seed, _K_ACCOUNT, ai, 0, 0)
            key = spec.api_key or hashlib.blake2b(f"key|{seed}|{spec.name}".encode(), digest_size=16).hexdigest()
            extra = tuple(hashlib.blake2b(f"key|{seed}|{spec.name}|{n}".encode(), digest_size=16).hexdigest()
                          for n in range(2, spec.keys + 1))
            account = Account(spec.name, account_id, key, spec.api_enabled, (key, *extra))
            rng = random.Random(_hash64("account", seed, ai))
            tag_names = rng.sample(_TAGS, rng.randint(3, 6))
            tags = [(_make_id(seed, _K_TAG, ai, 0, ti), n, c) for ti, (n, c) in enumerate(tag_names)]
            domains = [self._make_domain(ai, spec, di) for di in range(spec.domains)]
            self._accounts.append(_AccountState(spec, account, ai, domains, tags))
        self._by_key = {k: s for s in self._accounts for k in s.account.api_keys}
        self._key_position = {k: (s.account.name, n) for s in self._accounts
                              for n, k in enumerate(s.account.api_keys, start=1)}
        self._revoked: set[str] = set()
        self._by_account_id = {s.account.account_id: s for s in self._accounts}
        self._by_name = {s.account.name: s for s in self._accounts}
        self._by_domain_id = {d.id: d for s in self._accounts for d in s.domains}
        self._runtime_by_id: dict[str, _Keyword] = {}
        self._churn_cache: OrderedDict[tuple[str, int], _Keyword] = OrderedDict()
        self._kw_index: dict[str, tuple[_Domain, _Keyword]] = {}  # base and runtime keywords by id
        self.writes: list[WriteEvent] = []
        """Outside writes of the shifting-records fault, in order (the referee of completeness tests)."""

    # ---------------------------------------------------------------- clock and accounts

    @property
    def today(self) -> date:
        """The simulated "today" (UTC date)."""
        return self._today

    def set_today(self, day: date) -> None:
        """Move the simulated clock to ``day`` (any direction)."""
        if not isinstance(day, date) or isinstance(day, datetime):
            raise TypeError(f"set_today needs a datetime.date, got {day!r}")
        self._today = day

    @property
    def accounts(self) -> list[Account]:
        """All accounts, in config order (including those without API access)."""
        return [s.account for s in self._accounts]

    def account(self, name: str) -> Account:
        """The account named ``name``; KeyError names the known accounts."""
        try:
            return self._by_name[name].account
        except KeyError:
            raise KeyError(f"no account {name!r} in this world; known: {sorted(self._by_name)}") from None

    def account_by_key(self, api_key: str) -> Account | None:
        """The account one of whose valid (not revoked) keys is exactly ``api_key``, else None
        (spec, "Authentication")."""
        if api_key in self._revoked:
            return None
        state = self._by_key.get(api_key)
        return state.account if state else None

    def key_position(self, api_key: str) -> tuple[str, int] | None:
        """``(account name, 1-based position in its key list)`` of a key, revoked or not; else None."""
        return self._key_position.get(api_key)

    def revoke_key(self, name: str, position: int) -> bool:
        """Delete the account's key at ``position`` (1-based): from now on it gets 401. True if it
        was valid. KeyError/IndexError name what does not exist."""
        keys = self.account(name).api_keys
        if not 1 <= position <= len(keys):
            raise IndexError(f"account {name!r} has {len(keys)} key(s); position {position} does not exist")
        with self._lock:
            was_valid = keys[position - 1] not in self._revoked
            self._revoked.add(keys[position - 1])
        return was_valid

    # ---------------------------------------------------------------- readers

    def domains(self, account_id: str, day: date | None = None) -> list[dict]:
        """Domain records of an account (all days; an unknown account has none)."""
        state = self._by_account_id.get(account_id)
        return [self._domain_record(d) for d in state.domains] if state else []

    def domain(self, account_id: str, domain_id: str, day: date | None = None) -> dict | None:
        """The domain record if ``domain_id`` is a domain of ``account_id``, else None (-> 404)."""
        d = self._by_domain_id.get(domain_id)
        if d is None or self._accounts[d.account_index].account.account_id != account_id:
            return None
        return self._domain_record(d)

    def keywords(self, domain_id: str, day: date | None = None) -> list[dict]:
        """Keyword records of a domain existing on ``day``, in list order (see module docstring).

        Position and URL are those of ``day``. An unknown domain id gives an empty list.
        """
        day = day or self._today
        d = self._by_domain_id.get(domain_id)
        if d is None:
            return []
        with self._lock:
            key = ("kw", domain_id, day, d.version)
            cached = self._cache.get(key)
            if cached is None:
                kws = sorted(self._existing_keywords(d, day), key=lambda k: (*k.combination(), k.id))
                cached = [self._keyword_record(d, k, day) for k in kws]
                self._cache[key] = cached
                while len(self._cache) > 64:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(key)
        return _copy_records(cached)

    def competitors(self, domain_id: str, day: date | None = None) -> list[dict]:
        """Competitor records of a domain existing on ``day``, ordered by creation then id."""
        day = day or self._today
        d = self._by_domain_id.get(domain_id)
        if d is None:
            return []
        rows = [c for c in self._competitor_schedule(d) if c[3] <= day and (c[4] is None or day < c[4])]
        rows.sort(key=lambda c: (c[3], c[0]))
        return [
            A.competitor_record(cid, domain=dom, name=name, created_at=A.timestamp(created))
            for cid, dom, name, created, _ in rows
        ]

    def tags(self, account_id: str, day: date | None = None) -> list[dict]:
        """Tag records of an account (they exist on every day)."""
        state = self._by_account_id.get(account_id)
        if state is None:
            return []
        created = A.timestamp(self.config.start_date - timedelta(days=400))
        return [A.tag_record(tid, name=n, color=c, created_at=created) for tid, n, c in state.tags]

    def usage(self, account_id: str, day: date | None = None) -> dict:
        """The ``data`` object of GET /v1/account/usage on ``day`` (module docstring, "Usage").

        KeyError for an unknown account id.
        """
        day = day or self._today
        state = self._by_account_id.get(account_id)
        if state is None:
            raise KeyError(f"no account with id {account_id!r}")
        spec = state.spec
        kw_limit, row_limit = spec.keyword_limit, spec.data_row_limit
        if spec.limit_change is not None and day >= spec.limit_change.day:
            kw_limit, row_limit = spec.limit_change.keyword_limit, spec.limit_change.data_row_limit
        with self._lock:
            count_today = self._account_count(state, day)
            rows = 0
            d = day.replace(day=1)
            while d <= day:  # at most 31 days, O(domains * log n) each
                rows += count_today if d == day else self._account_count(state, d)
                d += timedelta(days=1)
        return A.usage_record(
            account_id,
            api_enabled=spec.api_enabled,
            keywords_usage=count_today,
            keywords_limit=kw_limit,
            data_rows_usage=rows,
            data_rows_limit=row_limit,
        )

    def keyword(self, keyword_id: str, day: date | None = None) -> dict | None:
        """One keyword record on ``day`` (None if unknown or not existing that day)."""
        day = day or self._today
        found = self._find_keyword(keyword_id)
        if found is None or not found[1].exists(day):
            return None
        return self._keyword_record(found[0], found[1], day)

    def position(self, keyword_id: str, day: date) -> int | None:
        """Ground-truth organic position on ``day``: 1..100, None if not ranking in the top 100, not
        existing on ``day`` or unknown. Pure in (seed, keyword, day)."""
        found = self._find_keyword(keyword_id)
        if found is None or not found[1].exists(day):
            return None
        return self._position(found[1], day)

    def ranking_url(self, keyword_id: str, day: date) -> str | None:
        """Ground-truth ranking URL on ``day``; None exactly when :meth:`position` is None."""
        found = self._find_keyword(keyword_id)
        if found is None or not found[1].exists(day):
            return None
        k = found[1]
        return self._url(k, day) if self._position(k, day) is not None else None

    # ---------------------------------------------------------------- writes

    def create_keywords(self, account_id: str, domain_id: str, entries: Iterable[KeywordSpec]) -> list[dict]:
        """Keyword create, all-or-nothing (spec, "Keyword create: body" rule 3).

        Returns one record per distinct combination in ``entries`` (request order), as of today: newly
        created ones, and ones the domain already tracks (not created again, no quota). Each new
        combination needs one keyword and one data row of ``usage(account_id, today)``'s remaining.

        Raises UnknownDomain (domain not of this account) or QuotaExceeded (nothing created).
        """
        d = self._by_domain_id.get(domain_id)
        if d is None or self._accounts[d.account_index].account.account_id != account_id:
            raise UnknownDomain(f"Domain {domain_id!r} is not a domain of account {account_id!r}")
        day = self._today
        with self._lock:
            existing = {k.combination(): k for k in self._existing_keywords(d, day)}
            plan: list[tuple[KeywordSpec | None, _Keyword | None]] = []
            seen: set[tuple] = set()
            new = 0
            for e in entries:
                combo = (e.word, e.search_engine, e.device, e.location_code, e.language_code)
                if combo in seen:
                    continue
                seen.add(combo)
                if combo in existing:
                    plan.append((None, existing[combo]))
                else:
                    plan.append((e, None))
                    new += 1
            if new:
                usage = self.usage(account_id, day)["attributes"]
                for resource in ("keywords", "dataRows"):
                    if new > usage[resource]["remaining"]:
                        raise QuotaExceeded(resource, new, usage[resource]["remaining"])
            out = []
            for spec, k in plan:
                if k is None:
                    k = self._add_runtime_keyword(d, spec, day)
                out.append(self._keyword_record(d, k, day))
            return out

    def delete_keyword(self, domain_id: str, keyword_id: str) -> bool:
        """Stop tracking a keyword from today on (it existed up to yesterday). True if it existed today.

        Used by the shifting-records fault; the positions of other keywords are unaffected.
        """
        day = self._today
        found = self._find_keyword(keyword_id)
        if found is None or found[0].id != domain_id or not found[1].exists(day):
            return False
        d, k = found
        with self._lock:
            kind = _parse_id(self.config.seed, k.id)[0]
            if kind == _K_BASE_KW:
                if k.deleted is not None:
                    d.deleted_days.pop(bisect.bisect_left(d.deleted_days, k.deleted))
                k.deleted = day
                bisect.insort(d.deleted_days, day)
            elif kind == _K_CHURN_KW:
                d.churn_overrides[_parse_id(self.config.seed, k.id)[3]] = day
            else:
                k.deleted = day
            d.version += 1
            self.writes.append(WriteEvent(time.monotonic(), domain_id, "delete", keyword_id))
        return True

    def insert_keyword(self, domain_id: str, rng: random.Random) -> dict:
        """Track one new random keyword on a domain from today on, bypassing quota (an outside write
        for the shifting-records fault). Returns its record."""
        d = self._by_domain_id[domain_id]
        with self._lock:
            existing = {k.combination() for k in self._existing_keywords(d, self._today)}
            for _ in range(100):
                spec = self._random_spec(rng)
                combo = (spec.word, spec.search_engine, spec.device, spec.location_code, spec.language_code)
                if combo not in existing:
                    break
            else:  # pragma: no cover - vocabulary is far larger than any domain
                spec = replace(spec, word=f"{spec.word} {rng.randrange(10**9)}")
            k = self._add_runtime_keyword(d, spec, self._today)
            self.writes.append(WriteEvent(time.monotonic(), domain_id, "insert", k.id))
            return self._keyword_record(d, k, self._today)

    def keyword_ids(self, domain_id: str, day: date | None = None) -> list[str]:
        """Ids of the keywords existing on ``day`` (cheaper than :meth:`keywords`)."""
        d = self._by_domain_id.get(domain_id)
        if d is None:
            return []
        with self._lock:
            return [k.id for k in self._existing_keywords(d, day or self._today)]

    # ---------------------------------------------------------------- internals: generation

    def _make_domain(self, ai: int, spec: AccountSpec, di: int) -> _Domain:
        seed = self.config.seed
        rng = random.Random(_hash64("domain", seed, ai, di))
        if spec.domains <= 6:
            suffixes = ("", "-shop", "-blog", "-store", "-outlet", "-deals")
            name = f"{spec.name}{suffixes[di]}.{_TLDS[rng.randrange(len(_TLDS))]}"
            project = f"{spec.name.title()} {(suffixes[di].strip('-') or 'main').title()}"
        else:
            name = f"{spec.name}-site{di + 1}.example"
            project = f"{spec.name.title()} site {di + 1}"
        lo, hi = spec.keywords_per_domain
        return _Domain(
            id=_make_id(seed, _K_DOMAIN, ai, di, 0),
            account_index=ai,
            index=di,
            name=name,
            host=f"www.{name}",
            match_type=A.MATCH_TYPES[rng.randrange(len(A.MATCH_TYPES))],
            project_name=project,
            n_base=rng.randint(lo, hi),
        )

    def _locale_row(self, engine: str, key: str) -> dict:
        row = self._locale_rows.get((engine, key))
        if row is None:
            row = _catalogue_location(engine, _NYC_CODE if key == "NYC" else key, city=key == "NYC")
            self._locale_rows[(engine, key)] = row
        return row

    def _random_spec(self, rng: random.Random) -> KeywordSpec:
        word = f"{rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)}{rng.choice(_SUFFIXES)}"
        engine = _weighted(rng, _ENGINES)[0]
        device = "desktop" if rng.random() < 0.55 else "mobile"
        loc_key, lang, _ = _weighted(rng, _LOCALES)
        frequency = "daily" if rng.random() < 0.85 else "weekly"
        return KeywordSpec(word, engine, device, self._locale_row(engine, loc_key)["code"], lang, frequency)

    def _ensure_life(self, d: _Domain) -> None:
        """Creation and deletion days of the base keywords: a cheap stream of its own, so counting
        keywords (usage) never needs the full records."""
        if d.life is not None:
            return
        start = self.config.start_date
        rng = random.Random(_hash64("life", self.config.seed, d.account_index, d.index))
        life = []
        for _ in range(d.n_base):
            offset = -rng.randint(1, 365) if rng.random() < 0.75 else rng.randint(0, 364)
            created = start + timedelta(days=offset)
            deleted = created + timedelta(days=rng.randint(30, 700)) if rng.random() < 0.08 else None
            life.append((created, deleted))
        d.life = life
        d.created_days = sorted(c for c, _ in life)
        d.deleted_days = sorted(x for _, x in life if x is not None)

    def _ensure_base(self, d: _Domain) -> None:
        if d.base is not None:
            return
        self._ensure_life(d)
        seed = self.config.seed
        rng = random.Random(_hash64("keywords", seed, d.account_index, d.index))
        tags = self._accounts[d.account_index].tags
        seen: set[tuple] = set()
        base: list[_Keyword] = []
        for i in range(d.n_base):
            for _ in range(50):
                spec = self._random_spec(rng)
                combo = (spec.word, spec.search_engine, spec.device, spec.location_code, spec.language_code)
                if combo not in seen:
                    break
            else:
                spec = replace(spec, word=f"{spec.word} {i}")
                combo = (spec.word, spec.search_engine, spec.device, spec.location_code, spec.language_code)
            seen.add(combo)
            created, deleted = d.life[i]
            kid = _make_id(seed, _K_BASE_KW, d.account_index, d.index, i)
            base.append(self._build_keyword(d, kid, spec, created, deleted, rng, tags, pivot_range=(0, 365)))
        d.base = base
        self._kw_index.update((k.id, (d, k)) for k in base)

    def _build_keyword(self, d, kid, spec: KeywordSpec, created, deleted, rng, tags, *, pivot_range, created_at=None):
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
        return _Keyword(
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

    def _churn_keyword(self, d: _Domain, j: int) -> _Keyword:
        key = (d.id, j)
        k = self._churn_cache.get(key)
        if k is None:
            seed, start = self.config.seed, self.config.start_date
            rng = random.Random(_hash64("churn", seed, d.account_index, d.index, j))
            created = start + timedelta(days=j * CHURN_SPACING_DAYS + rng.randrange(CHURN_SPACING_DAYS))
            deleted = created + timedelta(days=rng.randint(3, _CHURN_MAX_LIFE))
            spec = self._random_spec(rng)
            spec = replace(spec, word=f"{spec.word} {rng.choice(_CHURN_TOPICS)}")
            kid = _make_id(seed, _K_CHURN_KW, d.account_index, d.index, j)
            tags = self._accounts[d.account_index].tags
            t = (created - start).days
            k = self._build_keyword(d, kid, spec, created, deleted, rng, tags, pivot_range=(t, t + _CHURN_MAX_LIFE))
            self._churn_cache[key] = k
            while len(self._churn_cache) > 100_000:
                self._churn_cache.popitem(last=False)
        override = d.churn_overrides.get(j)
        if override is not None and override < k.deleted:
            k.deleted = override
        return k

    def _churn_range(self, day: date) -> range:
        t = (day - self.config.start_date).days
        lo = (t - _CHURN_MAX_LIFE - CHURN_SPACING_DAYS) // CHURN_SPACING_DAYS
        return range(lo, t // CHURN_SPACING_DAYS + 1)

    def _add_runtime_keyword(self, d: _Domain, spec: KeywordSpec, day: date) -> _Keyword:
        seed = self.config.seed
        idx = len(d.runtime)
        kid = _make_id(seed, _K_RUNTIME_KW, d.account_index, d.index, idx)
        rng = random.Random(_hash64("runtime", seed, kid))
        now = datetime.now(UTC)
        created_at = A.timestamp(datetime.combine(day, now.time()))
        t = (day - self.config.start_date).days
        tags = self._accounts[d.account_index].tags
        k = self._build_keyword(d, kid, spec, day, None, rng, tags, pivot_range=(t, t + 60), created_at=created_at)
        k = replace(k, tag_ids=())  # created through the API: no tags yet
        d.runtime.append(k)
        self._runtime_by_id[kid] = k
        self._kw_index[kid] = (d, k)
        d.version += 1
        return k

    # ---------------------------------------------------------------- internals: queries

    def _existing_keywords(self, d: _Domain, day: date) -> list[_Keyword]:
        self._ensure_base(d)
        out = [k for k in d.base if k.exists(day)]
        for j in self._churn_range(day):
            k = self._churn_keyword(d, j)
            if k.exists(day):
                out.append(k)
        out.extend(k for k in d.runtime if k.exists(day))
        return out

    def _domain_count(self, d: _Domain, day: date) -> int:
        self._ensure_life(d)
        n = bisect.bisect_right(d.created_days, day) - bisect.bisect_right(d.deleted_days, day)
        n += sum(1 for j in self._churn_range(day) if self._churn_keyword(d, j).exists(day))
        n += sum(1 for k in d.runtime if k.exists(day))
        return n

    def _account_count(self, state: _AccountState, day: date) -> int:
        return sum(self._domain_count(d, day) for d in state.domains)

    def _find_keyword(self, keyword_id: str) -> tuple[_Domain, _Keyword] | None:
        known = self._kw_index.get(keyword_id)
        if known is not None:
            return known
        parsed = _parse_id(self.config.seed, keyword_id)
        if parsed is None:
            return None
        kind, ai, di, index = parsed
        if ai >= len(self._accounts) or di >= len(self._accounts[ai].domains):
            return None
        d = self._accounts[ai].domains[di]
        with self._lock:
            if kind == _K_BASE_KW:
                self._ensure_base(d)
                return (d, d.base[index]) if 0 <= index < len(d.base) else None
            if kind == _K_CHURN_KW:
                return d, self._churn_keyword(d, index)
            if kind == _K_RUNTIME_KW:
                k = self._runtime_by_id.get(str(keyword_id).lower())
                return (d, k) if k is not None else None
        return None

    def _position(self, k: _Keyword, day: date) -> int | None:
        t = (day - self.config.start_date).days
        if k.trend == 0:
            level = k.base
        else:
            # fraction of the way from the first level to the second, over a 14-day ramp after pivot
            f = min(1.0, max(0.0, (t - k.pivot) / 14.0))
            first, second = (k.out_level, k.base) if k.trend == 1 else (k.base, k.out_level)
            level = first + (second - first) * f
        noise = _hash64("pos", self.config.seed, k.int_id, t) % 5 - 2
        raw = level + k.amp * math.sin(2 * math.pi * (t + k.phase) / k.period) + noise
        pos = max(1, int(round(raw)))
        return pos if pos <= 100 else None

    def _url(self, k: _Keyword, day: date) -> str:
        if k.url_kind == 2:
            t = (day - self.config.start_date).days
            return k.url_a if _hash64("url", self.config.seed, k.int_id, t) & 1 else k.url_b
        if k.url_kind == 3:
            return k.url_a if (day - self.config.start_date).days < k.url_change else k.url_b
        return k.url_a

    def _domain_record(self, d: _Domain) -> dict:
        return A.domain_record(d.id, domain=d.name, host=d.host, match_type=d.match_type, project_name=d.project_name)

    def _keyword_record(self, d: _Domain, k: _Keyword, day: date) -> dict:
        pos = self._position(k, day) if k.exists(day) else None
        location = _catalogue_location_by_code(k.engine, k.location_code)
        return A.keyword_record(
            k.id,
            keyword=k.word,
            search_engine=k.engine,
            device=k.device,
            location=location,
            language_code=k.language_code,
            frequency=k.frequency,
            tag_ids=k.tag_ids,
            search_volume=k.search_volume,
            created_at=k.created_at,
            position=pos,
            url=self._url(k, day) if pos is not None else None,
            captured=A.captured_at(day),
        )

    def _competitor_schedule(self, d: _Domain) -> list[tuple[str, str, str, date, date | None]]:
        """(id, domain, name, created, removed) of every competitor the domain ever has."""
        seed, start = self.config.seed, self.config.start_date
        rng = random.Random(_hash64("competitors", seed, d.account_index, d.index))
        n_base = rng.randint(2, 4)
        picks = rng.sample(_COMPETITORS, n_base + 1)
        out = []
        for ci, name in enumerate(picks):
            cid = _make_id(seed, _K_COMPETITOR, d.account_index, d.index, ci)
            if ci < n_base:
                created = start - timedelta(days=rng.randint(30, 400))
            else:
                created = start + timedelta(days=rng.randint(1, 60))
            out.append([cid, f"{name}.{_TLDS[ci % len(_TLDS)]}", name.title(), created, None])
        if rng.random() < 0.5:
            out[rng.randrange(n_base)][4] = start + timedelta(days=rng.randint(61, 180))
        return [tuple(c) for c in out]


def _copy_records(records: list[dict]) -> list[dict]:
    out = []
    for r in records:
        a = r["attributes"]
        attrs = dict(a)
        attrs["location"] = dict(a["location"])
        attrs["language"] = dict(a["language"])
        attrs["tagIds"] = list(a["tagIds"])
        attrs["results"] = {"organic": dict(a["results"]["organic"])}
        out.append({"id": r["id"], "type": r["type"], "attributes": attrs})
    return out


# --------------------------------------------------------------------------------------------------
# catalogue access (rank_pipeline.sandbox.catalogues, owned by the lookups work)


def _catalogue_location(engine: str, key: str, *, city: bool) -> dict:
    from rank_pipeline.sandbox import catalogues

    row = catalogues.location_by_code(engine, key) if city else catalogues.country_location(engine, key)
    if row is None:
        raise LookupError(f"the {engine} location catalogue has no row for {key!r}; the world needs it")
    return row


_LOCATION_CACHE: dict[tuple[str, str], dict] = {}


def _catalogue_location_by_code(engine: str, code: str) -> dict:
    row = _LOCATION_CACHE.get((engine, code))
    if row is None:
        from rank_pipeline.sandbox import catalogues

        row = catalogues.location_by_code(engine, code)
        if row is None:
            raise LookupError(f"the {engine} location catalogue has no row with code {code!r}")
        _LOCATION_CACHE[(engine, code)] = row
    return row
