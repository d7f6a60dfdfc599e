"""Client side of the rank-tracking API spec: ``RankTrackerClient``, ``ClientConfig``, ``SlidingWindowLimiter``
and the ``RankTrackerError`` classes; no Dagster, no DuckDB (docs/concepts/api-client.md).
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
