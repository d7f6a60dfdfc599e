"""Extraction sharded across workers: ``RANK_PIPELINE_SHARD=i/n`` (:class:`Shard`) and Dagster's
``RANK_PIPELINE_SHARDS`` (:class:`ShardPlan`); an account's shard is ``blake2b(name) mod n``
(docs/concepts/operations.md, "Sharded extraction").
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from rank_pipeline.settings.pace import RateSettings
from rank_pipeline.settings.values import ConfigurationError, _number

__all__ = ["MAX_SHARDS", "SHARDS_ENV", "SHARD_ADDRESSES_ENV", "SHARD_ENV", "Shard", "ShardPlan", "parse_shard",
           "shard_of"]

SHARD_ENV = "RANK_PIPELINE_SHARD"
"""``i/n``: the shard of the accounts this worker extracts."""
MAX_SHARDS = 1024
_SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def shard_of(account: str, count: int) -> int:
    """The shard (``0 .. count-1``) of an account name: ``blake2b(name, 8 bytes) mod count``."""
    digest = hashlib.blake2b(account.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based); what a shard means: :mod:`rank_pipeline.settings.sharding`."""

    index: int
    count: int

    def owns(self, account: str) -> bool:
        """True when ``account`` (its name) belongs to this shard."""
        return shard_of(account, self.count) == self.index

    def select(self, names: Iterable[str]) -> list[str]:
        """The names of ``names`` this shard owns, in order."""
        return [n for n in names if self.owns(n)]

    @property
    def key(self) -> str:
        """``<i>-of-<n>``: the shard's Dagster partition key (:class:`ShardPlan`)."""
        return f"{self.index}-of-{self.count}"

    @classmethod
    def from_key(cls, key: str) -> Shard:
        """The shard of a partition key ``<i>-of-<n>``. Raises ValueError: not that, with ``0 <= i < n <= 1024``."""
        match = re.match(r"^(\d+)-of-(\d+)$", key)
        if not match or not 0 <= int(match.group(1)) < int(match.group(2)) <= MAX_SHARDS:
            raise ValueError(f"{key!r} is not a shard partition key: expected <i>-of-<n>, e.g. 0-of-2")
        return cls(int(match.group(1)), int(match.group(2)))

    @property
    def manifest_name(self) -> str:
        """``_manifest.shard-<i>-of-<n>.json``: the manifest this shard commits in a day's folder."""
        return f"_manifest.shard-{self.index}-of-{self.count}.json"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(raw: str | None, *, name: str = SHARD_ENV) -> Shard | None:
    """``"i/n"`` as a :class:`Shard`, None when unset or empty.
    Raises ValueError: not ``i/n`` with ``0 <= i < n <= 1024`` (one line naming ``name``).
    """
    if raw is None or not raw.strip():
        return None
    match = _SHARD_RE.match(raw)
    if not match or not (0 <= int(match.group(1)) < int(match.group(2)) <= MAX_SHARDS):
        raise ValueError(f"{name}={raw!r} is not a shard: set it to i/n with 0 <= i < n <= {MAX_SHARDS} "
                         "(e.g. 0/2 and 1/2 for two workers), or unset it to extract every account")
    return Shard(int(match.group(1)), int(match.group(2)))


SHARDS_ENV = "RANK_PIPELINE_SHARDS"
"""``n``: Dagster extracts each day as ``n`` shard partitions (:class:`ShardPlan`)."""
SHARD_ADDRESSES_ENV = "RANK_PIPELINE_SHARD_ADDRESSES"
"""``shared`` or ``own``: whether the shard runs of a day share one IP address (:class:`ShardPlan`)."""


@dataclass(frozen=True)
class ShardPlan:
    """Extraction sharded under Dagster: ``count`` shards per day (``RANK_PIPELINE_SHARDS=n``, 2..1024), each a
    partition ``<i>-of-<n>`` of its own run extracting :class:`Shard` ``i/n``'s accounts.

    Per-IP budget: ``own_addresses`` False (``shared``, the default) paces each shard to
    ``floor(per_ip_limit / n)`` (at least 1); True (``own``) to the full ceiling (docs/concepts/operations.md,
    "Budgets of a shard plan"). Not set together with ``RANK_PIPELINE_SHARD``.
    """

    count: int
    own_addresses: bool = False

    @property
    def shards(self) -> list[Shard]:
        """Shard ``0/n`` .. ``n-1/n``, in order."""
        return [Shard(i, self.count) for i in range(self.count)]

    def rates(self, rates: RateSettings) -> RateSettings:
        """The rate settings one shard run paces to: ``rates`` with the per-IP ceiling divided by
        :attr:`count` when the shards share an address (requests per window, at least 1)."""
        if self.own_addresses:
            return rates
        return replace(rates, per_ip_limit=max(1, rates.per_ip_limit // self.count))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ShardPlan | None:
        """``RANK_PIPELINE_SHARDS`` and ``RANK_PIPELINE_SHARD_ADDRESSES``, None when unset or 1. Raises
        ConfigurationError: a count not 1..1024, addresses not ``shared`` or ``own``, or
        ``RANK_PIPELINE_SHARD`` set too.
        """
        env = os.environ if env is None else env
        count = int(_number(env, SHARDS_ENV, 1, int, 1, MAX_SHARDS))
        addresses = (env.get(SHARD_ADDRESSES_ENV) or "").strip().lower() or "shared"
        if addresses not in ("shared", "own"):
            raise ConfigurationError(
                f"{SHARD_ADDRESSES_ENV}={env.get(SHARD_ADDRESSES_ENV)!r} is not shared or own: set shared when "
                "the shard runs leave from one IP address (each paces to 1/n of the per-IP ceiling), own when "
                "each has its own address, or unset it")
        if count == 1:
            return None
        if (env.get(SHARD_ENV) or "").strip():
            raise ConfigurationError(
                f"{SHARD_ENV} and {SHARDS_ENV} are both set: {SHARDS_ENV}={count} makes Dagster run every "
                f"shard of a day as a partition; {SHARD_ENV}=i/n is for one `rank-pipeline extract` worker "
                "started by hand. Unset one")
        return cls(count, own_addresses=addresses == "own")
