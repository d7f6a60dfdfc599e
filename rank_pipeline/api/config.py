"""Client configuration and result records (``ClientConfig``, ``ListResult``, ``RequestStats``)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime

# The spec's "Limits" (300 per key and 600 per IP address per minute) and the concurrency default are
# declared with the rate settings (rank_pipeline.settings.RateSettings); the sandbox reads them here too.
from rank_pipeline.settings import (
    DEFAULT_MAX_IN_FLIGHT,
    SPEC_PER_IP_LIMIT,
    SPEC_PER_KEY_LIMIT,
    SPEC_WINDOW_S,
    RateSettings,
)

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "DEFAULT_MAX_RETRY_S", "SPEC_PER_IP_LIMIT", "SPEC_PER_KEY_LIMIT",
           "SPEC_WINDOW_S", "ClientConfig", "KeyStats", "ListResult", "RequestStats"]

DEFAULT_MAX_RETRY_S = 180.0
"""Default bound on the time one request may spend retrying, in seconds (:attr:`ClientConfig.max_retry_s`)."""


@dataclass(frozen=True)
class ClientConfig(RateSettings):
    """Settings of ``RankTrackerClient``; units in the names (``_s`` seconds, limits per window). The rate fields
    are :class:`rank_pipeline.settings.RateSettings`'s (:meth:`from_rates`); budgets: docs/concepts/pacing.md.

    Attributes:
        safety_margin: fraction of each ceiling left unused, in ``[0, 1)``.
        per_page: sent to list endpoints (spec maximum 1000; larger values are capped).
        timeout_s, connect_timeout_s: per-request timeout (read, write, pool); timeout to connect.
        max_attempts: attempts per request for 5xx, timeout, dropped connection, invalid JSON (not 429s).
        max_retry_s: bound on one request's total retrying, at least ``window_s``.
        max_passes, settle_budget_requests: caps on proving one list's ids: passes; requests (None:
            ``per_key_limit``).
        backoff_base_s, backoff_max_s: first transient-retry delay (doubling, jittered) and its cap.
        first_contact_attempts, first_contact_backoff_s: tries, and their spacing, while the host never answered.
    """

    safety_margin: float = 0.02
    per_page: int = 1000
    timeout_s: float = 30.0
    max_attempts: int = 6
    max_retry_s: float = DEFAULT_MAX_RETRY_S
    max_passes: int = 64
    settle_budget_requests: int | None = None
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    connect_timeout_s: float = 10.0
    first_contact_attempts: int = 2
    first_contact_backoff_s: float = 0.5

    @classmethod
    def from_rates(cls, rates: RateSettings, **overrides) -> ClientConfig:
        """The configuration of a run paced by ``rates`` (:class:`RateSettings`): its rate fields, ``max_retry_s``
        raised to one window when longer than :data:`DEFAULT_MAX_RETRY_S`, ``overrides`` winning. ValueError
        as the constructor.
        """
        values = {f.name: getattr(rates, f.name) for f in fields(RateSettings)}
        return cls(**{**values, "max_retry_s": max(DEFAULT_MAX_RETRY_S, rates.window_s), **overrides})

    def __post_init__(self) -> None:
        problems = []
        for name in ("per_key_limit", "per_ip_limit", "max_in_flight", "per_page", "max_attempts",
                     "max_passes", "first_contact_attempts"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("window_s", "timeout_s", "connect_timeout_s"):
            if not getattr(self, name) > 0:
                problems.append(f"{name} must be a positive number of seconds, got {getattr(self, name)}")
        for name in ("max_retry_s", "backoff_base_s", "backoff_max_s", "first_contact_backoff_s"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must not be negative, got {getattr(self, name)}")
        if self.settle_budget_requests is not None and self.settle_budget_requests < 1:
            problems.append(f"settle_budget_requests must be at least 1 (or None), got {self.settle_budget_requests}")
        if self.max_retry_s < self.window_s:
            problems.append(
                f"max_retry_s ({self.max_retry_s}) must be at least window_s ({self.window_s}): a 429's "
                "Retry-After can last up to one window, and the retry bound must be able to wait it out")
        if not 0.0 <= self.safety_margin < 1.0:
            problems.append(f"safety_margin must be in [0, 1), got {self.safety_margin}")
        if problems:
            raise ValueError("invalid ClientConfig: " + "; ".join(problems))


@dataclass(frozen=True)
class ListResult:
    """Outcome of one ``RankTrackerClient.list_records`` call (spec "Limits" rules 4-6):
    ``path``; ``total_count`` (the last ``X-Total-Count``, or None); ``delivered`` (the proven set's size, else
    every distinct id sunk); ``pages``, ``passes``, ``duplicates`` (seen twice in one pass); ``complete`` (the id
    set proven within the budget); ``excluded`` (sunk earlier, not in the proven set: the caller drops them);
    ``proven_at`` (client clock, s, when the proving pass began; None unless complete).
    """

    path: str
    total_count: int | None
    delivered: int
    pages: int
    passes: int
    complete: bool
    duplicates: int = 0
    excluded: tuple = ()
    proven_at: float | None = None


@dataclass
class KeyStats:
    """Counters of one key of a client's key pool, named by its 1-based ``position`` (never its value):
    ``requests`` sent, ``rate_limited`` (429s), ``rejected`` (401s), ``dropped`` (True once a 401 removed it).
    """

    position: int
    requests: int = 0
    rate_limited: int = 0
    rejected: int = 0
    dropped: bool = False


@dataclass
class RequestStats:
    """Counters of one client, updated as requests run: ``requests`` (HTTP attempts, retries and 429s included),
    ``retries`` (transient), ``rate_limited`` (429s), ``responses_by_status``, ``transport_errors`` (no response),
    ``pages``, ``records`` (sunk, new by id), ``bytes`` (bodies), ``started_at`` (UTC of the first request, or
    None), ``elapsed`` (seconds to the latest answer), ``keys`` (one ``KeyStats`` per key, in list order).
    """

    requests: int = 0
    responses_by_status: dict[int, int] = field(default_factory=dict)
    retries: int = 0
    rate_limited: int = 0
    transport_errors: int = 0
    pages: int = 0
    records: int = 0
    bytes: int = 0
    started_at: datetime | None = None
    elapsed: float = 0.0
    keys: list[KeyStats] = field(default_factory=list)

    @property
    def requests_per_minute(self) -> float:
        """Achieved request rate over ``elapsed`` (requests per 60 s); 0.0 before any time passed."""
        return self.requests * 60.0 / self.elapsed if self.elapsed > 0 else 0.0
