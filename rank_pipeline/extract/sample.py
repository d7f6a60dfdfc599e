"""A live sample of the API's records, for ``rank-pipeline profile --live N``: up to N records per endpoint.

Each endpoint of :data:`rank_pipeline.api.endpoints.CATALOG` is read from page 1 only (``per_page`` up to
N, at most the spec's 1000), a child endpoint for the sampled parent records, in catalogue order, until N
records are held; through the same paced client as an extraction (spec "Limits"), so a sample never
trips the rate limit. Nothing is written: the sample is for looking at the vendor's shape before a run.
"""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any

from rank_pipeline.api import RankTrackerClient
from rank_pipeline.api.endpoints import CATALOG
from rank_pipeline.api.errors import NotFoundError
from rank_pipeline.extract.source import Source
from rank_pipeline.settings import models_dir
from rank_pipeline.transform.contract import loaded_contract

__all__ = ["MAX_PER_PAGE", "sample_records"]

MAX_PER_PAGE = 1000
"""The spec's largest ``per_page`` (spec "Limits")."""


async def _sample(base_url: str, api_key: str, config, size: int) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    fields = loaded_contract(models_dir())
    per_page = max(1, min(size, MAX_PER_PAGE))
    async with RankTrackerClient(base_url, api_key, config=config) as client:
        for endpoint in CATALOG:
            records = out.setdefault(endpoint.name, [])
            if endpoint.parent is None:
                requests = [endpoint.top_level_request()]
            else:
                seen, requests = set(), []
                for parent in out.get(endpoint.parent, []):
                    for request in endpoint.requests_from_parent(endpoint, parent, fields):
                        if (request.path, request.params) not in seen:
                            seen.add((request.path, request.params))
                            requests.append(request)
            for request in requests:
                if len(records) >= size:
                    break
                params: dict[str, Any] = dict(request.params)
                if endpoint.paginated:
                    params.update(page=1, per_page=per_page)
                try:
                    data = await client.get(request.path, params)
                except NotFoundError:
                    continue  # a parent deleted since it was listed
                records += (data if isinstance(data, list) else [data])[: size - len(records)]
    return out


def sample_records(source: Source, size: int, *, today: date) -> dict[str, list[dict]]:
    """Up to ``size`` records per endpoint from ``source`` (its first account), as the API sends them
    (``{"id", "type", "attributes"}``); the embedded sandbox's clock is set to ``today``.

    Raises:
        rank_pipeline.settings.ConfigurationError: the source's settings are wrong (one line);
        rank_pipeline.api.RankTrackerError: the API refused the key or could not be reached.
    """
    opened = source.open(today)
    account = opened.accounts[0]
    return asyncio.run(_sample(opened.base_url, account.api_key, source.client_config, size))
