"""The sandbox's seeded world: accounts, domains, keywords, competitors, tags, usage and positions.

:class:`World` is the ground truth the marts are tested against: a pure function of ``(WorldConfig, day)``
(days are UTC dates) plus the writes made through it; records are JSON:API dicts as served
(:mod:`rank_pipeline.sandbox.assumptions`). Rules (keywords, positions, usage, ids): docs/concepts/sandbox.md,
"The world".
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
