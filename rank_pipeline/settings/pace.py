"""The client's pace (spec "Limits"): the per-key and per-IP ceilings, their window, requests in flight."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from rank_pipeline.settings.values import _number

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "SPEC_PER_IP_LIMIT", "SPEC_PER_KEY_LIMIT", "SPEC_WINDOW_S", "RateSettings"]

SPEC_PER_KEY_LIMIT = 300
"""Requests per API key per window (spec "Limits": 300 per minute, REST and GraphQL combined)."""
SPEC_PER_IP_LIMIT = 600
"""Requests per IP address per window, across keys (spec "Limits": 600 per minute)."""
SPEC_WINDOW_S = 60.0
"""The ceilings' window in seconds (spec "Limits": one minute)."""
DEFAULT_MAX_IN_FLIGHT = 16
"""Requests in flight at once per client (and per key of its pool)."""


@dataclass(frozen=True)
class RateSettings:
    """How fast a run may call the vendor API (``RANK_TRACKER_RATE_*``, ``RANK_TRACKER_MAX_IN_FLIGHT``), declared
    here only (:class:`rank_pipeline.api.ClientConfig` extends it): ``per_key_limit`` and ``per_ip_limit``
    (requests per window), ``window_s`` (seconds), ``max_in_flight`` (per client; the connection pool's size).
    """

    per_key_limit: int = SPEC_PER_KEY_LIMIT
    per_ip_limit: int = SPEC_PER_IP_LIMIT
    window_s: float = SPEC_WINDOW_S
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RateSettings:
        """Read the rate variables: per key and per IP 1..100000, window 1..86400 s, in flight 1..1024.
        Raises ConfigurationError: a value not a finite number within its range (``nan``, ``inf``, ``1e-9``).
        """
        env = os.environ if env is None else env
        return cls(
            per_key_limit=int(_number(env, "RANK_TRACKER_RATE_PER_KEY", SPEC_PER_KEY_LIMIT, int, 1, 100_000)),
            per_ip_limit=int(_number(env, "RANK_TRACKER_RATE_PER_IP", SPEC_PER_IP_LIMIT, int, 1, 100_000)),
            window_s=float(_number(env, "RANK_TRACKER_RATE_WINDOW_S", SPEC_WINDOW_S, float, 1.0, 86_400.0)),
            max_in_flight=int(_number(env, "RANK_TRACKER_MAX_IN_FLIGHT", DEFAULT_MAX_IN_FLIGHT, int, 1, 1024)),
        )
