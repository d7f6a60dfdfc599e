"""Request rate limits of the sandbox (spec "Limits", "429 response"): fixed windows per key (300) and per IP (600).

:func:`rate_limited_response` is the 429 (``Retry-After`` and ``RateLimit-*`` headers, in seconds). What
counts against which budget: docs/concepts/sandbox.md, "Rate limits".
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.responses import JSONResponse

from rank_pipeline.api.config import SPEC_PER_IP_LIMIT, SPEC_PER_KEY_LIMIT, SPEC_WINDOW_S

__all__ = ["RateLimits", "RateLimiter", "Rejection", "rate_limited_response"]


@dataclass(frozen=True)
class RateLimits:
    """Limit settings: ``per_key`` and ``per_ip`` requests per window of ``window_s`` seconds; windows
    start at ``offset_s`` (mod ``window_s``) on the limiter's clock."""

    per_key: int = SPEC_PER_KEY_LIMIT
    per_ip: int = SPEC_PER_IP_LIMIT
    window_s: float = SPEC_WINDOW_S
    offset_s: float = 0.0

    def __post_init__(self):
        if self.per_key < 1 or self.per_ip < 1:
            raise ValueError(f"per_key and per_ip must be >= 1, got {self.per_key} and {self.per_ip}")
        if not self.window_s > 0:
            raise ValueError(f"window_s must be > 0 seconds, got {self.window_s}")


@dataclass(frozen=True)
class Rejection:
    """Why a request was throttled: ``limit`` is the ceiling hit, ``retry_after`` whole seconds (>= 1)."""

    scope: str  # "key" or "ip"
    limit: int
    retry_after: int


class RateLimiter:
    """Fixed-window counters per key and per IP address, thread-safe; ``clock`` in seconds (default
    ``time.monotonic``), ``outside_consumer`` the requests GraphQL takes from each new key window.
    """

    def __init__(
        self,
        limits: RateLimits = RateLimits(),
        *,
        clock: Callable[[], float] = time.monotonic,
        outside_consumer: Callable[[], int] = lambda: 0,
    ):
        self.limits = limits
        self.clock = clock
        self._outside = outside_consumer
        self._counts: dict[tuple[str, str], list[int]] = {}  # (scope, ident) -> [window, count]
        self._lock = threading.Lock()
        self.outside_requests: dict[str, int] = {}  # key ident -> requests spent by the outside consumer

    def _window(self, now: float) -> int:
        return math.floor((now - self.limits.offset_s) / self.limits.window_s)

    def retry_after(self, now: float | None = None) -> int:
        """Whole seconds from ``now`` to the end of the current window, at least 1."""
        now = self.clock() if now is None else now
        end = self.limits.offset_s + (self._window(now) + 1) * self.limits.window_s
        return max(1, math.ceil(end - now - 1e-9))

    def _hit(self, scope: str, ident: str, limit: int) -> Rejection | None:
        now = self.clock()
        window = self._window(now)
        with self._lock:
            entry = self._counts.get((scope, ident))
            if entry is None or entry[0] != window:
                start = 0
                if scope == "key":
                    start = min(max(0, int(self._outside())), limit)
                    if start:
                        self.outside_requests[ident] = self.outside_requests.get(ident, 0) + start
                entry = [window, start]
                self._counts[(scope, ident)] = entry
            entry[1] += 1
            over = entry[1] > limit
        return Rejection(scope, limit, self.retry_after(now)) if over else None

    def hit_ip(self, ip: str) -> Rejection | None:
        """Count one request from ``ip``; a Rejection when it is over ``per_ip`` in this window."""
        return self._hit("ip", ip, self.limits.per_ip)

    def hit_key(self, key: str) -> Rejection | None:
        """Count one request of ``key`` (any stable identifier of the key); a Rejection when over."""
        return self._hit("key", key, self.limits.per_key)

    def reset(self) -> None:
        """Forget all counters (a fresh window for everyone)."""
        with self._lock:
            self._counts.clear()
            self.outside_requests.clear()


def rate_limited_response(rejection: Rejection) -> JSONResponse:
    """The spec's 429 response ("429 response") for ``rejection``."""
    seconds = rejection.retry_after
    body = {
        "errors": [
            {
                "status": 429,
                "code": "rate_limited",
                "detail": f"Rate limit of {rejection.limit} requests per window exceeded "
                f"(per {'API key' if rejection.scope == 'key' else 'IP address'}); retry in {seconds} seconds",
            }
        ]
    }
    headers = {
        "Retry-After": str(seconds),
        "RateLimit-Limit": str(rejection.limit),
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": str(seconds),
    }
    return JSONResponse(body, status_code=429, headers=headers)
