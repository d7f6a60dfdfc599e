"""The world's errors: a keyword create over the plan's allowance, a domain id not of the account."""

from __future__ import annotations

from rank_pipeline.errors import RankPipelineError

__all__ = ["QuotaExceeded", "UnknownDomain"]


class QuotaExceeded(RankPipelineError):
    """A keyword create over the keyword or data-row allowance (spec: 402 ``over_quota``); nothing was created.
    ``resource``: ``"keywords"`` or ``"dataRows"``; ``requested`` new combinations; ``remaining`` today.
    """

    def __init__(self, resource: str, requested: int, remaining: int):
        self.resource, self.requested, self.remaining = resource, requested, remaining
        label = "keyword" if resource == "keywords" else "data-row"
        super().__init__(
            f"Creating {requested} keyword(s) would exceed the plan's {label} allowance "
            f"({remaining} remaining); nothing was created. Remove keywords or upgrade the plan."
        )


class UnknownDomain(RankPipelineError, LookupError):
    """The domain id does not name a domain of that account (the API answers 404 ``Domain not found``)."""
