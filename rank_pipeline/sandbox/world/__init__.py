"""The sandbox's seeded world (:class:`World`): the ground truth the marts are tested against, a pure function
of ``(WorldConfig, day)`` (UTC dates) plus its writes, serving JSON:API dicts (docs/concepts/sandbox.md,
"The world").
"""

from rank_pipeline.sandbox.world.config import Account, AccountSpec, KeywordSpec, LimitChange, WorldConfig
from rank_pipeline.sandbox.world.errors import QuotaExceeded, UnknownDomain
from rank_pipeline.sandbox.world.ground_truth import World
from rank_pipeline.sandbox.world.state import WriteEvent

__all__ = [
    "Account",
    "AccountSpec",
    "KeywordSpec",
    "LimitChange",
    "QuotaExceeded",
    "UnknownDomain",
    "World",
    "WriteEvent",
    "WorldConfig",
]
