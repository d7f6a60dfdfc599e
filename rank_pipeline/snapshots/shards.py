"""Extraction sharded across workers: which accounts one worker extracts.

``RANK_PIPELINE_SHARD=i/n`` (0 <= i < n <= 1024; read by :mod:`rank_pipeline.settings`) makes a worker extract only the accounts of
shard ``i`` out of ``n``. An account belongs to shard ``blake2b(account name) mod n``: a stable hash of
the account's identity (its name, which snapshots and the warehouse key it by; never its key, which is
a secret and may rotate), so every worker computes the same assignment without talking to the others,
and an account stays on its shard from day to day.

Each worker paces itself: its own per-key and per-IP budgets (spec "Limits"), so ``n`` workers on ``n``
addresses extract ``n`` times as many accounts in the same window. All workers write the same snapshots
location (normally ``RANK_PIPELINE_SNAPSHOTS_URI=s3://...``): worker ``i`` commits
``_manifest.shard-i-of-n.json`` in each day's folder (:mod:`rank_pipeline.snapshots.parquet`, "Commit"), and
readers take the day as committed once all ``n`` shard manifests are there, reading their union.

Under Dagster, ``RANK_PIPELINE_SHARDS=n`` (:class:`rank_pipeline.settings.ShardPlan`) runs the shards
itself: the extraction is partitioned by day x shard, each shard partition a run of its own
(:mod:`rank_pipeline.defs.shards`), with the same assignment and the same shard manifests.
"""

from __future__ import annotations

# the shard value and its ``i/n`` form are settings (RANK_PIPELINE_SHARD): declared in rank_pipeline.settings
from rank_pipeline.settings import MAX_SHARDS, SHARD_ENV, Shard, parse_shard, shard_of

__all__ = ["MAX_SHARDS", "SHARD_ENV", "Shard", "parse_shard", "shard_of"]
