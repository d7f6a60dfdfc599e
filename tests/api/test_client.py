"""RankTrackerClient: typed errors, retries per fault kind, 429 handling, secrecy of the key, URL rules,
unreachable hosts, stats and events, several accounts sharing one IP limiter.

Everything except the unreachable-host tests runs on a virtual clock with httpx.MockTransport."""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import math
import pickle
import random
import socket
from datetime import UTC, date, datetime
from email.utils import format_datetime

import httpx
import pytest

from rank_pipeline.api import (
    AuthenticationError,
    BadRequestError,
    ClientConfig,
    NotFoundError,
    PermissionDeniedError,
    QuotaExceededError,
    RankTrackerClient,
    RankTrackerError,
    RateLimitedError,
    RequestStats,
    ServerError,
    SlidingWindowLimiter,
    TransportError,
    ValidationError,
)

BASE = "https://api.test"
KEY = "rk_live_S3CRET-9f8e7d6c5b4a"
USAGE = {"data": {"id": "acc-1", "type": "usage", "attributes": {"apiEnabled": True}}}


def make_client(handler, *, key=KEY, events=None, **config) -> RankTrackerClient:
    loop = asyncio.get_running_loop()
    return RankTrackerClient(BASE, key, config=ClientConfig(**config), transport=httpx.MockTransport(handler),
                             clock=loop.time, on_event=events.append if events is not None else None,
                             rng=random.Random(0))


class Script:
    """Answers requests from a list of steps (a status, an exception, or a callable), then 200 USAGE."""

    def __init__(self, *steps) -> None:
        self.steps = list(steps)
        self.requests: list[httpx.Request] = []
        self.times: list[float] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        self.times.append(asyncio.get_running_loop().time())
        step = self.steps.pop(0) if self.steps else 200
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            return step(request)
        if step == 200:
            return httpx.Response(200, json=USAGE)
        if step == "bad-json":
            return httpx.Response(200, content=b"<html>gateway</html>", headers={"content-type": "text/html"})
        return httpx.Response(step, json={"errors": [{"status": step, "code": "oops", "detail": f"status {step}"}]})


def get_usage(handler, **config):
    async def main():
        async with make_client(handler, **config) as client:
            return await client.get("/v1/account/usage"), client

    return main()


# -- success, headers, stats ---------------------------------------------------------------------


def test_get_returns_data_sends_the_raw_key_and_records_server_date_and_stats(vrun):
    day = datetime(2026, 11, 21, 23, 30, tzinfo=UTC)

    def handler(request):
        assert request.headers["Authorization"] == KEY  # the key alone, no "Bearer"
        return httpx.Response(200, json=USAGE, headers={"Date": format_datetime(day, usegmt=True)})

    data, client = vrun(get_usage(handler))
    assert data == USAGE["data"]
    assert client.server_date == date(2026, 11, 21)
    assert client.stats.requests == 1 and client.stats.responses_by_status == {200: 1}
    assert client.stats.bytes == len(httpx.Response(200, json=USAGE).content)
    assert client.stats.started_at is not None


def test_a_request_carries_the_headers_timeouts_query_and_body_and_its_response_is_read_whole_and_closed(vrun):
    """What a request sends and how its response is read, now that requests go to the transport, not through
    ``httpx.AsyncClient``: the client's headers, the timeouts as the request's extension, the query and the JSON
    body; a gzip body decoded; every response closed, a body cut mid-read retried as a dropped connection."""
    closed: list[bool] = []

    class Body(httpx.AsyncByteStream):
        def __init__(self, parts):
            self.parts = parts

        async def __aiter__(self):
            for part in self.parts:
                if isinstance(part, BaseException):
                    raise part
                yield part

        async def aclose(self):
            closed.append(True)

    seen: list[httpx.Request] = []

    def handler(request):
        seen.append(request)
        payload = json.dumps(USAGE).encode()
        if len(seen) == 2:  # the GET's first answer is cut after its first bytes
            return httpx.Response(200, stream=Body([payload[:5], httpx.ReadError("peer reset")]))
        return httpx.Response(200, headers={"Content-Encoding": "gzip"}, stream=Body([gzip.compress(payload)]))

    async def main():
        async with make_client(handler, timeout_s=12.5, connect_timeout_s=3.0) as client:
            created = await client.post_once("/v1/tags", {"data": {"attributes": {"name": "n"}}})
            got = await client.get("/v1/domains", params={"page": 2, "per_page": 1000})
            return created, got, client

    created, got, client = vrun(main())
    assert created == USAGE and got == USAGE["data"]  # gzip decoded (post_once gives the whole body)
    assert len(seen) == 3 and len(closed) == 3  # the cut body was retried, every response closed
    assert client.stats.retries == 1
    post, get = seen[0], seen[2]
    for request in (post, get):
        assert request.headers["Authorization"] == KEY
        assert request.headers["Accept"] == "application/json"
        assert request.headers["Accept-Encoding"] == "gzip, deflate"
        assert request.headers["Connection"] == "keep-alive"
        assert request.headers["User-Agent"].startswith("rank-pipeline/")
        assert request.extensions["timeout"] == {"connect": 3.0, "read": 12.5, "write": 12.5, "pool": 12.5}
    assert (post.method, str(post.url)) == ("POST", f"{BASE}/v1/tags")
    assert json.loads(post.content) == {"data": {"attributes": {"name": "n"}}}
    assert post.headers["Content-Type"] == "application/json"
    assert (get.method, str(get.url)) == ("GET", f"{BASE}/v1/domains?page=2&per_page=1000")


def test_requests_per_minute_is_requests_over_elapsed_seconds_times_60_and_zero_before_time_passed():
    assert RequestStats(requests=30, elapsed=15.0).requests_per_minute == 120.0
    assert RequestStats(requests=7, elapsed=0.0).requests_per_minute == 0.0
    assert RequestStats().requests_per_minute == 0.0


# -- errors that are never retried ------------------------------------------------------------------


def _entry(status, code, detail, pointer=None, title=None):
    entry = {"status": status, "code": code, "detail": detail}
    if pointer:
        entry["source"] = {"pointer": pointer}
    if title:
        entry["title"] = title
    return entry


@pytest.mark.parametrize(
    ("status", "body", "cls", "expected"),
    [
        (401, None, AuthenticationError, "the API key was rejected (missing, malformed, wrong or deleted)"),
        (403, None, PermissionDeniedError, "the plan has no API access or the action is forbidden"),
        (404, {"errors": [_entry(404, "not_found", "Domain not found")]}, NotFoundError, "Domain not found"),
        (402, {"errors": [_entry(402, "over_quota", "Keyword limit reached")]}, QuotaExceededError,
         "allowance would be exceeded; nothing was created: Keyword limit reached"),
        (400, {"errors": [_entry(400, "bad_request", "missing data")]}, BadRequestError, "missing data"),
        (422, {"errors": [_entry(422, "invalid", "match_type is not valid", "/match_type")]}, ValidationError,
         "match_type is not valid"),
    ],
)
def test_client_errors_are_typed_not_retried_and_say_what_to_do(vrun, status, body, cls, expected):
    calls = []

    def handler(request):
        calls.append(request)
        return httpx.Response(status, json=body) if body else httpx.Response(status)

    with pytest.raises(cls) as info:
        vrun(get_usage(handler))
    error = info.value
    assert len(calls) == 1
    assert error.status == status and error.method == "GET" and error.url == BASE + "/v1/account/usage"
    assert expected in str(error)
    if status == 401:
        assert "RANK_TRACKER_API_KEY" in str(error) and error.code is None and error.errors == []
    if status == 403:
        assert "GET /v1/account/usage shows whether it has API access" in str(error)  # where to look
    if body:
        assert error.code == body["errors"][0]["code"] and error.errors == body["errors"]


def test_validation_error_carries_every_entry_and_pointer(vrun):
    entries = [
        _entry(422, "invalid_reference_value", "frequency 'hourly' is not known", "/frequency", "Unknown frequency"),
        _entry(422, "invalid_reference_value", "location 'Paris' ...", "/search_engines/0/location",
               "Unknown location"),
        _entry(422, "invalid_reference_value", "language '0000' cannot be tracked", "/search_engines/0/language",
               "Unknown language"),
    ]

    with pytest.raises(ValidationError) as info:
        vrun(get_usage(lambda request: httpx.Response(422, json={"errors": entries})))
    error = info.value
    assert error.errors == entries
    assert error.pointers == ["/frequency", "/search_engines/0/location", "/search_engines/0/language"]
    assert error.pointer == "/frequency" and error.code == "invalid_reference_value"
    for entry in entries:
        assert entry["title"] in str(error) and entry["source"]["pointer"] in str(error)
    assert "(3 errors)" in str(error)


def test_errors_survive_pickling_with_their_fields():
    error = ValidationError(status=422, code="invalid", detail="bad", pointer="/x",
                            errors=[{"code": "invalid", "source": {"pointer": "/x"}}], method="GET",
                            url=BASE + "/v1/x")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is ValidationError
    assert (str(copy), copy.pointers, copy.url, copy.status) == (str(error), ["/x"], error.url, 422)


# -- transient faults ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [500, 502, 503, "bad-json", httpx.ReadTimeout("read timed out"),
     httpx.RemoteProtocolError("Server disconnected without sending a response.")],
    ids=["500", "502", "503", "invalid-json", "timeout", "dropped"],
)
def test_transient_faults_are_retried_with_backoff_and_succeed_within_bounds(vrun, fault):
    # the host answers first (so a transport fault is transient, not first contact), then 3 faults
    script = Script(200, fault, fault, fault)

    async def main():
        async with make_client(script) as client:
            await client.get("/v1/account/usage")
            data = await client.get("/v1/account/usage")
            return data, client.stats

    data, stats = vrun(main())
    assert data == USAGE["data"]
    assert len(script.requests) == 5 and stats.retries == 3 and stats.requests == 5
    gaps = [b - a for a, b in zip(script.times[1:], script.times[2:], strict=False)]
    # exponential backoff with equal jitter: delay n lies in [base*2^(n-1)/2, base*2^(n-1)]
    for n, gap in enumerate(gaps, start=1):
        assert 0.5 * 2 ** (n - 1) / 2 <= gap <= 0.5 * 2 ** (n - 1) + 1e-6


@pytest.mark.parametrize(
    ("fault", "cls", "kind"),
    [(503, ServerError, None), ("bad-json", TransportError, "invalid_json"),
     (httpx.ReadTimeout("read timed out"), TransportError, "timeout"),
     (httpx.RemoteProtocolError("Server disconnected"), TransportError, "dropped"),
     (httpx.ConnectError("All connection attempts failed"), TransportError, "connect")],
    ids=["503", "invalid-json", "timeout", "dropped", "connect-after-contact"],
)
def test_transient_faults_give_up_after_max_attempts_with_a_typed_error(vrun, fault, cls, kind):
    script = Script(200, *([fault] * 20))

    async def main():
        async with make_client(script, max_attempts=4) as client:
            await client.get("/v1/account/usage")
            await client.get("/v1/account/usage")

    with pytest.raises(cls) as info:
        vrun(main())
    assert len(script.requests) == 1 + 4
    assert "gave up after 4 attempts" in str(info.value)
    if kind:
        assert info.value.kind == kind
    else:
        assert info.value.status == 503


def test_transient_retries_stop_at_the_total_time_bound(vrun):
    script = Script(*([500] * 50))

    async def main():
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        async with make_client(script, max_attempts=50, max_retry_s=20.0, backoff_base_s=2.0,
                               window_s=10.0) as client:
            try:
                await client.get("/v1/account/usage")
            except ServerError as error:
                return error, loop.time() - t0

    error, spent = vrun(main())
    assert spent <= 20.0
    assert 3 <= len(script.requests) < 50  # delays 1-2, 2-4, 4-8, 8-16 s: the bound stops it early
    assert "max_retry_s=20.0 reached" in str(error)


# -- 429 ------------------------------------------------------------------------------------------------


def rate_limited(retry_after: int, ceiling: int = 300):
    def respond(request):
        headers = {"Retry-After": str(retry_after), "RateLimit-Limit": str(ceiling),
                   "RateLimit-Remaining": "0", "RateLimit-Reset": str(retry_after)}
        body = {"errors": [{"status": 429, "code": "rate_limited", "detail": f"retry in {retry_after} s"}]}
        return httpx.Response(429, json=body, headers=headers)
    return respond


def test_a_burst_of_429s_pauses_the_key_once_and_every_request_resumes_after_retry_after(vrun):
    """16 requests in flight; the server refuses everything that arrives in the first 7 s."""
    events: list[dict] = []

    async def handler(request):
        loop = asyncio.get_running_loop()
        await asyncio.sleep(0.05)
        if loop.time() - handler.t0 < 7.0:
            return rate_limited(7)(request)
        handler.ok_times.append(loop.time() - handler.t0)
        return httpx.Response(200, json=USAGE)

    handler.ok_times = []

    async def main():
        handler.t0 = asyncio.get_running_loop().time()
        async with make_client(handler, events=events, max_in_flight=16) as client:
            results = await asyncio.gather(*(client.get("/v1/account/usage") for _ in range(40)))
            return results, client

    results, client = vrun(main())
    assert len(results) == 40 and all(r == USAGE["data"] for r in results)
    assert client.key_limiter.pauses == 1
    assert client.stats.rate_limited == 16 and client.stats.retries == 0
    assert min(handler.ok_times) >= 7.0
    assert sum(e["new_pause"] for e in events if e["event"] == "rate_limited") == 1
    assert client.ip_limiter.pauses == 0


def test_429s_do_not_spend_the_transient_retry_budget(vrun):
    script = Script(*([rate_limited(2)] * 8))
    data, client = vrun(get_usage(script, max_attempts=3))
    assert data == USAGE["data"] and len(script.requests) == 9 and client.stats.rate_limited == 8


def test_429_past_the_total_time_bound_raises_rate_limited_error_with_retry_after(vrun):
    script = Script(*([rate_limited(60)] * 10))
    with pytest.raises(RateLimitedError) as info:
        vrun(get_usage(script, max_retry_s=150.0))
    assert info.value.retry_after == 60 and info.value.code == "rate_limited"
    assert len(script.requests) == 3  # at 0, 60 and 120 s; waiting another 60 would pass 150 s


def test_429_naming_the_ip_ceiling_pauses_the_shared_ip_limiter(vrun):
    script = Script(rate_limited(3, ceiling=600))
    _, client = vrun(get_usage(script))
    assert client.ip_limiter.pauses == 1 and client.key_limiter.pauses == 0


# -- pacing through the client ------------------------------------------------------------------------


class FixedWindowServer:
    """Enforces per-key and per-IP fixed windows of unknown (random) alignment, like the spec's API."""

    def __init__(self, per_key: int, per_ip: int, window_s: float, seed: int) -> None:
        self.per_key, self.per_ip, self.window_s = per_key, per_ip, window_s
        self.offset = random.Random(seed).uniform(0, window_s)
        self.counts: dict[tuple, int] = {}
        self.arrivals: dict[str, list[float]] = {}
        self.refused = 0

    async def __call__(self, request):
        now = asyncio.get_running_loop().time()
        key = request.headers["Authorization"]
        self.arrivals.setdefault(key, []).append(now)
        k = math.floor((now - self.offset) / self.window_s)
        self.counts[(key, k)] = self.counts.get((key, k), 0) + 1
        self.counts[("ip", k)] = self.counts.get(("ip", k), 0) + 1
        await asyncio.sleep(0.2)
        if self.counts[(key, k)] > self.per_key or self.counts[("ip", k)] > self.per_ip:
            self.refused += 1
            return rate_limited(math.ceil((k + 1) * self.window_s + self.offset - now))(request)
        return httpx.Response(200, json=USAGE)


def max_in_any_window(times, window_s):
    times = sorted(times)
    best, j = 0, 0
    for i, start in enumerate(times):
        while j < len(times) and times[j] < start + window_s:
            j += 1
        best = max(best, j - i)
    return best


@pytest.mark.parametrize("seed", range(3))
def test_a_key_paced_at_its_ceiling_gets_no_429_whatever_the_window_alignment(vrun, seed):
    server = FixedWindowServer(per_key=20, per_ip=40, window_s=10.0, seed=seed)

    async def main():
        loop = asyncio.get_running_loop()
        async with make_client(server, per_key_limit=20, per_ip_limit=40, window_s=10.0) as client:
            await asyncio.gather(*(client.get("/v1/account/usage") for _ in range(100)))
            return client.stats, loop.time()

    stats, _ = vrun(main())
    assert server.refused == 0 and stats.rate_limited == 0
    assert max_in_any_window(server.arrivals[KEY], 10.0) <= 19  # floor(20 * 0.98)
    assert stats.requests == 100


@pytest.mark.parametrize("seed", range(3))
def test_several_accounts_share_one_ip_limiter_and_stay_under_both_ceilings(vrun, seed):
    server = FixedWindowServer(per_key=12, per_ip=16, window_s=10.0, seed=seed)
    config = ClientConfig(per_key_limit=12, per_ip_limit=16, window_s=10.0, safety_margin=0.0)

    async def main():
        loop = asyncio.get_running_loop()
        ip = SlidingWindowLimiter.for_ceiling(16, 10.0, 0.0, clock=loop.time)
        clients = [RankTrackerClient(BASE, key, config=config, ip_limiter=ip, clock=loop.time,
                                     transport=httpx.MockTransport(server)) for key in ("key-a", "key-b")]
        await asyncio.gather(*(c.get("/v1/account/usage") for c in clients for _ in range(45)))
        for c in clients:
            await c.aclose()
        return [c.stats.rate_limited for c in clients], ip.acquired

    rate_limited_counts, ip_acquired = vrun(main())
    a, b = server.arrivals["key-a"], server.arrivals["key-b"]
    assert len(a) == len(b) == 45 and ip_acquired == 90
    assert max_in_any_window(a + b, 10.0) <= 16
    assert max_in_any_window(a, 10.0) <= 12 and max_in_any_window(b, 10.0) <= 12
    assert rate_limited_counts == [0, 0] and server.refused == 0


# -- secrets and URLs ------------------------------------------------------------------------------------


def test_the_key_never_appears_in_errors_reprs_events_or_logs(vrun, caplog):
    caplog.set_level(logging.DEBUG)
    events: list[dict] = []
    leaks = Script(200, httpx.ConnectError(f"proxy said no to {KEY}"), 503, rate_limited(1), "bad-json")
    failures: list[BaseException] = []

    async def main():
        async with make_client(leaks, events=events, max_attempts=10) as client:
            await client.get("/v1/account/usage")
            await client.get("/v1/account/usage")
            for status in (401, 403, 404, 422, 500):
                async def fail(request, status=status):
                    return httpx.Response(status, json={"errors": [{"detail": "x", "code": "c"}]})
                bad = make_client(fail, max_attempts=1)
                try:
                    await bad.get("/v1/domains/1", params={"page": 1})
                except RankTrackerError as error:
                    failures.append(error)
                await bad.aclose()
            return client

    client = vrun(main())
    texts = [str(f) for f in failures] + [repr(f) for f in failures] + [repr(client), caplog.text,
                                                                       repr(events), repr(client.stats)]
    assert len(failures) == 5
    assert "[redacted]" in caplog.text  # the transport message that carried the key was scrubbed
    for text in texts:
        assert KEY not in text


def test_credentials_in_the_base_url_are_not_shown_in_errors(vrun):
    async def main():
        client = RankTrackerClient("https://user:pw-secret@api.test", KEY,
                                   transport=httpx.MockTransport(lambda r: httpx.Response(404)))
        async with client:
            await client.get("/v1/domains/x")

    with pytest.raises(NotFoundError) as info:
        vrun(main())
    assert "pw-secret" not in str(info.value) and "pw-secret" not in repr(info.value)


@pytest.mark.parametrize("url", ["http://api.example.com", "http://10.0.0.5:8080", "ftp://api.example.com",
                                 "api.example.com"])
def test_plain_http_to_a_non_loopback_host_and_non_urls_are_refused(url):
    with pytest.raises(ValueError) as info:
        RankTrackerClient(url, KEY)
    assert "https" in str(info.value) and KEY not in str(info.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8765", "http://localhost:1", "http://[::1]:9",
                                 "https://api.example.com/"])
def test_https_and_loopback_http_are_accepted(url):
    client = RankTrackerClient(url, KEY)
    assert client.base_url == url.rstrip("/")
    asyncio.run(client.aclose())


def test_an_empty_key_is_refused_with_what_to_set():
    with pytest.raises(ValueError, match="RANK_TRACKER_API_KEY"):
        RankTrackerClient(BASE, "  ")


# -- unreachable hosts (real sockets, real loop) ---------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("base_url", [f"http://127.0.0.1:{_closed_port()}", "https://no-such-host.invalid"],
                         ids=["connection-refused", "dns-failure"])
def test_an_unreachable_base_url_fails_fast_with_a_clear_error_naming_it(base_url):
    async def main():
        config = ClientConfig(first_contact_backoff_s=0.05)
        async with RankTrackerClient(base_url, KEY, config=config) as client:
            try:
                await client.get("/v1/account/usage")
            except TransportError as error:
                return error, client.stats

    error, stats = asyncio.run(main())
    assert error.kind == "unreachable"
    assert f"could not reach the rank-tracking API at {base_url}" in str(error)
    assert "RANK_TRACKER_BASE_URL" in str(error) and "DNS" in str(error)
    assert stats.requests == 2 and stats.retries == 1  # first contact: two quick tries, no long backoff
    assert KEY not in str(error)


# -- events -----------------------------------------------------------------------------------------------


def test_events_report_retries_and_a_failing_callback_does_not_break_the_request(vrun, caplog):
    def callback(event):
        raise RuntimeError("progress bar broke")

    async def main():
        loop = asyncio.get_running_loop()
        client = RankTrackerClient(BASE, KEY, transport=httpx.MockTransport(Script(502)), clock=loop.time,
                                   on_event=callback)
        async with client:
            return await client.get("/v1/account/usage")

    assert vrun(main()) == USAGE["data"]
    assert "on_event callback failed" in caplog.text

    events: list[dict] = []
    vrun_events = Script(200, 502)

    async def main2():
        async with make_client(vrun_events, events=events) as client:
            await client.get("/v1/account/usage")
            await client.get("/v1/account/usage")

    vrun(main2())
    retry = [e for e in events if e["event"] == "retry"]
    assert len(retry) == 1 and retry[0]["status"] == 502 and retry[0]["attempt"] == 1


def test_a_dropped_connection_on_first_contact_is_transient_not_unreachable(vrun):
    # the server accepted the connection, so the base URL is right: normal retries apply
    script = Script(*([httpx.RemoteProtocolError("Server disconnected")] * 3))
    data, client = vrun(get_usage(script))
    assert data == USAGE["data"] and client.stats.retries == 3


def test_connect_failures_on_first_contact_are_bounded_to_two_tries(vrun):
    script = Script(*([httpx.ConnectError("[Errno 111] Connection refused")] * 5))
    with pytest.raises(TransportError) as info:
        vrun(get_usage(script))
    assert info.value.kind == "unreachable" and len(script.requests) == 2
    assert "https://api.test" in str(info.value) and "Connection refused" in str(info.value)


def test_config_rejects_a_retry_bound_shorter_than_one_rate_window():
    with pytest.raises(ValueError, match="max_retry_s .* must be at least window_s"):
        ClientConfig(max_retry_s=30.0, window_s=60.0)
    with pytest.raises(ValueError, match="per_page must be at least 1"):
        ClientConfig(per_page=0)


def test_a_request_holds_its_pacing_slots_until_its_response_and_frees_them_whatever_the_outcome(vrun):
    """The door of ``KeyPool.sending``: a slow response keeps its key and IP slots past the window (so a
    request sent next cannot join it in a server window), and a failed or cancelled request frees them."""
    window_s = 1.0

    async def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/slow"):
            await asyncio.sleep(5.0)
        if request.url.path.endswith("/broken"):
            raise httpx.ReadError("connection reset")
        return httpx.Response(200, json=USAGE)

    async def main():
        loop = asyncio.get_running_loop()
        async with make_client(answer, per_key_limit=3, per_ip_limit=3, window_s=window_s, safety_margin=0.0,
                               max_attempts=1) as client:
            t0 = loop.time()
            slow = [asyncio.create_task(client.get("/v1/slow")) for _ in range(3)]
            await asyncio.sleep(0)
            await client.get("/v1/account/usage")  # waits for a slow one's response, then a window
            fast_at = loop.time() - t0
            await asyncio.gather(*slow)
            with pytest.raises(TransportError):
                await client.get("/v1/broken")
            cancelled = asyncio.create_task(client.get("/v1/slow"))
            await asyncio.sleep(0.5)
            cancelled.cancel()
            with pytest.raises(asyncio.CancelledError):
                await cancelled
            await asyncio.sleep(window_s)
            return fast_at, client.key_limiter.in_window(), client.ip_limiter.in_window()

    fast_at, key_left, ip_left = vrun(main())
    assert fast_at == pytest.approx(5.0 + window_s)
    assert key_left == ip_left == 0  # the failed and the cancelled request held nothing a window later
