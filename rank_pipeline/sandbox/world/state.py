"""What a world holds at runtime (:class:`WorldState`): accounts, domains and keywords generated so far, the
writes made through it, and caches. The job modules are functions over it; hold ``WorldState.lock``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import NamedTuple

from rank_pipeline.sandbox.world.config import Account, AccountSpec, WorldConfig

__all__ = ["AccountState", "Domain", "Keyword", "WorldState", "WriteEvent"]


@dataclass(slots=True)
class Keyword:
    """One keyword and the parameters of its positions and ranking URLs (docs/concepts/sandbox.md, "Keywords")."""

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
class Domain:
    """One domain; its base keywords are generated on first use (:func:`.generation.ensure_base`)."""

    id: str
    account_index: int
    index: int
    name: str
    host: str
    match_type: str
    project_name: str
    n_base: int
    base: list[Keyword] | None = None  # lazily generated
    life: list[tuple[date, date | None]] | None = None  # (created, deleted) per base keyword, lazily
    created_days: list[date] | None = None  # sorted creation days of base keywords
    deleted_days: list[date] | None = None  # sorted deletion days of base keywords
    runtime: list[Keyword] = field(default_factory=list)
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
class AccountState:
    """One account: its spec, what the API sees, its domains and its tags ``(id, name, color)``."""

    spec: AccountSpec
    account: Account
    index: int
    domains: list[Domain]
    tags: list[tuple[str, str, str]]  # (id, name, color)


@dataclass
class WorldState:
    """The world's runtime state: ``accounts`` (config order), ``pinned_today`` (None: :attr:`today` is the real
    UTC date, read at each use), ``records`` (keyword lists by
    ``("kw", domain, day, version)``), ``locale_rows``, ``runtime_by_id``, ``churn_cache``, ``kw_index`` and
    ``writes`` (the shifting-records fault's).
    """

    config: WorldConfig
    pinned_today: date | None
    accounts: list[AccountState]
    lock: threading.RLock = field(default_factory=threading.RLock)
    records: OrderedDict[tuple, list[dict]] = field(default_factory=OrderedDict)
    locale_rows: dict[tuple[str, str], dict] = field(default_factory=dict)
    runtime_by_id: dict[str, Keyword] = field(default_factory=dict)
    churn_cache: OrderedDict[tuple[str, int], Keyword] = field(default_factory=OrderedDict)
    kw_index: dict[str, tuple[Domain, Keyword]] = field(default_factory=dict)
    writes: list[WriteEvent] = field(default_factory=list)
    by_account_id: dict[str, AccountState] = field(init=False)
    by_domain_id: dict[str, Domain] = field(init=False)

    def __post_init__(self) -> None:
        self.by_account_id = {s.account.account_id: s for s in self.accounts}
        self.by_domain_id = {d.id: d for s in self.accounts for d in s.domains}

    @property
    def today(self) -> date:
        """The simulated "today": ``pinned_today``, else the real UTC date now (a served sandbox that runs past
        midnight tells the new day, as the vendor would)."""
        return self.pinned_today or datetime.now(UTC).date()

    def domain_of(self, account_id: str, domain_id: str) -> Domain | None:
        """The domain ``domain_id`` if it is a domain of the account ``account_id``, else None."""
        d = self.by_domain_id.get(domain_id)
        if d is None or self.accounts[d.account_index].account.account_id != account_id:
            return None
        return d
