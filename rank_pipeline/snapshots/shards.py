"""Extraction sharded across workers: which accounts one worker extracts (issue 13, item 4).

``RANK_PIPELINE_SHARD=i/n`` (0 <= i < n <= 1024; :mod:`rank_pipeline.settings`, or the
``shard`` setting of the Dagster ``RankTrackerResource``) makes a worker extract only the accounts of
shard ``i`` out of ``n``. An account belongs to shard ``blake2b(account name) mod n``: a stable hash of
the account's identity (its name, which snapshots and the warehouse key it by; never its key, which is
a secret and may rotate), so every worker computes the same assignment without talking to the others,
and an account stays on its shard from day to day.

Each worker paces itself: its own per-key and per-IP budgets (spec "Limits"), so ``n`` workers on ``n``
addresses extract ``n`` times as many accounts in the same window. All workers write the same snapshots
location (normally ``RANK_PIPELINE_SNAPSHOTS_URI=s3://...``): worker ``i`` commits
``_manifest.shard-i-of-n.json`` in each day's folder (:mod:`rank_pipeline.snapshots.parquet`, "Commit"), and
readers take the day as committed once all ``n`` shard manifests are there, reading their union.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["SHARD_ENV", "Shard", "parse_shard", "shard_of"]

SHARD_ENV = "RANK_PIPELINE_SHARD"
MAX_SHARDS = 1024
_SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def shard_of(account: str, count: int) -> int:
    """The shard (``0 .. count-1``) of an account name: ``blake2b(name, 8 bytes) mod count``."""
    digest = hashlib.blake2b(account.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based)."""

    index: int
    count: int

    def owns(self, account: str) -> bool:
        """True when ``account`` (its name) belongs to this shard."""
        return shard_of(account, self.count) == self.index

    def select(self, names: Iterable[str]) -> list[str]:
        """The names of ``names`` this shard owns, in order."""
        return [n for n in names if self.owns(n)]

    @property
    def manifest_name(self) -> str:
        """``_manifest.shard-<i>-of-<n>.json``: the manifest this shard commits in a day's folder."""
        return f"_manifest.shard-{self.index}-of-{self.count}.json"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(raw: str | None, *, name: str = SHARD_ENV) -> Shard | None:
    """``"i/n"`` as a :class:`Shard`; None when unset or empty.

    Raises:
        ValueError: not ``i/n`` with ``0 <= i < n <= 1024`` (one line naming ``name`` and what to set).
    """
    if raw is None or not raw.strip():
        return None
    match = _SHARD_RE.match(raw)
    if not match or not (0 <= int(match.group(1)) < int(match.group(2)) <= MAX_SHARDS):
        raise ValueError(f"{name}={raw!r} is not a shard: set it to i/n with 0 <= i < n <= {MAX_SHARDS} "
                         "(e.g. 0/2 and 1/2 for two workers), or unset it to extract every account")
    return Shard(int(match.group(1)), int(match.group(2)))
