"""Client-side pacing at the API's rate ceilings (spec "Limits": 300 requests per key, 600 per IP, per minute):
``SlidingWindowLimiter`` counts a request in flight until settled, and pauses (and may lower its limit) on a
429; ``effective_limit`` is a ceiling less the safety margin. Design and proof: docs/concepts/pacing.md.
"""

from __future__ import annotations

import asyncio
import bisect
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


def effective_limit(ceiling: int, safety_margin: float) -> int:
    """The pacing limit for a server ``ceiling`` (requests per window), at least 1:
    ``floor(ceiling * (1 - safety_margin))``. Raises ValueError: ``ceiling < 1`` or a margin outside ``[0, 1)``.
    """
    if ceiling < 1:
        raise ValueError(f"rate ceiling must be at least 1 request per window, got {ceiling}")
    if not 0.0 <= safety_margin < 1.0:
        raise ValueError(f"safety_margin must be in [0, 1), got {safety_margin}")
    return max(1, math.floor(ceiling * (1.0 - safety_margin) + 1e-9))


@dataclass(frozen=True)
class LimiterCounts:
    """A snapshot of a limiter's counters (acquisitions unless said): ``limit`` (current, lowered after an
    unexplained 429) and ``base_limit``; ``acquired``; ``waited``; ``in_window`` (held, or settled within
    ``window_s``); ``pauses``, ``rate_limited`` (429s), ``reductions``; ``paused_until`` (clock s, 0.0 never).
    """

    limit: int
    base_limit: int
    acquired: int
    waited: int
    in_window: int
    pauses: int
    rate_limited: int
    reductions: int
    paused_until: float


class SlidingWindowLimiter:
    """Never more than ``limit`` acquisitions in any ``window_s``-second span; FIFO; pausable; one event loop's.

    ``limit``: per window, already below the ceiling (:func:`effective_limit`, :meth:`for_ceiling`);
    ``window_s``: seconds (the spec's minute: 60.0); ``clock``, ``sleep``: injected by tests.
    Raises ValueError: ``limit < 1`` or ``window_s <= 0``. Design: docs/concepts/pacing.md.
    """

    def __init__(
        self,
        limit: int,
        window_s: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1 acquisition per window, got {limit}")
        if not window_s > 0:
            raise ValueError(f"window_s must be a positive number of seconds, got {window_s}")
        self.base_limit = int(limit)
        self.window_s = float(window_s)
        self._limit = int(limit)
        self._clock = clock
        self._sleep = sleep
        self._log: list[float] = []  # sorted acquisition (or settle) times within the last window
        self._held: list[float] = []  # sorted stamps of held acquisitions, not settled yet: always in the window
        self._gate = asyncio.Lock()
        self._paused_until = 0.0
        self._recover_at: float | None = None
        self._recover_interval = self.window_s
        self._lowered_this_pause = False
        self._first_acquired: float | None = None
        self.acquired = 0
        self.waited = 0
        self.pauses = 0
        self.rate_limited = 0
        self.reductions = 0

    @classmethod
    def for_ceiling(
        cls,
        ceiling: int,
        window_s: float,
        safety_margin: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> SlidingWindowLimiter:
        """A limiter at ``effective_limit(ceiling, safety_margin)`` per ``window_s`` seconds."""
        return cls(effective_limit(ceiling, safety_margin), window_s, clock=clock, sleep=sleep)

    # -- state ---------------------------------------------------------------------------------

    @property
    def limit(self) -> int:
        """The current effective limit per window (after adaptation and recovery)."""
        self._recover(self._clock())
        return self._limit

    @property
    def paused_until(self) -> float:
        """Clock time until which acquisitions wait because of a 429 (0.0 when never paused)."""
        return self._paused_until

    def in_window(self) -> int:
        """Acquisitions held, or logged within the last ``window_s`` seconds."""
        now = self._clock()
        self._purge(now)
        return self._counted()

    def counts(self) -> LimiterCounts:
        """A snapshot of the counters (see ``LimiterCounts``)."""
        return LimiterCounts(
            limit=self.limit,
            base_limit=self.base_limit,
            acquired=self.acquired,
            waited=self.waited,
            in_window=self.in_window(),
            pauses=self.pauses,
            rate_limited=self.rate_limited,
            reductions=self.reductions,
            paused_until=self._paused_until,
        )

    def __repr__(self) -> str:
        return (
            f"SlidingWindowLimiter(limit={self._limit}, base_limit={self.base_limit}, "
            f"window_s={self.window_s}, acquired={self.acquired})"
        )

    # -- acquisition ---------------------------------------------------------------------------

    async def acquire(self, hold: bool = False) -> float:
        """Wait for a slot (FIFO) and take it; returns its clock time. Waits while a 429 pause is on or ``limit``
        acquisitions are held or within ``window_s``; cancelled, it takes none. ``hold``: counted until
        ``settle(stamp)`` (docs/concepts/pacing.md, "Requests in flight").
        """
        waited = self._gate.locked()
        async with self._gate:
            while True:
                now = self._clock()
                delay = self._delay(now)
                if delay <= 0:
                    break
                waited = True
                await self._sleep(delay)
            (self._held if hold else self._log).append(now)  # now >= every stamp: both stay sorted
            if self._first_acquired is None:
                self._first_acquired = now
            self.acquired += 1
            if waited:
                self.waited += 1
            return now

    def wait_s(self, now: float | None = None) -> float:
        """Seconds until an acquisition would be allowed (0.0: now), ignoring callers already queued."""
        return max(0.0, self._delay(self._clock() if now is None else now))

    def settle(self, stamp: float, now: float | None = None) -> float:
        """End the hold of the acquisition ``stamp``; it then counts ``window_s`` seconds from ``now`` (returned).

        A stamp that is not held (settled already) changes nothing and is returned as it is.
        """
        index = bisect.bisect_left(self._held, stamp)
        if index == len(self._held) or self._held[index] != stamp:
            return stamp
        del self._held[index]
        settled = max(stamp, self._clock() if now is None else now)
        bisect.insort(self._log, settled)
        return settled

    def _counted(self) -> int:
        """Acquisitions that count against the limit: held ones and those logged (purge first)."""
        return len(self._log) + len(self._held)

    def _purge(self, now: float) -> None:
        # drop stamps whose window has passed: t + window_s <= now (the same test as in _delay)
        cut = 0
        while cut < len(self._log) and self._log[cut] + self.window_s <= now:
            cut += 1
        if cut:
            del self._log[:cut]

    def _delay(self, now: float) -> float:
        """Seconds until an acquisition at ``now`` would be allowed (<= 0: allowed now)."""
        if self._paused_until > now:
            return self._paused_until - now
        self._recover(now)
        self._purge(now)
        counted = self._counted()
        if counted < self._limit:
            return 0.0
        leave = counted - self._limit + 1  # stamps that must leave the window so that fewer than limit remain
        if leave <= len(self._log):
            delay = self._log[leave - 1] + self.window_s - now
        else:  # held ones must settle: the earliest a settled one leaves is a full window from now
            delay = self.window_s
        if self._recover_at is not None:
            delay = min(delay, self._recover_at - now)  # re-check when the limit rises
        return delay

    # -- 429 handling ---------------------------------------------------------------------------

    def note_rate_limited(self, retry_after_s: float) -> bool:
        """Report a 429: pause every acquisition for ``retry_after_s`` seconds; True when this started a pause.

        A 429 during a pause only extends it. The limit may be lowered (docs/concepts/pacing.md, "429s").
        """
        now = self._clock()
        self.rate_limited += 1
        until = now + max(0.0, float(retry_after_s))
        if now < self._paused_until:
            self._paused_until = max(self._paused_until, until)
            if self._lowered_this_pause and self._limit > 1:
                self._limit -= 1
            return False
        self._paused_until = until
        self.pauses += 1
        self._lowered_this_pause = False
        self._purge(now)
        self._recover(now)
        if self._first_acquired is None or now - self._first_acquired < self.window_s:
            return True  # not one full window of our own traffic yet: pause only
        lowered = max(1, min(self._limit - 1, self._counted() - 1))
        if lowered < self._limit:
            if self._limit < self.base_limit:  # a raised limit was refused: probe less often
                self._recover_interval = min(2 * self._recover_interval, 8 * self.window_s)
            self._limit = lowered
            self.reductions += 1
            self._lowered_this_pause = True
        if self._limit < self.base_limit:
            self._recover_at = until + self._recover_interval
        return True

    def _recover(self, now: float) -> None:
        step = max(1, self.base_limit // 10)
        while self._recover_at is not None and now >= self._recover_at:
            self._limit = min(self.base_limit, self._limit + step)
            if self._limit >= self.base_limit:
                self._recover_at = None
                self._recover_interval = self.window_s
            else:
                self._recover_at += self._recover_interval
