"""An account's quota forecast for a keywords plan (spec "Limits" rule 2: one keyword and one data row per
combination; over either, 402): the ``usage`` record's ``keywords_remaining`` and ``data_rows_remaining``
read through the vendor's contract, None when it does not hold them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rank_pipeline.api import RankTrackerClient
from rank_pipeline.api.fields import RecordFields
from rank_pipeline.settings import models_dir
from rank_pipeline.transform.contract import loaded_contract

__all__ = ["Quota", "contract_fields", "read_quota", "usage_quota"]


def contract_fields(fields: RecordFields | None) -> RecordFields:
    """``fields``, or the contract of the models folder (:func:`rank_pipeline.settings.models_dir`)."""
    return fields if fields is not None else loaded_contract(models_dir())


@dataclass(frozen=True)
class Quota:
    """An account's quota forecast: what the plan consumes against what remains (spec "Limits")."""

    account: str
    keywords_needed: int
    keywords_remaining: int | None
    data_rows_needed: int
    data_rows_remaining: int | None
    as_of: str = "now"

    @property
    def refusal(self) -> str | None:
        """Why a create of the plan would get 402, or None when it fits."""
        short = []
        if self.keywords_remaining is not None and self.keywords_needed > self.keywords_remaining:
            short.append(f"{self.keywords_needed} keyword(s) but {self.keywords_remaining} remain")
        if self.data_rows_remaining is not None and self.data_rows_needed > self.data_rows_remaining:
            short.append(f"{self.data_rows_needed} data row(s) but {self.data_rows_remaining} remain")
        if not short:
            return None
        return (f"account {self.account}: the plan needs {' and '.join(short)} ({self.as_of}): the API would "
                "refuse it with 402 over_quota and create nothing; remove keywords from the file or raise "
                "the plan's limits")

    def render(self) -> str:
        def fmt(n):
            return "unknown" if n is None else f"{n:,}"
        verdict = "would be refused (402)" if self.refusal else "fits"
        return (f"quota (account {self.account}, {self.as_of}): needs {self.keywords_needed:,} keyword(s) and "
                f"{self.data_rows_needed:,} data row(s); remaining {fmt(self.keywords_remaining)} keyword(s), "
                f"{fmt(self.data_rows_remaining)} data row(s): {verdict}")


def _count(fields: RecordFields, name: str, attributes: Any) -> int | None:
    """The ``usage`` count ``name`` (``keywords_remaining``, ``data_rows_remaining``), or None."""
    value = fields.value("usage", name, attributes) if isinstance(attributes, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_quota(account: str, needed: int, attributes: Any, fields: RecordFields | None = None,
                as_of: str = "now") -> Quota:
    """A :class:`Quota` of ``needed`` combinations against a ``usage`` record's ``attributes``, its keywords
    and data rows remaining read by the contract's names ``keywords_remaining`` and ``data_rows_remaining``
    (None, shown as unknown, when the record does not hold them where the contract reads them)."""
    reader = contract_fields(fields)
    return Quota(account, needed, _count(reader, "keywords_remaining", attributes), needed,
                 _count(reader, "data_rows_remaining", attributes), as_of=as_of)


async def read_quota(client: RankTrackerClient, account: str, needed: int,
                     fields: RecordFields | None = None) -> Quota:
    """``GET /v1/account/usage`` as a :class:`Quota` for ``needed`` combinations (:func:`usage_quota`)."""
    usage = await client.get("/v1/account/usage")
    return usage_quota(account, needed, usage.get("attributes") if isinstance(usage, Mapping) else None, fields)
