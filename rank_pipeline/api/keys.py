"""The key pool of one account (spec "Authentication" 5): a pacer per key, a 401 drops a key for the run
(named by position), ``AuthenticationError`` when none is left (docs/concepts/pacing.md, "An account's key pool").
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from .config import ClientConfig, KeyStats
from .errors import AuthenticationError, RankTrackerError, safe_url
from .pacing import SlidingWindowLimiter

logger = logging.getLogger("rank_pipeline.api")


def parse_keys(value: str | Sequence[str] | None) -> list[str]:
    """The keys of one account from a comma-separated list (``RANK_TRACKER_API_KEY=k1,k2``) or a sequence,
    stripped, empties dropped. Raises ValueError naming the positions (never values) of a repeated key.
    """
    items = value.split(",") if isinstance(value, str) else list(value or [])
    keys = [str(k).strip() for k in items if str(k).strip()]
    seen: dict[str, int] = {}
    for n, key in enumerate(keys, start=1):
        if key in seen:
            raise ValueError(f"the key list repeats a key (positions {seen[key]} and {n}); list each key once")
        seen[key] = n
    return keys


@dataclass(eq=False)
class KeySlot:
    """One key of the pool: its position (1-based, for messages), the key, its pacer and counters."""

    position: int
    key: str = field(repr=False)
    limiter: SlidingWindowLimiter = field(repr=False)
    stats: KeyStats = field(repr=False)
    active: bool = True
    queued: int = 0


class KeyPool:
    """The keys of one account, each with its pacer, and the run's IP pacer they all go through.

    ``keys``: at least one (:func:`parse_keys`); ``config``: ``ClientConfig``; ``base_url``: named without
    credentials when every key was rejected; ``ip_limiter``: the run's (None: a private one); ``clock``,
    ``sleep``: the pacers' (s); ``label``: the account's name; ``emit``: called with ``{"event":
    "key_dropped", "position", "keys_left"}``.
    """

    def __init__(self, keys: Sequence[str], config: ClientConfig, *, base_url: str,
                 ip_limiter: SlidingWindowLimiter | None, clock: Callable[[], float],
                 sleep: Callable[[float], Awaitable[None]], label: str | None,
                 emit: Callable[[dict], None]) -> None:
        self.keys = tuple(keys)
        self.slots = [
            KeySlot(n, key, SlidingWindowLimiter.for_ceiling(
                config.per_key_limit, config.window_s, config.safety_margin, clock=clock, sleep=sleep),
                KeyStats(position=n))
            for n, key in enumerate(keys, start=1)
        ]
        self.ip_limiter = ip_limiter or SlidingWindowLimiter.for_ceiling(
            config.per_ip_limit, config.window_s, config.safety_margin, clock=clock, sleep=sleep
        )
        self._base_url = base_url
        self._clock = clock
        self._label = label
        self._emit = emit

    def __len__(self) -> int:
        return len(self.slots)

    @property
    def active_keys(self) -> int:
        """Keys still in use (not dropped after a 401)."""
        return sum(slot.active for slot in self.slots)

    def choose(self) -> KeySlot:
        """The active key that can send soonest: its pacer's wait plus the requests queued on it.

        Raises AuthenticationError when every key was dropped."""
        active = [slot for slot in self.slots if slot.active]
        if not active:
            raise self.no_key_left()
        if len(active) == 1:
            return active[0]
        now = self._clock()
        return min(active, key=lambda slot: (
            slot.limiter.wait_s(now) + slot.queued * slot.limiter.window_s / max(1, slot.limiter.limit),
            slot.stats.requests))

    @asynccontextmanager
    async def sending(self) -> AsyncIterator[KeySlot]:
        """Wait for a slot of the chosen key's pacer, then of the IP pacer, and yield the key; both are held while
        the block runs (docs/concepts/pacing.md, "Requests in flight").

        Raises AuthenticationError: every key was dropped after a 401 (no slot held).
        """
        while True:
            slot = self.choose()
            slot.queued += 1
            try:
                stamp = await slot.limiter.acquire(hold=True)
            finally:
                slot.queued -= 1
            if slot.active:  # else dropped while this request waited: take another key
                break
            slot.limiter.settle(stamp)
        try:
            ip_stamp = await self.ip_limiter.acquire(hold=True)
            try:
                yield slot
            finally:
                self.ip_limiter.settle(ip_stamp)
        finally:
            slot.limiter.settle(stamp)

    def drop(self, slot: KeySlot) -> bool:
        """A 401 for ``slot``'s key: drop it for the rest of the run; True while another key is left."""
        slot.stats.rejected += 1
        if slot.active:
            slot.active = False
            slot.stats.dropped = True
            left = self.active_keys
            logger.warning(
                "%s: API key %d of %d was rejected (401: deleted or rotated?); dropped for the rest of the "
                "run, %d key(s) left%s", self._label or "account", slot.position, len(self.slots), left,
                "" if left else "; every key of this account has now been rejected")
            self._emit({"event": "key_dropped", "position": slot.position, "keys_left": left})
        return self.active_keys > 0

    def no_key_left(self, method: str | None = None, url: str | None = None) -> RankTrackerError:
        """The ``AuthenticationError`` (401) for an account whose every key was rejected."""
        return AuthenticationError(
            f"every API key of {self._label or 'the account'} ({len(self.slots)} in its list) was rejected "
            f"with 401. {AuthenticationError.advice} [{method or 'GET'} {url or safe_url(self._base_url)} -> 401]",
            status=401, method=method, url=url)
