"""Async client of the rank-tracking REST API (spec: "Authentication", "Errors", "Limits").

``RankTrackerClient`` sends every request through one ``httpx.AsyncClient`` (HTTP/1.1 keep-alive,
connection pool sized to ``ClientConfig.max_in_flight``), bounds the requests in flight with a
semaphore, paces each attempt through the key's ``SlidingWindowLimiter`` and the IP address's limiter,
retries what is transient, and raises the typed errors of ``rank_pipeline.api.errors``.

Retry policy (per request)
--------------------------
- 429: the ``Retry-After`` seconds pause the key's limiter (or the IP limiter when ``RateLimit-Limit``
  names the IP ceiling) once for every request of that key; the request then queues for a new slot.
  429s do not count toward ``max_attempts`` but are bounded by ``max_retry_s`` (then
  ``RateLimitedError``).
- Transient faults (5xx, timeout, dropped connection, connection failure, a 2xx whose body is not the
  JSON envelope): exponential backoff with jitter (``backoff_base_s * 2**(n-1)``, capped at
  ``backoff_max_s``, a random half of it as jitter) for up to ``max_attempts`` attempts and
  ``max_retry_s`` seconds; then ``ServerError`` / ``TransportError``.
- First contact: until the host has answered this client once, a failure to connect (DNS failure,
  connection refused, connect timeout) is tried only ``first_contact_attempts`` times (default 2,
  ``first_contact_backoff_s`` apart) and then raises ``TransportError(kind="unreachable")`` naming the
  base URL: a wrong URL fails in about a second, not after minutes of backoff. Once the host has
  answered, connection failures are transient like the rest. A timeout or a dropped connection means
  something accepted the connection, so those are transient from the start.
- 400, 401, 402, 403, 404, 422 (and statuses the spec does not list) are raised at once.

Each attempt (retries included) takes one slot of the key limiter and one of the IP limiter.

Secrets: the key goes only into the ``Authorization`` header (the raw key, no ``Bearer``; spec
"Authentication" rule 2), only over HTTPS except to a loopback host. It never appears in a message,
repr, log line, event or exception; transport messages are scrubbed of it.

Several accounts in one run: one client per account, all given the same ``ip_limiter``
(``SlidingWindowLimiter.for_ceiling(config.per_ip_limit, config.window_s, config.safety_margin)``),
inside one event loop.

Key pool (spec "Authentication" 5: an account can hold two valid keys at once): ``api_key`` may be a
comma-separated list (or a sequence). Each key gets its own pacer at ``per_key_limit``; every request
takes the active key that can send soonest, then the shared IP pacer, so the keys together run up to
the per-IP ceiling. A key answered 401 (deleted mid-run, a rotation) is dropped for the rest of the
run with a warning naming its position in the list, never its value, and the request goes to another
key; only when every key was rejected is ``AuthenticationError`` raised. ``stats.keys`` counts per
key position. With one key a 401 is raised at once, as before.
"""

from __future__ import annotations

import asyncio
import inspect
import ipaddress
import json
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from .config import ClientConfig, KeyStats, ListResult, RequestStats
from .errors import (
    AuthenticationError,
    RankTrackerError,
    TransportError,
    error_from_response,
    redact,
    safe_url,
)
from .pacing import SlidingWindowLimiter

logger = logging.getLogger("rank_pipeline.api")

Sink = Callable[[list[dict]], Awaitable[None] | None]
EventCallback = Callable[[dict], None]

_USER_AGENT = "rank-pipeline/0.1 (+httpx)"


def parse_keys(value: str | Sequence[str] | None) -> list[str]:
    """The keys of one account: a comma-separated list (``RANK_TRACKER_API_KEY=k1,k2``) or a sequence.

    Whitespace around each key is stripped and empty items dropped. Raises ValueError naming the
    positions (never the values) when a key is listed twice.
    """
    items = value.split(",") if isinstance(value, str) else list(value or [])
    keys = [str(k).strip() for k in items if str(k).strip()]
    seen: dict[str, int] = {}
    for n, key in enumerate(keys, start=1):
        if key in seen:
            raise ValueError(f"the key list repeats a key (positions {seen[key]} and {n}); list each key once")
        seen[key] = n
    return keys


@dataclass(eq=False)
class _KeySlot:
    """One key of the pool: its position (1-based, for messages), the key, its pacer and counters."""

    position: int
    key: str = field(repr=False)
    limiter: SlidingWindowLimiter = field(repr=False)
    stats: KeyStats = field(repr=False)
    active: bool = True
    queued: int = 0


@dataclass
class _Pass:
    """What one pass over a list saw: ids, the X-Total-Count and X-Total-Pages values, repeats."""

    ids: set = field(default_factory=set)
    totals: set = field(default_factory=set)
    page_counts: set = field(default_factory=set)
    repeated: bool = False
    started: float = 0.0


@dataclass
class _Page:
    records: list[dict]
    total_count: int | None
    total_pages: int | None


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_base_url(base_url: str) -> str:
    """Validate a base URL and return it without a trailing slash.

    Raises:
        ValueError: when it is not an absolute ``https://`` URL, or an ``http://`` URL to a host that
            is not loopback (the key is sent in clear over plain HTTP, so only ``127.0.0.0/8``,
            ``::1`` and ``localhost`` are allowed, for the sandbox).
    """
    text = str(base_url).strip().rstrip("/")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"base URL {safe_url(text)!r} is not an absolute http(s) URL; set RANK_TRACKER_BASE_URL to "
            "the vendor's API address, e.g. https://api.example.com (or leave it unset for the sandbox)"
        )
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise ValueError(
            f"refusing plain http:// to {parts.hostname}: the API key would travel unencrypted. Use "
            "https:// (plain http is allowed only to a loopback host such as 127.0.0.1, for the sandbox)"
        )
    return text


def _header_int(headers: httpx.Headers, name: str) -> int | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds, or an HTTP date); None if absent/bad."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)


class RankTrackerClient:
    """One API key's client: pacing, pagination with completeness, retries, typed errors.

    Args:
        base_url: the API address without ``/v1`` (e.g. ``https://api.example.com``); ``https://``, or
            ``http://`` to a loopback host only.
        api_key: the raw key, or several keys of one account as a comma-separated string or a
            sequence (see "Key pool" above; whitespace around each is stripped); each is sent as
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
        self._keys = tuple(keys)
        self.label = label
        self.config = config
        self._clock = clock
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._on_event = on_event
        self._slots = [
            _KeySlot(n, key, SlidingWindowLimiter.for_ceiling(
                config.per_key_limit, config.window_s, config.safety_margin, clock=clock, sleep=sleep),
                KeyStats(position=n))
            for n, key in enumerate(keys, start=1)
        ]
        self.ip_limiter = ip_limiter or SlidingWindowLimiter.for_ceiling(
            config.per_ip_limit, config.window_s, config.safety_margin, clock=clock, sleep=sleep
        )
        in_flight = config.max_in_flight * len(keys)  # each key keeps its own pipeline full
        self._in_flight = asyncio.Semaphore(in_flight)
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers={"Accept": "application/json", "User-Agent": _USER_AGENT},
            timeout=httpx.Timeout(config.timeout_s, connect=config.connect_timeout_s),
            limits=httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight),
            transport=transport,
            follow_redirects=False,
        )
        self.stats = RequestStats(keys=[slot.stats for slot in self._slots])
        self.server_date: date | None = None
        self._host_answered = False
        self._t0: float | None = None

    def __repr__(self) -> str:
        return f"RankTrackerClient(base_url={self.base_url!r}, keys={len(self._slots)})"

    @property
    def key_limiter(self) -> SlidingWindowLimiter:
        """The first key's pacer (the only one for a single-key client)."""
        return self._slots[0].limiter

    @property
    def active_keys(self) -> int:
        """Keys still in use (not dropped after a 401)."""
        return sum(slot.active for slot in self._slots)

    async def __aenter__(self) -> RankTrackerClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    # -- public reads ----------------------------------------------------------------------------

    async def post_once(self, path: str, body: Mapping[str, Any]) -> dict:
        """POST a JSON ``body`` that must never be sent twice by mistake, and return the JSON response body.

        For writes that are not idempotent, such as keyword create (spec "Keyword create: body";
        DESIGN.md "Writing to the vendor"). Paced through the key's and the IP address's limiters like
        every request. A 429 waits ``Retry-After`` and resends (the API did not process the request), and
        a connection that could not be opened is tried again (nothing was sent). Every other failure is
        raised at once, never retried: a timeout, a dropped connection, a 5xx or a 2xx whose body is not
        JSON may come after the API acted on the request, so only the caller can tell, by reading back.

        Raises:
            ServerError, TransportError: the response was lost or unusable (the write may have happened).
            QuotaExceededError (402), ValidationError (422), BadRequestError (400) and the other
            RankTrackerError subclasses for a response that says what went wrong.
        """
        return await self._request("POST", path, None, json_body=dict(body), retry_transient=False)

    async def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET one resource and return its ``data`` member (a dict for single resources).

        Args:
            path: path under the base URL, e.g. ``/v1/account/usage``.
            params: query parameters.
        Raises:
            RankTrackerError subclasses (see module docstring); ``TransportError(kind="invalid_json")``
            when the body lacks ``data``.
        """
        body = await self._request("GET", path, params)
        if "data" not in body:
            raise TransportError(
                "the response has no `data` member (spec: responses use a JSON:API-style envelope)",
                kind="invalid_json", method="GET", url=self._url(path),
            )
        return body["data"]

    async def list_records(
        self, path: str, params: Mapping[str, Any] | None = None, sink: Sink | None = None
    ) -> ListResult:
        """Read every record of a paginated list and prove the set of ids by identity, not by count.

        Implements spec "Limits" rules 4-6. Pass 1 fetches page 1 with ``per_page=config.per_page``;
        its ``X-Total-Pages`` and ``X-Total-Count`` tell the rest, and pages 2..N are fetched
        concurrently (bounded by ``max_in_flight``). Each record whose ``id`` was not delivered before
        goes to ``sink`` (a sync or async callable taking ``list[dict]``; not called for a page with
        nothing new) as its page arrives, so records stream and only ids are kept in memory.

        When is a list complete? Inserts and deletes between pages (rule 6) can keep
        ``X-Total-Count`` unchanged while ids go missing, so a count proves nothing. A pass is
        *consistent* when every page of it reported the same ``X-Total-Count`` T and ``X-Total-Pages``
        and it saw exactly T distinct ids, none twice. The list is *proven* when

        - it fits in one page (one response is one moment: a consistent single page is the set), or
        - two consecutive consistent passes saw the same id set and the same T.

        Passes after the first fetch all pages 1..N at once (N from the previous pass), which keeps
        each verification pass as short as the pacer allows. Re-reading goes on, adaptively, while
        the list is unproven and its request budget lasts: ``settle_budget_requests`` requests per
        list (default: one window of the key's ceiling, ``per_key_limit``), never more than
        ``max_passes`` passes. A list whose records shift on most requests thus gets as many passes
        as the rate budget allows, and a quiet list costs one pass (one page) or two (several pages).

        The result's ``excluded`` holds the ids delivered in an earlier pass that are not in the
        proven set: they were deleted during the read, and the caller must drop them (the extractor
        hands them to :meth:`~rank_pipeline.snapshots.parquet.SnapshotWriter.exclude`, which filters them
        out at commit, so nothing is buffered). When the list is not proven, ``complete`` is False,
        ``excluded`` is empty and every id ever delivered stays (nothing is lost; the caller flags
        the list). A page beyond the last (empty ``data``) is fine. Without pagination headers the
        pages are read one by one until an empty page and the result is not ``complete``.

        What the proof shows: the proven set is the set that existed at one instant during the
        final pass (``ListResult.proven_at`` is when that pass began): a write between the two
        agreeing passes would show in the second, and a write during the first would make the two
        differ. What no reader of a multi-page list can show is the set at the very end of the read:
        an insert plus a delete that land during the final pass, both on pages that pass had already
        read, are invisible. Fetching the final pass all at once narrows that window to the server's
        handling of one batch of requests; the next day's snapshot has such records.

        Args:
            path: list path, e.g. ``/v1/domains/<uuid>/keywords``.
            params: extra query parameters (``page`` and ``per_page`` are set by the client).
            sink: receives the new records of each page; None discards them (counts only).
        Returns:
            ``ListResult`` (see its attributes).
        Raises:
            RankTrackerError subclasses, e.g. ``NotFoundError`` when the parent domain is gone.
        """
        query = {k: v for k, v in dict(params or {}).items() if k not in ("page", "per_page")}
        query["per_page"] = self.config.per_page
        budget = self.config.settle_budget_requests or self.config.per_key_limit
        seen: set[Any] = set()
        deliver_lock = asyncio.Lock()
        pages = passes = duplicates = 0
        total_count: int | None = None
        complete = False
        previous: _Pass | None = None
        final_ids: set[Any] | None = None
        n_pages = 1

        async def deliver(records: list[dict], current: _Pass) -> int:
            nonlocal duplicates
            async with deliver_lock:  # dedupe and sink calls in arrival order, one at a time
                new = []
                for record in records:
                    rid = _record_id(record)
                    if rid in current.ids:  # seen twice in one pass: it moved between pages
                        duplicates += 1
                        current.repeated = True
                    current.ids.add(rid)
                    if rid in seen:
                        continue
                    seen.add(rid)
                    new.append(record)
                if new and sink is not None:
                    result = sink(new)
                    if inspect.isawaitable(result):
                        await result
                self.stats.records += len(new)
                return len(new)

        proven_at: float | None = None
        while True:
            passes += 1
            current = _Pass(started=self._clock())

            async def fetch(page_no: int, current: _Pass = current, pass_no: int = passes) -> None:
                page = await self._get_page(path, query, page_no)
                current.totals.add(page.total_count)
                current.page_counts.add(page.total_pages)
                n_new = await deliver(page.records, current)
                self._page_event(path, page_no, page, pass_no, n_new, len(seen))

            if passes == 1:
                first = await self._get_page(path, query, 1)
                pages += 1
                current.totals.add(first.total_count)
                current.page_counts.add(first.total_pages)
                new = await deliver(first.records, current)
                self._page_event(path, 1, first, passes, new, len(seen))
                if first.total_pages is None or first.total_count is None:
                    pages += await self._walk_unpaginated(path, query, first, passes, deliver, current, seen)
                    total_count = None
                    break
                n_pages = max(1, first.total_pages)
                todo = list(range(2, n_pages + 1))
            else:
                todo = list(range(1, n_pages + 1))
            pages += len(todo)
            await self._fan_out(todo, fetch)
            # the list grew during the pass: read the new last pages too (the pass is not consistent)
            grown = max((p for p in current.page_counts if p is not None), default=n_pages)
            if grown > n_pages:
                extra = list(range(n_pages + 1, grown + 1))
                pages += len(extra)
                await self._fan_out(extra, fetch)
            known = [t for t in current.totals if t is not None]
            total_count = max(known) if known else None
            n_pages = max([1] + [p for p in current.page_counts if p is not None])
            consistent = (len(current.totals) == 1 and len(current.page_counts) == 1 and total_count is not None
                          and not current.repeated and len(current.ids) == total_count)
            if consistent and (n_pages == 1 or (previous is not None and previous.ids == current.ids
                                                and previous.totals == current.totals)):
                complete, final_ids, proven_at = True, current.ids, current.started
                break
            if passes >= self.config.max_passes or pages + n_pages > budget:
                break
            logger.info("list %s: pass %d not proven (X-Total-Count %s, %d distinct ids%s); reading again",
                        path, passes, sorted(known), len(current.ids),
                        ", differs from the previous pass" if previous is not None and consistent else "")
            previous = current if consistent else None

        excluded = tuple(sorted(seen - final_ids, key=str)) if final_ids is not None else ()
        result = ListResult(path=path, total_count=total_count,
                            delivered=len(final_ids) if final_ids is not None else len(seen), pages=pages,
                            passes=passes, complete=complete, duplicates=duplicates, excluded=excluded,
                            proven_at=proven_at)
        if not complete and total_count is not None:
            logger.warning(
                "list %s not proven complete after %d passes (%d requests): records kept moving between "
                "pages; %d distinct ids delivered, X-Total-Count %s", path, passes, pages, len(seen), total_count)
        self._emit({"event": "list_done", **{k: v for k, v in asdict(result).items() if k != "excluded"},
                    "excluded": len(excluded)})
        return result

    # -- pagination helpers ----------------------------------------------------------------------

    async def _fan_out(self, page_numbers: list[int], fetch: Callable[[int], Awaitable[None]]) -> None:
        if not page_numbers:
            return
        todo = iter(page_numbers)

        async def worker() -> None:
            for page_no in todo:  # a shared iterator: each page is taken by one worker
                await fetch(page_no)

        async with asyncio.TaskGroup() as group:
            for _ in range(min(self.config.max_in_flight, len(page_numbers))):
                group.create_task(worker())

    async def _walk_unpaginated(self, path, query, first: _Page, pass_no, deliver, current, seen) -> int:
        fetched = 0
        page_no, page = 1, first
        while page.records:
            page_no += 1
            page = await self._get_page(path, query, page_no)
            fetched += 1
            n_new = await deliver(page.records, current)
            self._page_event(path, page_no, page, pass_no, n_new, len(seen))
        return fetched

    async def _get_page(self, path: str, query: dict, page_no: int) -> _Page:
        params = {**query, "page": page_no}
        body, headers = await self._request("GET", path, params, with_headers=True)
        data = body.get("data")
        if not isinstance(data, list):
            raise RankTrackerError(
                f"expected a list under `data` from {path} (a paginated list endpoint) but got "
                f"{type(data).__name__}; use get() for single resources",
                method="GET", url=self._url(path),
            )
        self.stats.pages += 1
        return _Page(
            records=data,
            total_count=_header_int(headers, "X-Total-Count"),
            total_pages=_header_int(headers, "X-Total-Pages"),
        )

    def _page_event(self, path: str, page_no: int, page: _Page, pass_no: int, new: int, delivered: int):
        self._emit({
            "event": "page", "path": path, "page": page_no, "total_pages": page.total_pages,
            "total_count": page.total_count, "pass": pass_no, "records": len(page.records),
            "new_records": new, "delivered": delivered,
        })

    # -- one request with pacing and retries -------------------------------------------------------

    def _url(self, path: str) -> str:
        return safe_url(self.base_url + path)

    def _choose_slot(self) -> _KeySlot:
        """The active key that can send soonest: its pacer's wait plus the requests queued on it."""
        active = [slot for slot in self._slots if slot.active]
        if not active:
            raise self._no_key_left()
        if len(active) == 1:
            return active[0]
        now = self._clock()
        return min(active, key=lambda slot: (
            slot.limiter.wait_s(now) + slot.queued * slot.limiter.window_s / max(1, slot.limiter.limit),
            slot.stats.requests))

    async def _acquire_pacing(self) -> _KeySlot:
        while True:
            slot = self._choose_slot()
            slot.queued += 1
            try:
                stamp = await slot.limiter.acquire()
            finally:
                slot.queued -= 1
            if slot.active:  # else dropped while this request waited: take another key
                break
        await self.ip_limiter.acquire()
        slot.limiter.restamp(stamp)  # no-op unless the IP limiter made this request wait
        return slot

    async def _request(
        self, method: str, path: str, params: Mapping[str, Any] | None, with_headers: bool = False,
        *, json_body: Any = None, retry_transient: bool = True,
    ):
        """Send one request with pacing and retries; return the JSON body (and headers if asked).

        ``json_body`` is sent as the JSON request body; ``retry_transient=False`` raises a transient
        failure at once, except a connection that could not be opened (see :meth:`post_once`)."""
        url = self._url(path)
        started = self._clock()
        deadline = started + self.config.max_retry_s
        transient = first_contact = 0
        while True:
            response: httpx.Response | None = None
            failure: RankTrackerError | None = None
            async with self._in_flight:
                slot = await self._acquire_pacing()
                if self._t0 is None:
                    self._t0 = self._clock()
                    self.stats.started_at = datetime.now(UTC)
                self.stats.requests += 1
                slot.stats.requests += 1
                try:
                    response = await self._http.request(method, path, params=params, json=json_body,
                                                        headers={"Authorization": slot.key})
                except httpx.HTTPError as exc:
                    failure = self._transport_failure(exc, method, url)
            self.stats.elapsed = self._clock() - self._t0

            if response is not None:
                self._note_response(response)
                status = response.status_code
                if 200 <= status < 300:
                    body = _parse_body(response)
                    if isinstance(body, dict):
                        return (body, response.headers) if with_headers else body
                    failure = TransportError(
                        f"the API answered {status} but the body is not the JSON envelope "
                        f"({len(response.content)} bytes, content-type "
                        f"{response.headers.get('content-type', 'none')!r})",
                        kind="invalid_json", status=status, method=method, url=url,
                    )
                elif status == 429:
                    slot.stats.rate_limited += 1
                    await self._on_rate_limited(response, method, url, deadline, slot)
                    continue
                elif status == 401 and len(self._slots) > 1:
                    if self._drop_key(slot):
                        continue  # the key was deleted (a rotation): the request goes to another key
                    raise self._no_key_left(method, url)
                elif status >= 500:
                    failure = error_from_response(status, _parse_body(response), method=method, url=url)
                else:
                    raise error_from_response(status, _parse_body(response), method=method, url=url)

            assert failure is not None
            if not retry_transient and not (isinstance(failure, TransportError) and failure.kind == "connect"):
                raise failure  # the request may have been acted on: the caller reads back, never a blind retry
            if isinstance(failure, TransportError) and failure.kind == "connect" and not self._host_answered:
                first_contact += 1
                if first_contact >= self.config.first_contact_attempts:
                    raise self._unreachable(failure, first_contact)
                delay = self.config.first_contact_backoff_s
            else:
                transient += 1
                if transient >= self.config.max_attempts:
                    raise _gave_up(failure, transient, f"after {transient} attempts")
                delay = self._backoff(transient)
                if self._clock() + delay > deadline:
                    raise _gave_up(failure, transient,
                                   f"after {transient} attempts; max_retry_s={self.config.max_retry_s} reached")
            self.stats.retries += 1
            reason = failure.kind if isinstance(failure, TransportError) else f"status {failure.status}"
            logger.info("retrying %s %s in %.2f s after %s (%s; attempt %d)", method, url, delay, reason,
                        failure.detail, transient + first_contact)
            self._emit({"event": "retry", "method": method, "url": url, "reason": reason,
                        "status": failure.status, "attempt": transient + first_contact, "delay_s": delay})
            await self._sleep(delay)

    def _note_response(self, response: httpx.Response) -> None:
        self._host_answered = True
        by_status = self.stats.responses_by_status
        by_status[response.status_code] = by_status.get(response.status_code, 0) + 1
        self.stats.bytes += len(response.content)
        if self.server_date is None and "date" in response.headers:
            try:
                self.server_date = parsedate_to_datetime(response.headers["date"]).astimezone(UTC).date()
            except (TypeError, ValueError):
                logger.warning("unparseable Date header %r", response.headers["date"])

    def _drop_key(self, slot: _KeySlot) -> bool:
        """A 401 for ``slot``'s key: drop it for the rest of the run; True while another key is left."""
        slot.stats.rejected += 1
        if slot.active:
            slot.active = False
            slot.stats.dropped = True
            left = self.active_keys
            logger.warning(
                "%s: API key %d of %d was rejected (401: deleted or rotated?); dropped for the rest of the "
                "run, %d key(s) left%s", self.label or "account", slot.position, len(self._slots), left,
                "" if left else "; every key of this account has now been rejected")
            self._emit({"event": "key_dropped", "position": slot.position, "keys_left": left})
        return self.active_keys > 0

    def _no_key_left(self, method: str | None = None, url: str | None = None) -> RankTrackerError:
        return AuthenticationError(
            f"every API key of {self.label or 'the account'} ({len(self._slots)} in its list) was rejected "
            f"with 401. {AuthenticationError.advice} [{method or 'GET'} {url or safe_url(self.base_url)} -> 401]",
            status=401, method=method, url=url)

    async def _on_rate_limited(self, response: httpx.Response, method: str, url: str, deadline: float,
                               slot: _KeySlot):
        self.stats.rate_limited += 1
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        if retry_after is None:  # the spec always sends it; be safe: one window
            retry_after = self.config.window_s
        ceiling = _header_int(response.headers, "RateLimit-Limit")
        if ceiling == self.config.per_ip_limit and ceiling != self.config.per_key_limit:
            limiter, scope = self.ip_limiter, "ip"
        else:
            limiter, scope = slot.limiter, f"key {slot.position}"
        new_pause = limiter.note_rate_limited(retry_after)
        if self._clock() + retry_after > deadline:
            raise error_from_response(429, _parse_body(response), method=method, url=url,
                                      retry_after=retry_after)
        if new_pause:
            logger.warning("429 rate limited (%s ceiling %s): pausing for %.1f s; limit now %d per %.0f s",
                           scope, ceiling, retry_after, limiter.limit, limiter.window_s)
        self._emit({"event": "rate_limited", "url": url, "scope": scope, "retry_after_s": retry_after,
                    "new_pause": new_pause, "limit": limiter.limit})

    def _backoff(self, failures: int) -> float:
        cap = min(self.config.backoff_max_s, self.config.backoff_base_s * 2 ** (failures - 1))
        return cap / 2 + self._rng.uniform(0, cap / 2)

    def _transport_failure(self, exc: httpx.HTTPError, method: str, url: str) -> TransportError:
        self.stats.transport_errors += 1
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            kind = "connect"
        elif isinstance(exc, httpx.TimeoutException):
            kind = "timeout"
        elif isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
            kind = "dropped"
        else:
            kind = "transport"
        text = redact(str(exc) or type(exc).__name__, self._keys)
        return TransportError(
            f"{kind.replace('_', ' ')} failure: {type(exc).__name__}: {text} [{method} {url}]",
            kind=kind, detail=f"{type(exc).__name__}: {text}", method=method, url=url,
        )

    def _unreachable(self, failure: RankTrackerError, tries: int) -> TransportError:
        return TransportError(
            f"could not reach the rank-tracking API at {safe_url(self.base_url)} ({failure.detail}; "
            f"{tries} tries). Check RANK_TRACKER_BASE_URL (unset means the embedded sandbox), that the host "
            "name resolves (DNS), that the server is running and accepts connections on that port, and any "
            f"proxy or firewall in between [{failure.method} {failure.url}]",
            kind="unreachable", detail=failure.detail, method=failure.method, url=failure.url,
        )

    def _emit(self, event: dict) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception:  # a progress callback must not break the extraction
            logger.exception("on_event callback failed for event %r", event.get("event"))


def _record_id(record: Any) -> Any:
    if isinstance(record, dict) and record.get("id") is not None:
        return str(record["id"])
    # no id (the spec says records have one): deduplicate by content
    return json.dumps(record, sort_keys=True, default=str)


def _parse_body(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        return None


def _gave_up(failure: RankTrackerError, attempts: int, how: str) -> RankTrackerError:
    failure.message = f"{failure.message} (gave up {how})"
    failure.args = (failure.message,)
    return failure
