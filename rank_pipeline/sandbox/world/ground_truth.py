"""The :class:`World`: the clock and the accounts' keys, delegating every read and write to its job modules.

What it answers: docs/concepts/sandbox.md, "The world".
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import date, datetime

from rank_pipeline.sandbox.world import quota, rendering, writes
from rank_pipeline.sandbox.world.config import Account, KeywordSpec, WorldConfig
from rank_pipeline.sandbox.world.generation import make_accounts
from rank_pipeline.sandbox.world.positions import position, ranking_url
from rank_pipeline.sandbox.world.queries import existing_keywords, find_keyword
from rank_pipeline.sandbox.world.state import WorldState, WriteEvent

__all__ = ["World"]


class World:
    """The seeded world behind the sandbox API: ``World(config=WorldConfig(), today=None)`` (None: the real UTC
    date at each use, so a served sandbox passes midnight as the vendor does, until :meth:`set_today`); readers
    take ``day=None`` as :attr:`today`; thread-safe; records are fresh dicts
    (docs/concepts/sandbox.md, "The world").
    """

    def __init__(self, config: WorldConfig | None = None, today: date | None = None):
        self.config = config if config is not None else WorldConfig()
        self._state = WorldState(self.config, today, make_accounts(self.config))
        accounts = self._state.accounts
        self._by_key = {k: s for s in accounts for k in s.account.api_keys}
        self._key_position = {k: (s.account.name, n) for s in accounts
                              for n, k in enumerate(s.account.api_keys, start=1)}
        self._revoked: set[str] = set()
        self._by_name = {s.account.name: s for s in accounts}

    @property
    def writes(self) -> list[WriteEvent]:
        """Outside writes of the shifting-records fault, in order (the referee of completeness tests)."""
        return self._state.writes

    # ---------------------------------------------------------------- clock and accounts

    @property
    def today(self) -> date:
        """The simulated "today" (UTC date): the one set, else the real one now."""
        return self._state.today

    def set_today(self, day: date) -> None:
        """Move the simulated clock to ``day`` (any direction)."""
        if not isinstance(day, date) or isinstance(day, datetime):
            raise TypeError(f"set_today needs a datetime.date, got {day!r}")
        self._state.pinned_today = day

    @property
    def accounts(self) -> list[Account]:
        """All accounts, in config order (including those without API access)."""
        return [s.account for s in self._state.accounts]

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
        with self._state.lock:
            was_valid = keys[position - 1] not in self._revoked
            self._revoked.add(keys[position - 1])
        return was_valid

    # ---------------------------------------------------------------- readers

    def domains(self, account_id: str, day: date | None = None) -> list[dict]:
        """Domain records of an account (all days; an unknown account has none)."""
        account = self._state.by_account_id.get(account_id)
        return [rendering.domain_record(d) for d in account.domains] if account else []

    def domain(self, account_id: str, domain_id: str, day: date | None = None) -> dict | None:
        """The domain record if ``domain_id`` is a domain of ``account_id``, else None (-> 404)."""
        d = self._state.domain_of(account_id, domain_id)
        return rendering.domain_record(d) if d is not None else None

    def keywords(self, domain_id: str, day: date | None = None, *, shared: bool = False) -> list[dict]:
        """Keyword records of a domain existing on ``day``, in list order (docs/concepts/sandbox.md).

        Position and URL are those of ``day``. An unknown domain id gives an empty list. Fresh copies, or
        with ``shared`` the world's cached records, which the caller must not change.
        """
        day = day or self._state.today
        d = self._state.by_domain_id.get(domain_id)
        return rendering.keyword_records(self._state, d, day, shared=shared) if d is not None else []

    def keyword_ids(self, domain_id: str, day: date | None = None) -> list[str]:
        """Ids of the keywords existing on ``day`` (cheaper than :meth:`keywords`)."""
        d = self._state.by_domain_id.get(domain_id)
        if d is None:
            return []
        with self._state.lock:
            return [k.id for k in existing_keywords(self._state, d, day or self._state.today)]

    def competitors(self, domain_id: str, day: date | None = None) -> list[dict]:
        """Competitor records of a domain existing on ``day``, ordered by creation then id."""
        day = day or self._state.today
        d = self._state.by_domain_id.get(domain_id)
        return rendering.competitor_records(self._state, d, day) if d is not None else []

    def tags(self, account_id: str, day: date | None = None) -> list[dict]:
        """Tag records of an account (they exist on every day)."""
        account = self._state.by_account_id.get(account_id)
        return rendering.tag_records(self._state, account) if account is not None else []

    def usage(self, account_id: str, day: date | None = None) -> dict:
        """The ``data`` object of GET /v1/account/usage on ``day`` (docs/concepts/sandbox.md, "Usage").

        KeyError for an unknown account id.
        """
        return quota.usage(self._state, account_id, day or self._state.today)

    def data_row_cycle_start(self, account_id: str, day: date | None = None) -> date:
        """The first day of the account's data-row cycle holding ``day``: the last usage reset on or before
        it (docs/concepts/sandbox.md, "Usage"). KeyError for an unknown account id."""
        account = self._state.by_account_id[account_id]
        return quota.data_row_cycle_start(account.spec, self._state.config.start_date, day or self._state.today)

    def keyword(self, keyword_id: str, day: date | None = None) -> dict | None:
        """One keyword record on ``day`` (None if unknown or not existing that day)."""
        day = day or self._state.today
        found = find_keyword(self._state, keyword_id)
        if found is None or not found[1].exists(day):
            return None
        return rendering.keyword_record(self._state, found[0], found[1], day)

    def position(self, keyword_id: str, day: date) -> int | None:
        """Ground-truth organic position on ``day``: 1..100, None if not ranking in the top 100, not
        existing on ``day`` or unknown. Pure in (seed, keyword, day)."""
        found = find_keyword(self._state, keyword_id)
        if found is None or not found[1].exists(day):
            return None
        return position(self.config, found[1], day)

    def ranking_url(self, keyword_id: str, day: date) -> str | None:
        """Ground-truth ranking URL on ``day``; None exactly when :meth:`position` is None."""
        found = find_keyword(self._state, keyword_id)
        if found is None or not found[1].exists(day):
            return None
        k = found[1]
        return ranking_url(self.config, k, day) if position(self.config, k, day) is not None else None

    # ---------------------------------------------------------------- writes

    def create_keywords(self, account_id: str, domain_id: str, entries: Iterable[KeywordSpec]) -> list[dict]:
        """Keyword create, all-or-nothing (spec "Keyword create: body" rule 3): one record per distinct combination
        of ``entries`` (request order); a combination already tracked is returned, not created, and costs nothing.

        Raises UnknownDomain (not this account's) or QuotaExceeded (nothing created).
        """
        return writes.create_keywords(self._state, account_id, domain_id, entries)

    def delete_keyword(self, domain_id: str, keyword_id: str) -> bool:
        """Stop tracking a keyword from today on (it existed up to yesterday). True if it existed today.

        Used by the shifting-records fault; the positions of other keywords are unaffected.
        """
        return writes.delete_keyword(self._state, domain_id, keyword_id)

    def insert_keyword(self, domain_id: str, rng: random.Random) -> dict:
        """Track one new random keyword on a domain from today on, bypassing quota (an outside write
        for the shifting-records fault). Returns its record."""
        return writes.insert_keyword(self._state, domain_id, rng)
