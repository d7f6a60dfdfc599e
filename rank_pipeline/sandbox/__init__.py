"""Local, spec-faithful implementation of the rank-tracking API: :class:`World`, :func:`create_app`,
:class:`RateLimits`, :class:`Faults`, :class:`SandboxServer`, :func:`serve` and the rest of ``__all__``
(``rank_pipeline/sandbox/README.md``; docs/concepts/sandbox.md).
"""

from rank_pipeline.sandbox.app import create_app
from rank_pipeline.sandbox.faults import Faults
from rank_pipeline.sandbox.limits import RateLimits
from rank_pipeline.sandbox.openapi import build_openapi
from rank_pipeline.sandbox.pagination import paginated_response
from rank_pipeline.sandbox.server import SandboxServer, serve
from rank_pipeline.sandbox.world import (
    Account,
    AccountSpec,
    KeywordSpec,
    LimitChange,
    QuotaExceeded,
    UnknownDomain,
    World,
    WorldConfig,
)

__all__ = [
    "Account",
    "AccountSpec",
    "Faults",
    "KeywordSpec",
    "LimitChange",
    "QuotaExceeded",
    "RateLimits",
    "SandboxServer",
    "UnknownDomain",
    "World",
    "WorldConfig",
    "build_openapi",
    "create_app",
    "paginated_response",
    "serve",
]

