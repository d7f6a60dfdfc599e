"""The client's connections (rank_pipeline.api.network): over HTTPS with the certificate verified, pages larger
than one read arrive whole on reused connections; an untrusted certificate is refused before any request is sent.

The server is a plain asyncio HTTPS server in the test's event loop, its certificate self-signed for 127.0.0.1 and
trusted through ``SSL_CERT_FILE`` (as httpx reads it); the referee is the bytes it served and what it counted.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import json
import re
import ssl

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from rank_pipeline.api import ClientConfig, RankTrackerClient, TransportError
from rank_pipeline.api.network import AsyncioBackend

PAGES, PER_PAGE = 3, 400  # about 190 KB a page: several reads of 64 KiB each
KEY = "test-key-over-tls"


def _certificate(tmp_path) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


def _page(number: int) -> bytes:
    records = [{"id": f"r{number}-{i}", "type": "thing", "attributes": {"text": "x" * 400, "n": i}}
               for i in range(PER_PAGE)]
    return json.dumps({"data": records}).encode()


class _Server:
    """Answers ``GET /v1/things?page=N`` with page N (keep-alive), counting connections and requests."""

    def __init__(self) -> None:
        self.connections = self.requests = 0
        self.keys: set[str] = set()
        self.tasks: set[asyncio.Task] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.tasks.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode()
                self.requests += 1
                self.keys.update(line.split(": ", 1)[1] for line in head.split("\r\n")
                                 if line.lower().startswith("authorization: "))
                number = int(re.search(r"[?&]page=(\d+)", head)[1])
                body = _page(number)
                writer.write((f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
                              f"x-total-count: {PAGES * PER_PAGE}\r\nx-total-pages: {PAGES}\r\n\r\n").encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client closed the connection, or the test ended
        finally:
            writer.close()


async def _read_list(cert: str | None, key: str | None) -> tuple[_Server, list, object]:
    """Read the list from a server over HTTPS with ``cert`` and ``key``, or over plain HTTP when they are None."""
    context = None
    if cert is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
    served = _Server()
    server = await asyncio.start_server(served.handle, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    rows: list = []
    config = ClientConfig(per_key_limit=100, per_ip_limit=200, window_s=1.0, max_in_flight=2, per_page=PER_PAGE,
                          first_contact_attempts=1, max_retry_s=5.0)
    try:
        scheme = "http" if cert is None else "https"
        async with RankTrackerClient(f"{scheme}://127.0.0.1:{port}", KEY, config=config) as client:
            result = await client.list_records("/v1/things", None, rows.extend)
    finally:
        server.close()
        for task in served.tasks:
            task.cancel()
        await asyncio.gather(*served.tasks, return_exceptions=True)
    return served, rows, result


def test_pages_over_https_arrive_whole_on_reused_connections(tmp_path, monkeypatch):
    cert, key = _certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", cert)
    opened = []
    connect = AsyncioBackend.connect_tcp

    async def counted(self, *args, **kwargs):
        opened.append(args[:2])
        return await connect(self, *args, **kwargs)

    monkeypatch.setattr(AsyncioBackend, "connect_tcp", counted)
    contexts = _count_tls_contexts(monkeypatch)
    served, rows, result = asyncio.run(_read_list(cert, key))
    expected = [r for n in range(1, PAGES + 1) for r in json.loads(_page(n))["data"]]
    assert sorted(rows, key=lambda r: r["id"]) == sorted(expected, key=lambda r: r["id"])
    assert result.complete and result.passes == 2  # several pages: proven by a second pass
    assert served.requests == 2 * PAGES and served.connections <= 2  # keep-alive: at most max_in_flight
    assert served.keys == {KEY}
    assert len(opened) == served.connections  # the client's connections are the asyncio backend's
    assert len(contexts) == 1  # one TLS context for all of the pool's connections


def _count_tls_contexts(monkeypatch) -> list:
    """The TLS contexts httpx makes from now on (``httpx.create_ssl_context``, which the pool calls)."""
    made: list = []
    create = httpx.create_ssl_context

    def counted(*args, **kwargs):
        made.append(create(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(httpx, "create_ssl_context", counted)
    return made


def test_plain_http_to_the_loopback_sandbox_makes_no_tls_context(monkeypatch):
    contexts = _count_tls_contexts(monkeypatch)
    served, rows, result = asyncio.run(_read_list(None, None))
    assert result.complete and len(rows) == PAGES * PER_PAGE and served.requests == 2 * PAGES
    assert contexts == []  # certificates are loaded only by a pool that opens an https connection


def test_an_untrusted_certificate_is_refused_before_any_request(tmp_path, monkeypatch):
    cert, key = _certificate(tmp_path)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(TransportError) as failure:
        asyncio.run(_read_list(cert, key))
    assert "CERTIFICATE_VERIFY_FAILED" in str(failure.value)


class _Conn:
    """A connection as the pool sees it: its states fixed, named by ``name``."""

    def __init__(self, name: str, origin: str, *, closed=False, expired=False, idle=False, available=False):
        self.name, self.origin = name, origin
        self.closed, self.expired, self.idle, self.available = closed, expired, idle, available

    def is_closed(self) -> bool:
        return self.closed

    def has_expired(self) -> bool:
        return self.expired

    def is_idle(self) -> bool:
        return self.idle

    def is_available(self) -> bool:
        return self.available

    def can_handle_request(self, origin) -> bool:
        return origin == self.origin


class _Queued:
    """A request waiting in the pool (or already assigned: ``queued`` False), to ``origin``."""

    def __init__(self, origin: str, queued: bool):
        self.request = type("R", (), {"url": type("U", (), {"origin": origin})()})()
        self.queued, self.connection = queued, None

    def is_queued(self) -> bool:
        return self.queued

    def assign_to_connection(self, connection) -> None:
        self.connection = connection


def _assigned(pool_class, state, limits) -> tuple:
    """What ``pool_class``'s assignment does to ``state``: the pool's connections after it, the connections it
    closes, each request's connection and the connections it opened (by name)."""
    conns, requests = state
    pool = pool_class(max_connections=limits[0], max_keepalive_connections=limits[1])
    pool._connections = [_Conn(**c) for c in conns]
    pool._requests = [_Queued(*r) for r in requests]
    opened = []

    def create(origin):
        opened.append(_Conn(f"new{len(opened)}", origin, available=False))
        return opened[-1]

    pool.create_connection = create
    closed = pool._assign_requests_to_connections()
    return ([c.name for c in pool._connections], [c.name for c in closed],
            [r.connection.name if r.connection else None for r in pool._requests], [c.name for c in opened])


def test_the_one_pass_pool_opens_closes_and_assigns_what_httpcores_pool_does():
    """Ground truth: httpcore's own ``_assign_requests_to_connections`` on the same pool state (random states of
    closed, expired, idle and busy connections to two origins, queued and assigned requests, and limits)."""
    import random

    import httpcore

    from rank_pipeline.api.network import _POOL, _Pool

    assert _POOL is _Pool, (f"httpcore {httpcore.__version__}: the transport fell back to httpcore's own pool; "
                            "compare _Pool with this version's _assign_requests_to_connections and widen _POOL's "
                            "version check, or delete _Pool if encode/httpcore#1035 landed")
    rng = random.Random(50)
    origins = ("a", "b")
    cases = 0
    for _ in range(3000):
        n = rng.randrange(0, 9)
        conns = []
        for i in range(n):
            idle = rng.random() < 0.5
            conns.append({"name": f"c{i}", "origin": rng.choice(origins), "closed": rng.random() < 0.1,
                          "expired": rng.random() < 0.1, "idle": idle, "available": idle and rng.random() < 0.8})
        requests = [(rng.choice(origins), rng.random() < 0.7) for _ in range(rng.randrange(0, 6))]
        maximum = rng.randrange(1, 10)
        limits = (maximum, rng.randrange(0, maximum + 1))
        want = _assigned(httpcore.AsyncConnectionPool, (conns, requests), limits)
        assert _assigned(_Pool, (conns, requests), limits) == want, (conns, requests, limits)
        cases += bool(want[1]) and bool(want[3])
    assert cases > 50  # states where the pool both closed and opened connections were among them


async def _loop_passes(connection_class, requests: int) -> tuple[int, list[bytes], object]:
    """Pages 1..``requests`` read one after another over one ``connection_class`` connection to the plain-HTTP
    server, and the event loop's passes meanwhile (a task that counts each pass)."""
    import httpcore

    served = _Server()
    server = await asyncio.start_server(served.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connection = connection_class(origin=httpcore.Origin(b"http", b"127.0.0.1", port), network_backend=AsyncioBackend())
    passes = 0

    async def count() -> None:
        nonlocal passes
        while True:
            await asyncio.sleep(0)
            passes += 1

    bodies = []
    try:
        host = [(b"Host", f"127.0.0.1:{port}".encode())]
        first = await connection.handle_async_request(
            httpcore.Request("GET", f"http://127.0.0.1:{port}/v1/things?page=0", headers=host))
        await first.aread()
        await first.aclose()
        counter = asyncio.create_task(count())
        start = passes
        for number in range(1, requests + 1):
            response = await connection.handle_async_request(
                httpcore.Request("GET", f"http://127.0.0.1:{port}/v1/things?page={number}", headers=host))
            bodies.append(await response.aread())
            await response.aclose()
        used = passes - start
        counter.cancel()
    finally:
        await connection.aclose()
        server.close()
        for task in served.tasks:
            task.cancel()
        await asyncio.gather(*served.tasks, return_exceptions=True)
    assert served.connections == 1
    return used, bodies, connection


def test_a_connection_takes_its_locks_without_extra_passes_of_the_event_loop():
    """Ground truth: httpcore's own connection on the same requests, whose anyio locks add a cancel-shielded
    checkpoint at each uncontended acquire. The pool's connection gives the same bytes, on one connection, with at
    least two passes of the event loop fewer a request."""
    import httpcore

    from rank_pipeline.api.network import _Connection

    theirs, their_bodies, _ = asyncio.run(_loop_passes(httpcore.AsyncHTTPConnection, 20))
    ours, our_bodies, connection = asyncio.run(_loop_passes(_Connection, 20))
    assert our_bodies == their_bodies == [_page(n) for n in range(1, 21)]
    assert ours <= theirs - 2 * 20, (ours, theirs)
    assert connection.is_closed()


def test_a_connection_that_cannot_connect_reports_the_state_httpcores_own_reports():
    """A refused connection raises httpcore's ConnectError, and the connection reports what httpcore's own
    reports: closed (the pool then drops it and opens another for the next request), not available."""
    import socket

    import httpcore

    from rank_pipeline.api.network import _Connection

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def attempt(connection_class):
        connection = connection_class(origin=httpcore.Origin(b"http", b"127.0.0.1", port),
                                      network_backend=AsyncioBackend())
        with pytest.raises(httpcore.ConnectError):
            await connection.handle_async_request(httpcore.Request("GET", f"http://127.0.0.1:{port}/v1/things"))
        return connection.is_closed(), connection.is_available(), connection.has_expired()

    ours, theirs = asyncio.run(attempt(_Connection)), asyncio.run(attempt(httpcore.AsyncHTTPConnection))
    assert ours == theirs and ours[0]  # closed: the pool removes it
