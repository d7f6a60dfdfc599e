"""Typed records of what an extraction did: :class:`SnapshotManifest` (``_manifest.json``), :class:`ListsReport`
(one account's lists of a resource on a day), :class:`AccountStats` and :class:`KeyStats` (keys by position).

Written as the same JSON as ever; any manifest ever written reads back, unknown keys kept (``extra="allow"``).
"""

from __future__ import annotations

import json
from datetime import date, datetime

from pydantic import BaseModel, ConfigDict, Field, field_serializer

__all__ = ["AccountStats", "KeyStats", "ListsReport", "SnapshotManifest"]


class ListsReport(BaseModel):
    """One account's lists of one resource on one day (spec "Limits" rules 4-6), counts in records: ``passes``
    (the most one list needed), ``missing_parents`` (child lists answering 404), ``incomplete_lists`` (parent
    ids or paths of lists not proven), ``rows`` (written for this account, set at commit).
    """

    model_config = ConfigDict(extra="allow")

    complete: bool = True
    expected: int = 0
    delivered: int = 0
    lists: int = 0
    pages: int = 0
    passes: int = 0
    excluded: int = 0
    missing_parents: list[str] = Field(default_factory=list)
    incomplete_lists: list[str] = Field(default_factory=list)
    rows: int | None = None


class SnapshotManifest(BaseModel):
    """``_manifest.json`` of one committed snapshot of one resource and day: ``files`` (Parquet names),
    ``row_count`` (all accounts), ``complete`` (every account's lists proven), ``accounts`` (name ->
    :class:`ListsReport`).
    """

    model_config = ConfigDict(extra="allow")

    resource: str
    snapshot_date: date
    schema_version: int
    row_count: int
    files: list[str]
    written_at: datetime
    complete: bool
    accounts: dict[str, ListsReport] = Field(default_factory=dict)
    shard: str | None = None
    """``"i/n"`` in the manifest one shard worker wrote (:mod:`rank_pipeline.settings.sharding`); unset otherwise."""
    shards: int | None = None
    """How many shard manifests a day's manifest was merged from (set only by :func:`read_manifest`)."""

    @field_serializer("written_at")
    def _iso(self, value: datetime) -> str:  # datetime.isoformat(), as manifests were always written
        return value.isoformat()

    def to_json(self) -> str:
        """The manifest as written to disk (sorted keys, two-space indent, only the fields set)."""
        return json.dumps(self.model_dump(mode="json", exclude_unset=True), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> SnapshotManifest:
        """Parse a manifest of any version written so far. Raises pydantic.ValidationError: not a manifest."""
        return cls.model_validate_json(text)


class KeyStats(BaseModel):
    """One key of an account's key list, by position (1-based), never by value."""

    position: int
    requests: int
    rate_limited: int
    rejected: int
    dropped: bool


class AccountStats(BaseModel):
    """One account's requests in a run: totals, time spent (seconds) and the rate achieved per minute."""

    requests: int
    retries: int
    rate_limited: int
    elapsed_s: float
    achieved_rate_per_min: float
    keys: list[KeyStats] = Field(default_factory=list)
