"""What a world is made of (:class:`WorldConfig`, :class:`AccountSpec`, :class:`LimitChange`) and the values it
hands out and takes (:class:`Account`, :class:`KeywordSpec`); deterministic in ``(seed, day)``.

What each setting does: docs/concepts/sandbox.md, "The world".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

__all__ = ["Account", "AccountSpec", "KeywordSpec", "LimitChange", "WorldConfig"]


@dataclass(frozen=True)
class LimitChange:
    """A plan limit change: from ``day`` on, the account's limits are these."""

    day: date
    keyword_limit: int
    data_row_limit: int


@dataclass(frozen=True)
class AccountSpec:
    """One account: ``keywords_per_domain`` (inclusive range of base keywords), ``keyword_limit`` and
    ``data_row_limit`` until ``limit_change.day``, ``api_key`` (None: from the seed), ``keys`` valid at once,
    ``data_row_resets`` (ascending days the data-row cycle restarts; empty: the 1st of each month).
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
    data_row_resets: tuple[date, ...] = ()


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
    """What the world is made of, deterministic in ``(seed, day)``; ``start_date`` anchors every day index. The
    default is the small demo world (3 accounts, 3-5 domains each, 20-120 keywords per domain).
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
    """One keyword to create, normalised by the handler: ``search_engine``, ``device``, ``frequency`` lower case;
    ``location_code`` and ``language_code`` catalogue codes of that engine (strings); ``word``.
    """

    word: str
    search_engine: str
    device: str
    location_code: str
    language_code: str
    frequency: str = "daily"

    def combination(self) -> tuple[str, str, str, str, str]:
        """``(word, engine, device, location code, language code)``: unique among a domain's keywords."""
        return (self.word, self.search_engine, self.device, self.location_code, self.language_code)
