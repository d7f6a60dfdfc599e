"""Freshness policies: every mart and ``warehouse/published`` materialized within ``RANK_PIPELINE_FRESHNESS_HOURS``
hours (default 26), evaluated by the freshness daemon; ``alerts_on_stale_assets`` tells a ``FAIL``
(docs/concepts/dagster.md, "Freshness").
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import dagster as dg

from rank_pipeline.defs.warehouse_assets import PUBLISHED_KEY

__all__ = ["freshness_policy", "is_watched", "with_freshness_policies"]


def is_watched(key: dg.AssetKey) -> bool:
    """True for the assets that carry a freshness policy: ``marts/*`` and ``warehouse/published``."""
    return key.path[0] == "marts" or key == PUBLISHED_KEY


def freshness_policy(hours: float) -> dg.FreshnessPolicy:
    """The time-window policy: fail when the last materialization is older than ``hours``
    (:attr:`rank_pipeline.settings.OpsSettings.freshness_hours`, from the settings the definitions are built from).
    """
    return dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=hours))


def with_freshness_policies(assets: Sequence[dg.AssetsDefinition], hours: float):
    """``assets`` with :func:`freshness_policy` on every spec :func:`is_watched` selects (others as they are)."""
    policy = freshness_policy(hours)

    def apply(spec: dg.AssetSpec) -> dg.AssetSpec:
        return dg.apply_freshness_policy(spec, policy) if is_watched(spec.key) else spec

    return list(dg.map_asset_specs(apply, assets))
