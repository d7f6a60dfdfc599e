"""Async client of the rank-tracking REST API (spec: "Authentication", "Errors", "Limits").

``RankTrackerClient`` is one account's client. It is put together from three parts:

- :mod:`rank_pipeline.api.transport`: one request, paced and retried (status, ``Retry-After``, backoff,
  first contact), and the secrets rule: the key only in the ``Authorization`` header, only over HTTPS
  except to a loopback host, never in a message, repr, log line, event or exception;
- :mod:`rank_pipeline.api.keys`: the account's key pool (several keys, each with its pacer; a key
  answered 401 dropped for the rest of the run);
- :mod:`rank_pipeline.api.listing`: reading a paginated list until its id set is proven (settling), with
  :class:`~rank_pipeline.api.listing.Paginator`.

Several accounts in one run: one client per account, all given the same ``ip_limiter``
(``SlidingWindowLimiter.for_ceiling(config.per_ip_limit, config.window_s, config.safety_margin)``),
inside one event loop.
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
        base_url: the API address without ``/v1`` (e.g. ``https://api.example.com``); ``https://``, or
            ``http://`` to a loopback host only.
        api_key: the raw key, or several keys of one account as a comma-separated string or a
            sequence (see :mod:`rank_pipeline.api.keys`; whitespace around each is stripped); each is sent as
            ``Authorization: <key>``.
        config: ``ClientConfig``.
        ip_limiter: the run's per-IP limiter, shared by all clients of the run; None makes a private
            one (correct only when this is the run's only client).
        transport: an httpx async transport (``httpx.MockTransport``, ``httpx.ASGITransport``) for
            tests; None for the network.
        on_event: called with a dict for progress: ``{"event": "page" | "retry" | "rate_limited" |
            "list_done", ...}``; exceptions it raises are logged and ignored.
        clock, sleep, rng: monotonic clock (s), async sleep (s) and random source, for tests.
        label: the account's name, for log messages (never the key).
    Raises:
        ValueError: bad base URL (see ``check_base_url``), no key, or a key listed twice.

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
        """POST a JSON ``body`` that must never be sent twice by mistake, and return the JSON response body.

        For writes that are not idempotent, such as keyword create (spec "Keyword create: body"). Paced
        through the key's and the IP address's limiters like every request. A 429 waits ``Retry-After`` and resends (the API did not process the request), and
        a connection that could not be opened is tried again (nothing was sent). Every other failure is
        raised at once, never retried: a timeout, a dropped connection, a 5xx or a 2xx whose body is not
        JSON may come after the API acted on the request, so only the caller can tell, by reading back.

        Raises:
            ServerError, TransportError: the response was lost or unusable (the write may have happened).
            QuotaExceededError (402), ValidationError (422), BadRequestError (400) and the other
            RankTrackerError subclasses for a response that says what went wrong.
        """
        return await self._transport.request("POST", path, None, json_body=dict(body), retry_transient=False)

    async def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET one resource and return its ``data`` member (a dict for single resources).

        Args:
            path: path under the base URL, e.g. ``/v1/account/usage``.
            params: query parameters.
        Raises:
            RankTrackerError subclasses (see :mod:`rank_pipeline.api.transport`); ``TransportError(kind="invalid_json")``
            when the body lacks ``data``.
        """
        body = await self._transport.request("GET", path, params)
        if "data" not in body:
            raise TransportError(
                "the response has no `data` member (spec: responses use a JSON:API-style envelope)",
                kind="invalid_json", method="GET", url=self._transport.url(path),
            )
        return body["data"]

    async def list_records(
        self, path: str, params: Mapping[str, Any] | None = None, sink: Sink | None = None, *, raw: bool = False
    ) -> ListResult:
        """Read every record of a paginated list and prove the set of ids by identity, not by count.

        Implements spec "Limits" rules 4-6 with a :class:`~rank_pipeline.api.listing.Paginator` (its module
        says when a list is proven and what the proof shows). Each record whose ``id`` was not delivered
        before goes to ``sink`` (a sync or async callable taking ``list[dict]``) as its page arrives, so
        records stream and only ids are kept in memory. The result's ``excluded`` ids were delivered in an
        earlier pass but deleted during the read: the caller must drop them (the extractor hands them to
        :meth:`~rank_pipeline.snapshots.writer.SnapshotWriter.exclude`, which filters them out at commit).

        Args:
            path: list path, e.g. ``/v1/domains/<uuid>/keywords``.
            params: extra query parameters (``page`` and ``per_page`` are set by the client).
            sink: receives the new records of each page; None discards them (counts only).
            raw: the records as :class:`~rank_pipeline.api.listing.RawRecord` (attributes as the vendor's
                bytes, unparsed) where a page allows it, else dicts.
        Returns:
            ``ListResult`` (see its attributes).
        Raises:
            RankTrackerError subclasses, e.g. ``NotFoundError`` when the parent domain is gone.
        """
        return await self.paginate(path, params, sink, raw=raw).read()

    def paginate(self, path: str, params: Mapping[str, Any] | None = None, sink: Sink | None = None, *,
                 raw: bool = False) -> Paginator:
        """A :class:`~rank_pipeline.api.listing.Paginator` over the list at ``path``, not yet read: iterate it
        pass by pass (``async for list_pass in client.paginate(...)``), then take its ``result``."""
        return Paginator(self._transport, path, params, config=self.config, stats=self.stats, sink=sink,
                         clock=self._clock, emit=self._emit, raw=raw)

    def _emit(self, event: dict) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception:  # a progress callback must not break the extraction
            logger.exception("on_event callback failed for event %r", event.get("event"))

