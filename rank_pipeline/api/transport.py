"""One request to the rank-tracking API, paced and retried (spec "Authentication", "Errors", "Limits").

:class:`Transport` sends one account's requests through one httpx transport (a connection pool), each
attempt paced by the key pool; 429s wait ``Retry-After`` (bounded by ``max_retry_s``), transient faults back off (up to
``max_attempts``), a never-answering host fails fast (``TransportError(kind="unreachable")``), other
statuses raise at once. The key is sent only in ``Authorization``, only over HTTPS (or loopback), and is in
no message. Retry policy: docs/concepts/api-client.md, "One request".
"""

from __future__ import annotations

import asyncio
import importlib.util
import ipaddress
import json
import logging
import math
import random
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec

from .config import ClientConfig, RequestStats
from .errors import RankTrackerError, TransportError, error_from_response, redact, safe_url
from .keys import KeyPool, KeySlot
from .network import AsyncioTransport

logger = logging.getLogger("rank_pipeline.api")

_USER_AGENT = "rank-pipeline/0.1 (+httpx)"
_HEADERS = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate", "Connection": "keep-alive",
            "User-Agent": _USER_AGENT}
"""Every request's headers but ``Authorization`` (httpx's client defaults, with JSON accepted; bodies in the
encodings the standard library decodes)."""

# httpcore runs `import sniffio` for every lock, event and request it handles; when sniffio is not installed
# each of those searches sys.path again (a failed import is not cached), about 1 ms per 1,000 records. Marked
# absent once, the import fails at once, as it would anyway.
if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
    sys.modules["sniffio"] = None  # type: ignore[assignment]


class _ProcessTally:
    """Every request this process sent (each attempt, refused ones included) and every 429 it got, over all
    clients; a run that fails before its metadata is written (a refused key) still counts what it sent."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests = 0
        self._rate_limited = 0

    def add(self, requests: int = 0, rate_limited: int = 0) -> None:
        with self._lock:
            self._requests += requests
            self._rate_limited += rate_limited

    def counts(self) -> tuple[int, int]:
        """``(requests sent, 429s received)`` since the process started."""
        with self._lock:
            return self._requests, self._rate_limited


_TALLY = _ProcessTally()


def requests_sent() -> tuple[int, int]:
    """``(requests sent, 429s received)`` by every client of this process since it started; the command
    line's run summary counts a run as the difference across it."""
    return _TALLY.counts()


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


def header_int(headers: httpx.Headers, name: str) -> int | None:
    """The integer value of header ``name``; None when absent or not an integer."""
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


_JSON = msgspec.json.Decoder()


def decode_json(content: bytes) -> Any:
    """A JSON body (msgspec; the standard library for what msgspec refuses, e.g. ``NaN``); None when
    it is empty or not JSON."""
    if not content:
        return None
    try:
        return _JSON.decode(content)
    except msgspec.DecodeError:
        pass
    try:
        return json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None


def _parse_body(response: httpx.Response) -> Any:
    """The response's JSON body; None when it is empty or not JSON."""
    return decode_json(response.content)


def _gave_up(failure: RankTrackerError, attempts: int, how: str) -> RankTrackerError:
    failure.message = f"{failure.message} (gave up {how})"
    failure.args = (failure.message,)
    return failure


@dataclass
class _Tries:
    """Failed attempts of one request so far: transient ones, and failures to connect before first contact."""

    transient: int = 0
    first_contact: int = 0


class Transport:
    """The HTTP side of one account's client: requests, pacing through its key ``pool``, retries.

    ``base_url``: checked (:func:`check_base_url`); ``config``: ``ClientConfig``; ``stats``: the client's
    ``RequestStats``; ``transport``: an httpx transport for tests (None: the network); ``emit`` gets
    ``{"event": "retry" | "rate_limited", ...}``; ``clock``, ``sleep``, ``rng``: seconds, and backoff jitter.
    """

    def __init__(self, base_url: str, pool: KeyPool, config: ClientConfig, stats: RequestStats, *,
                 transport: httpx.AsyncBaseTransport | None, emit: Callable[[dict], None],
                 clock: Callable[[], float], sleep: Callable[[float], Awaitable[None]],
                 rng: random.Random) -> None:
        self.base_url = base_url
        self.stats = stats
        self.server_date: date | None = None
        self._pool = pool
        self._config = config
        self._emit = emit
        self._clock = clock
        self._sleep = sleep
        self._rng = rng
        in_flight = config.max_in_flight * len(pool)  # each key keeps its own pipeline full
        self._in_flight = asyncio.Semaphore(in_flight)
        limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
        self._http_transport = transport if transport is not None else AsyncioTransport(limits)
        self._timeouts = httpx.Timeout(config.timeout_s, connect=config.connect_timeout_s).as_dict()
        self._host_answered = False
        self._t0: float | None = None

    def url(self, path: str) -> str:
        """The full URL of ``path``, safe to show (no credentials)."""
        return safe_url(self.base_url + path)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http_transport.aclose()

    async def request(
        self, method: str, path: str, params: Mapping[str, Any] | None, with_response: bool = False,
        *, json_body: Any = None, retry_transient: bool = True, decode: Callable[[bytes], Any] | None = None,
    ):
        """Send one request with pacing and retries; return the JSON body (a dict), with the
        ``httpx.Response`` (headers, ``content``) when ``with_response``. ``retry_transient=False`` raises a transient failure at once (except a connection never
        opened); ``decode`` turns a 2xx body into the result (default :func:`decode_json`).

        Raises RankTrackerError subclasses (docs/concepts/api-client.md, "One request").
        """
        url = self.url(path)
        deadline = self._clock() + self._config.max_retry_s
        tries = _Tries()
        failure: RankTrackerError | None
        while True:
            slot, response, failure = await self._attempt(method, path, params, json_body, url)
            if response is not None:
                status = response.status_code
                if 200 <= status < 300:
                    body = (decode or decode_json)(response.content)
                    if isinstance(body, dict | msgspec.Struct):
                        return (body, response) if with_response else body
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
                elif status == 401 and len(self._pool) > 1:
                    if self._pool.drop(slot):
                        continue  # the key was deleted (a rotation): the request goes to another key
                    raise self._pool.no_key_left(method, url)
                elif status >= 500:
                    failure = error_from_response(status, _parse_body(response), method=method, url=url)
                else:
                    raise error_from_response(status, _parse_body(response), method=method, url=url)

            assert failure is not None
            delay = self._retry_delay(failure, tries, deadline, retry_transient)
            self.stats.retries += 1
            attempt = tries.transient + tries.first_contact
            reason = failure.kind if isinstance(failure, TransportError) else f"status {failure.status}"
            logger.info("retrying %s %s in %.2f s after %s (%s; attempt %d)", method, url, delay, reason,
                        failure.detail, attempt)
            self._emit({"event": "retry", "method": method, "url": url, "reason": reason,
                        "status": failure.status, "attempt": attempt, "delay_s": delay})
            await self._sleep(delay)

    async def _attempt(self, method: str, path: str, params: Mapping[str, Any] | None, json_body: Any,
                       url: str) -> tuple[KeySlot, httpx.Response | None, TransportError | None]:
        """One paced attempt: the key used, and the response or the failure to get one."""
        response: httpx.Response | None = None
        failure: TransportError | None = None
        async with self._in_flight, self._pool.sending() as slot:
            if self._t0 is None:
                self._t0 = self._clock()
                self.stats.started_at = datetime.now(UTC)
            self.stats.requests += 1
            slot.stats.requests += 1
            _TALLY.add(requests=1)
            try:
                response = await self._send(method, path, params, json_body, slot.key)
            except httpx.HTTPError as exc:
                failure = self._transport_failure(exc, method, url)
        self.stats.elapsed = self._clock() - self._t0
        if response is not None:
            self._note_response(response)
        return slot, response, failure

    async def _send(self, method: str, path: str, params: Mapping[str, Any] | None, json_body: Any,
                    key: str) -> httpx.Response:
        """One request through the httpx transport, its body read: httpx's ``Request`` and ``Response``
        without ``httpx.AsyncClient``'s per-request layers (cookies, auth flow, redirects, hooks), none of
        which this API uses (docs/concepts/api-client.md, "The HTTP connection").

        Raises:
            httpx.HTTPError: as the transport raises it (connect, timeout, protocol, read errors).
        """
        request = httpx.Request(method, self.base_url + path, params=params, json=json_body,
                                headers={**_HEADERS, "Authorization": key}, extensions={"timeout": self._timeouts})
        response = await self._http_transport.handle_async_request(request)
        response.request = request
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response

    def _retry_delay(self, failure: RankTrackerError, tries: _Tries, deadline: float,
                     retry_transient: bool) -> float:
        """Seconds to wait before trying again after ``failure``; raises it when no retry is left."""
        connect = isinstance(failure, TransportError) and failure.kind == "connect"
        if not retry_transient and not connect:
            raise failure  # the request may have been acted on: the caller reads back, never a blind retry
        if connect and not self._host_answered:
            tries.first_contact += 1
            if tries.first_contact >= self._config.first_contact_attempts:
                raise self._unreachable(failure, tries.first_contact)
            return self._config.first_contact_backoff_s
        tries.transient += 1
        if tries.transient >= self._config.max_attempts:
            raise _gave_up(failure, tries.transient, f"after {tries.transient} attempts")
        delay = self._backoff(tries.transient)
        if self._clock() + delay > deadline:
            raise _gave_up(failure, tries.transient,
                           f"after {tries.transient} attempts; max_retry_s={self._config.max_retry_s} reached")
        return delay

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

    async def _on_rate_limited(self, response: httpx.Response, method: str, url: str, deadline: float,
                               slot: KeySlot):
        self.stats.rate_limited += 1
        _TALLY.add(rate_limited=1)
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        if retry_after is None:  # the spec always sends it; be safe: one window
            retry_after = self._config.window_s
        ceiling = header_int(response.headers, "RateLimit-Limit")
        if ceiling == self._config.per_ip_limit and ceiling != self._config.per_key_limit:
            limiter, scope = self._pool.ip_limiter, "ip"
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
        cap = min(self._config.backoff_max_s, self._config.backoff_base_s * 2 ** (failures - 1))
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
        text = redact(str(exc) or type(exc).__name__, self._pool.keys)
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
