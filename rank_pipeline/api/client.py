"""One account's client of the rank-tracking API: :class:`RankTrackerClient` (``get``, ``list_records``,
``paginate``, ``post_once``), put together from :mod:`rank_pipeline.api.transport` (one request, paced
and retried), :mod:`rank_pipeline.api.keys` (the key pool) and :mod:`rank_pipeline.api.listing` (a list
proven by its ids). Several accounts: one client each, sharing one ``ip_limiter``, in one event loop
(docs/concepts/api-client.md).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import date
from typing import Any

import httpx

from .config import ClientConfig, ListResult, RequestStats
from .errors import TransportError
from .keys import KeyPool, parse_keys
from .listing import Paginator, Sink
from .pacing import SlidingWindowLimiter
from .transport import Transport, check_base_url

logger = logging.getLogger("rank_pipeline.api")

EventCallback = Callable[[dict], None]


class RankTrackerClient:
    """One account's client (its key or key pool): pacing, pagination with completeness, retries, typed errors.

    Args:
        base_url: the API address without ``/v1``; ``https://``, or ``http://`` to a loopback host only.
        api_key: the key, or the account's keys comma-separated or as a sequence, each sent as
            ``Authorization: <key>``.
        config: ``ClientConfig``; ip_limiter: the run's per-IP limiter, shared (None: a private one).
        transport: an httpx async transport for tests (None: the network).
        on_event: called with ``{"event": "page" | "retry" | "rate_limited" | "list_done", ...}``; its
            exceptions are logged and ignored.
        clock, sleep, rng: monotonic clock (s), async sleep (s) and random source, for tests.
        label: the account's name, for log messages (never the key).
    Raises:
        ValueError: a bad base URL (:func:`check_base_url`), no key, or a key listed twice.

    Use as ``async with RankTrackerClient(...) as client:``, in one event loop.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        config: ClientConfig = ClientConfig(),  # noqa: B008 - frozen dataclass, safe as default
        ip_limiter: SlidingWindowLimiter | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        on_event: EventCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        label: str | None = None,
    ) -> None:
        self.base_url = check_base_url(base_url)
        keys = parse_keys(api_key)
        if not keys:
            raise ValueError(
                "no API key given: set RANK_TRACKER_API_KEY (or RANK_TRACKER_API_KEY_<ACCOUNT> for each "
                "name in RANK_TRACKER_ACCOUNTS) to a key from the vendor's web application (Account, API)"
            )
        self.label = label
        self.config = config
        self._clock = clock
        self._on_event = on_event
        self._pool = KeyPool(keys, config, base_url=self.base_url, ip_limiter=ip_limiter, clock=clock,
                             sleep=sleep, label=label, emit=self._emit)
        self.stats = RequestStats(keys=[slot.stats for slot in self._pool.slots])
        self._transport = Transport(self.base_url, self._pool, config, self.stats, transport=transport,
                                    emit=self._emit, clock=clock, sleep=sleep, rng=rng or random.Random())

    def __repr__(self) -> str:
        return f"RankTrackerClient(base_url={self.base_url!r}, keys={len(self._pool)})"

    @property
    def server_date(self) -> date | None:
        """The UTC day of the first response's ``Date`` header; None before a response had one."""
        return self._transport.server_date

    @property
    def ip_limiter(self) -> SlidingWindowLimiter:
        """The run's per-IP pacer this client goes through (shared, or its own when none was given)."""
        return self._pool.ip_limiter

    @property
    def key_limiter(self) -> SlidingWindowLimiter:
        """The first key's pacer (the only one for a single-key client)."""
        return self._pool.slots[0].limiter

    @property
    def active_keys(self) -> int:
        """Keys still in use (not dropped after a 401)."""
        return self._pool.active_keys

    async def __aenter__(self) -> RankTrackerClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._transport.aclose()

    # -- public reads ----------------------------------------------------------------------------

    async def post_once(self, path: str, body: Mapping[str, Any]) -> dict:
        """POST a JSON ``body`` that must never be sent twice by mistake (keyword create); returns the response body.

        Paced like every request; a 429 waits and resends and a connection never opened is retried (nothing was
        processed); any other failure is raised at once, since the API may have acted: only the caller can tell,
        by reading back.

        Raises:
            ServerError, TransportError: the response was lost or unusable (the write may have happened).
            QuotaExceededError (402), ValidationError (422), BadRequestError (400), other RankTrackerError
                subclasses: the response says what went wrong.
        """
        return await self._transport.request("POST", path, None, json_body=dict(body), retry_transient=False)

    async def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET one resource at ``path`` (``/v1/account/usage``) with ``params``; returns its ``data`` member.

        Raises RankTrackerError subclasses; ``TransportError(kind="invalid_json")`` when the body lacks ``data``.
        """
        body = await self._transport.request("GET", path, params)
        if "data" not in body:
            raise TransportError(
                "the response has no `data` member (spec: responses use a JSON:API-style envelope)",
                kind="invalid_json", method="GET", url=self._transport.url(path),
            )
        return body["data"]

    async def list_records(
        self, path: str, params: Mapping[str, Any] | None = None, sink: Sink | None = None, *, raw: bool = False,
        with_body: bool = False,
    ) -> ListResult:
        """Read every record of a paginated list and prove its set of ids by identity, not by count (spec "Limits"
        rules 4-6; docs/concepts/completeness.md, "Reading one list").

        ``path``: the list (``/v1/domains/<uuid>/keywords``); ``params``: extra query parameters (``page`` and
        ``per_page`` are the client's); ``sink``: gets each page's new records as it arrives (None: counts only);
        ``raw``: records as :class:`~rank_pipeline.api.listing.RawRecord` (attributes unparsed) where a page allows;
        ``with_body``: ``sink(records, body)``, ``body`` the page's response bytes.
        Returns a ``ListResult``: its ``excluded`` ids must be dropped by the caller
        (:meth:`~rank_pipeline.snapshots.writer.SnapshotWriter.exclude`).

        Raises RankTrackerError subclasses, e.g. ``NotFoundError`` when the parent domain is gone.
        """
        return await self.paginate(path, params, sink, raw=raw, with_body=with_body).read()

    def paginate(self, path: str, params: Mapping[str, Any] | None = None, sink: Sink | None = None, *,
                 raw: bool = False, with_body: bool = False) -> Paginator:
        """A :class:`~rank_pipeline.api.listing.Paginator` over the list at ``path``, not yet read: iterate it
        pass by pass (``async for list_pass in client.paginate(...)``), then take its ``result``."""
        return Paginator(self._transport, path, params, config=self.config, stats=self.stats, sink=sink,
                         clock=self._clock, emit=self._emit, raw=raw, with_body=with_body)

    def _emit(self, event: dict) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception:  # a progress callback must not break the extraction
            logger.exception("on_event callback failed for event %r", event.get("event"))

