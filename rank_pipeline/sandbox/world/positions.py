"""Ground-truth organic positions and ranking URLs: pure O(1) functions of (seed, keyword, day).

The formulas are docs/concepts/sandbox.md ("Keywords": positions, ranking URL). Neither checks that the
keyword exists on ``day``; callers do.
"""

from __future__ import annotations

import math
from datetime import date

from rank_pipeline.sandbox.world.config import WorldConfig
from rank_pipeline.sandbox.world.ids import hash64
from rank_pipeline.sandbox.world.state import Keyword

__all__ = ["position", "ranking_url"]


def position(config: WorldConfig, k: Keyword, day: date) -> int | None:
    """The keyword's organic position on ``day``: 1..100, or None when it is not in the top 100."""
    t = (day - config.start_date).days
    if k.trend == 0:
        level = k.base
    else:
        # fraction of the way from the first level to the second, over a 14-day ramp after pivot
        f = min(1.0, max(0.0, (t - k.pivot) / 14.0))
        first, second = (k.out_level, k.base) if k.trend == 1 else (k.base, k.out_level)
        level = first + (second - first) * f
    noise = hash64("pos", config.seed, k.int_id, t) % 5 - 2
    raw = level + k.amp * math.sin(2 * math.pi * (t + k.phase) / k.period) + noise
    pos = max(1, int(round(raw)))
    return pos if pos <= 100 else None


def ranking_url(config: WorldConfig, k: Keyword, day: date) -> str:
    """The URL the keyword would rank with on ``day`` (whether it ranks or not)."""
    if k.url_kind == 2:
        t = (day - config.start_date).days
        return k.url_a if hash64("url", config.seed, k.int_id, t) & 1 else k.url_b
    if k.url_kind == 3:
        return k.url_a if (day - config.start_date).days < k.url_change else k.url_b
    return k.url_a
