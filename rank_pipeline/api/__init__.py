"""Client side of the rank-tracking API spec: pacing, pagination with completeness, retries, typed errors.

Public surface (see docs/concepts/completeness.md)::

    ClientConfig(...)                                  # settings, units in the names
    SlidingWindowLimiter(limit, window_s, clock, sleep)  # pacing; .for_ceiling(ceiling, window_s, margin)
    RankTrackerClient(base_url, api_key, *, config, ip_limiter, transport, on_event)
        await client.get(path, params=None) -> data
        await client.list_records(path, params, sink) -> ListResult
        client.paginate(path, params, sink) -> Paginator   # async for list_pass in it; then .result
        client.server_date, client.stats (RequestStats)
    errors: RankTrackerError and its subclasses (rank_pipeline.api.errors)

Several accounts in one run: one ``RankTrackerClient`` per account (its key or key pool), all constructed with the same
``ip_limiter=SlidingWindowLimiter.for_ceiling(config.per_ip_limit, config.window_s, config.safety_margin)``
and used in one event loop; each client paces its own key.

No Dagster, no DuckDB here.
"""

from .client import RankTrackerClient
from .config import ClientConfig, KeyStats, ListResult, RequestStats
from .errors import (
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    PermissionDeniedError,
    QuotaExceededError,
    RankTrackerError,
    RateLimitedError,
    ServerError,
    TransportError,
    ValidationError,
)
from .keys import parse_keys
from .listing import ListPass, Paginator
from .pacing import LimiterCounts, SlidingWindowLimiter, effective_limit
from .transport import check_base_url, parse_retry_after, requests_sent

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "ClientConfig",
    "KeyStats",
    "LimiterCounts",
    "ListPass",
    "ListResult",
    "NotFoundError",
    "Paginator",
    "PermissionDeniedError",
    "QuotaExceededError",
    "RankTrackerClient",
    "RankTrackerError",
    "RateLimitedError",
    "RequestStats",
    "ServerError",
    "SlidingWindowLimiter",
    "TransportError",
    "ValidationError",
    "check_base_url",
    "parse_keys",
    "effective_limit",
    "parse_retry_after",
    "requests_sent",
]
