"""The sandbox's middleware for ``/v1``: per-IP limit (429), authentication (401, empty body), per-key limit
(429), plan (403, empty body), then faults; every response carries ``Date`` (the simulated day). Order and
stats: docs/concepts/sandbox.md, "Authentication, limits and faults, in order".
"""

from __future__ import annotations

import asyncio
import email.utils
import re
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from random import Random

from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rank_pipeline.sandbox import assumptions as A
from rank_pipeline.sandbox.faults import DroppedConnection, FaultInjector
from rank_pipeline.sandbox.limits import RateLimiter, rate_limited_response
from rank_pipeline.sandbox.world import Account

__all__ = ["SandboxMiddleware", "SandboxStats", "error_response", "http_date", "key_ident"]

_KEYWORD_LIST = re.compile(r"^/v1/domains/([^/]+)/keywords/?$")
UNAUTHENTICATED = "unauthenticated"


def key_ident(account: str, position: int) -> str:
    """How stats and the per-key limit name a key: the account name for its first key, else
    ``<account>#<position>`` (never the key itself)."""
    return account if position == 1 else f"{account}#{position}"


def error_response(status: int, code: str, detail: str, **extra) -> JSONResponse:
    """A spec error envelope (spec, "Errors"): ``{"errors": [{"status", "code", "detail", **extra}]}``."""
    entry = {"status": status, "code": code, "detail": detail, **extra}
    return JSONResponse({"errors": [entry]}, status_code=status)


def http_date(day, now: datetime | None = None) -> str:
    """RFC 9110 ``Date`` value for simulated ``day`` at the current UTC time of day."""
    now = now or datetime.now(UTC)
    return email.utils.format_datetime(datetime.combine(day, now.time().replace(microsecond=0), tzinfo=UTC), usegmt=True)


class SandboxStats:
    """Request counts for ``GET /_sandbox/stats``. Thread-safe.

    ``snapshot()`` -> ``{"keys": {<key_ident or "unauthenticated">: {"requests", "rate_limited",
    "outside_requests", "statuses": {"200": n, ...}}}, "ips": {<ip>: {"requests", "rate_limited"}},
    "faults": {"drop": n, "hang": n, "error": n, "invalid_json": n, "shift": n}}``.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Zero all counts."""
        with self._lock:
            self._keys: dict[str, dict] = {}
            self._ips: dict[str, dict] = {}
            self._faults = {"drop": 0, "hang": 0, "error": 0, "invalid_json": 0, "shift": 0}

    def ip_request(self, ip: str, status: int | None = None) -> None:
        with self._lock:
            entry = self._ips.setdefault(ip, {"requests": 0, "rate_limited": 0})
            if status is None:
                entry["requests"] += 1
            elif status == 429:
                entry["rate_limited"] += 1

    def key_response(self, key: str, status: int) -> None:
        with self._lock:
            entry = self._keys.setdefault(key, {"requests": 0, "rate_limited": 0, "statuses": {}})
            entry["requests"] += 1
            entry["rate_limited"] += status == 429
            entry["statuses"][str(status)] = entry["statuses"].get(str(status), 0) + 1

    def fault(self, name: str) -> None:
        with self._lock:
            self._faults[name] += 1

    def snapshot(self, outside: dict[str, int] | None = None) -> dict:
        with self._lock:
            keys = {
                k: {**v, "statuses": dict(v["statuses"]), "outside_requests": (outside or {}).get(k, 0)}
                for k, v in self._keys.items()
            }
            return {"keys": keys, "ips": {k: dict(v) for k, v in self._ips.items()}, "faults": dict(self._faults)}


class SandboxMiddleware:
    """Pure ASGI middleware implementing the order of docs/concepts/sandbox.md, "Authentication, limits and
    faults, in order".

    ``world`` is the World; ``limiter``, ``injector`` and ``stats`` are shared with the control
    endpoints; ``sleep`` is awaited for latency and hung requests (tests pass a recorder).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        world,
        limiter: RateLimiter,
        injector: FaultInjector,
        stats: SandboxStats,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        self.app, self.world, self.limiter, self.injector, self.stats = app, world, limiter, injector, stats
        self.sleep = sleep
        self._arrivals: dict[str, int] = {}  # authenticated arrivals per key ident (the revoke fault)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send_with_date = _with_date(send, self.world)
        path = scope["path"]
        if not (path == "/v1" or path.startswith("/v1/")):
            await self.app(scope, receive, send_with_date)
            return

        ip = (scope.get("client") or ("unknown", 0))[0]
        self.stats.ip_request(ip)
        rejection = self.limiter.hit_ip(ip)
        account, bucket = self._authenticate(scope)

        async def reply(response: Response) -> None:
            self.stats.key_response(bucket, response.status_code)
            if response.status_code == 429:
                self.stats.ip_request(ip, 429)
            await response(scope, receive, send_with_date)

        if rejection is not None:
            await reply(rate_limited_response(rejection))
            return
        if account is None:
            await reply(Response(status_code=401))
            return
        rejection = self.limiter.hit_key(bucket)
        if rejection is not None:
            await reply(rate_limited_response(rejection))
            return
        if not account.api_enabled:
            await reply(Response(status_code=403))
            return
        scope.setdefault("state", {})["account"] = account
        await self._route_with_faults(account, scope, receive, send_with_date, bucket, reply)

    def _authenticate(self, scope: Scope) -> tuple[Account | None, str]:
        """``(account, bucket)``: the account whose valid key is the request's one ``Authorization`` value
        (None when there is none, several, or the key is wrong or revoked), and the name stats and the
        per-key limit count the request under. Applies the revoke fault (key rotation)."""
        world = self.world
        account = None
        known = None  # (account name, key position), for a key the world knows (revoked or not)
        values = [v for k, v in scope.get("headers", []) if k.lower() == b"authorization"]
        if len(values) == 1:
            key = values[0].decode("latin-1")
            account = world.account_by_key(key)
            known = world.key_position(key)
        # stats and the per-key limit count per key: "acme" for an account's first key, "acme#2" ...
        bucket = key_ident(*known) if known is not None else UNAUTHENTICATED
        faults = self.injector.faults
        if account is not None and known is not None and faults.revoke_after and known[1] == faults.revoke_position:
            # counted on arrival (not on reply), so requests in flight cannot slip past the switch
            served = self._arrivals[bucket] = self._arrivals.get(bucket, 0) + 1
            if served > faults.revoke_after:
                world.revoke_key(account.name, known[1])  # key rotation: the old key is deleted now
                account = None
        return account, bucket

    async def _route_with_faults(
        self, account: Account, scope: Scope, receive: Receive, send: Send, bucket: str,
        reply: Callable[[Response], Awaitable[None]],
    ) -> None:
        """The route for an authenticated request, after the faults the injector decides for it (latency,
        shifting records, a hung request, a 5xx, a dropped connection, invalid JSON)."""
        decision = self.injector.decide(records=_page_size(scope), keyword_list=self._is_keyword_list(scope))
        if decision.latency_s > 0:
            await self.sleep(decision.latency_s)
        if decision.shift:
            self.stats.fault("shift")
            self._shift(account, scope, Random(decision.shift_seed))
        if decision.action == "hang":
            self.stats.fault("hang")
            await self.sleep(self.injector.faults.hang_s)
        elif decision.action == "error":
            self.stats.fault("error")
            await reply(_server_error(decision.error_status))
            return

        if decision.action in ("drop", "invalid_json"):
            await self._buffered(scope, receive, send, bucket, decision.action)
            return

        async def send_counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.stats.key_response(bucket, message["status"])
            await send(message)

        await self.app(scope, receive, send_counted)

    # ------------------------------------------------------------------ helpers

    def _is_keyword_list(self, scope: Scope) -> bool:
        return scope["method"] == "GET" and _KEYWORD_LIST.match(scope["path"]) is not None

    def _shift(self, account, scope: Scope, rng: Random) -> None:
        match = _KEYWORD_LIST.match(scope["path"])
        assert match is not None  # called for a keyword list only (_is_keyword_list)
        domain_id = match.group(1)
        if self.world.domain(account.account_id, domain_id) is None:
            return
        faults = self.injector.faults
        ids = self.world.keyword_ids(domain_id)
        for keyword_id in rng.sample(ids, min(faults.shift_deletes, len(ids))):
            self.world.delete_keyword(domain_id, keyword_id)
        for _ in range(faults.shift_inserts):
            self.world.insert_keyword(domain_id, rng)

    async def _buffered(self, scope: Scope, receive: Receive, send: Send, bucket: str,
                        action: str | None) -> None:
        start: Message | None = None
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, capture)
        assert start is not None, "the route sent no response"
        body = b"".join(chunks)
        self.stats.key_response(bucket, start["status"])
        if action == "invalid_json" and start["status"] != 200:
            action = None
        if action is None:
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        self.stats.fault(action)
        half = body[: max(1, len(body) // 2)]
        if action == "invalid_json":
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(half)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": half})
            return
        # drop: full Content-Length, half the body, then an exception: the server closes the connection
        await send(start)
        await send({"type": "http.response.body", "body": half, "more_body": True})
        raise DroppedConnection("sandbox fault: connection dropped mid-response (drop_rate)")


def _with_date(send: Send, world) -> Send:
    """``send`` with the ``Date`` header of every response start replaced by the world's simulated day."""

    async def send_with_date(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"date"]
            headers.append((b"date", http_date(world.today).encode()))
            message = {**message, "headers": headers}
        await send(message)

    return send_with_date


def _server_error(status: int) -> Response:
    """The 5xx fault's answer: a proxy's HTML page for 502, else the spec's error envelope."""
    if status == 502:
        html = "<html><head><title>502 Bad Gateway</title></head><body>Bad Gateway</body></html>"
        return HTMLResponse(html, status_code=502)
    detail = "The server met an internal error; retry later"
    return error_response(status, A.SERVER_ERROR_CODE, detail)


def _page_size(scope: Scope) -> int:
    """The page size a request asks for (per_page, capped at 1000, default 100); 1 if not a list."""
    path = scope["path"]
    is_list = scope["method"] == "GET" and (
        path.rstrip("/") in ("/v1/domains", "/v1/tags", "/v1/locations", "/v1/languages")
        or path.rstrip("/").endswith(("/keywords", "/competitors"))
    )
    if not is_list:
        return 1
    for part in scope.get("query_string", b"").decode("latin-1").split("&"):
        name, _, value = part.partition("=")
        if name == "per_page" and value.isdigit():
            return max(1, min(1000, int(value)))
    return 100
