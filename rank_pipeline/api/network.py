"""httpx's connection pool over asyncio's own sockets: :class:`AsyncioTransport`.

httpx's default transport reaches its sockets through anyio (a cancel scope per read and write, a typed-attribute
lookup and a ``getpeername`` per pool check). This transport is httpx's ``AsyncHTTPTransport`` (its request and
response mapping, its errors) with the pool's network backend replaced by :class:`AsyncioBackend`: an asyncio
protocol per connection, TLS by ``loop.start_tls``. Why and what it saves: docs/concepts/api-client.md,
"The HTTP connection".
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

__all__ = ["AsyncioBackend", "AsyncioTransport"]

_PAUSE_AT = 4 << 20  # bytes received and not yet read at which the socket stops being read
_RESUME_AT = 1 << 20


class _Protocol(asyncio.Protocol):
    """What one connection received and not yet read, and its writing state."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: deque[bytes] = deque()
        self.start = 0  # where the first chunk's unread bytes start
        self.size = 0
        self.eof = False
        self.lost: Exception | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.drained: asyncio.Future[None] | None = None
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        if self.size >= _PAUSE_AT and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.lost = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        if self.drained is None:
            self.drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)
        self.drained = None

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


class _Stream(httpcore.AsyncNetworkStream):
    """One connection as httpcore reads and writes it (``timeout``: seconds, None for none)."""

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        p = self._protocol
        if not p.chunks and not p.eof:
            p.waiter = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(timeout):
                    await p.waiter
            except TimeoutError as exc:
                raise httpcore.ReadTimeout(f"no data for {timeout} s") from exc
            finally:
                p.waiter = None
        if not p.chunks:
            if p.lost is not None:
                raise httpcore.ReadError(str(p.lost) or type(p.lost).__name__) from p.lost
            return b""  # the peer closed the connection
        first, start = p.chunks[0], p.start
        if start == 0 and len(first) <= max_bytes:
            chunk = p.chunks.popleft()
        else:  # a chunk larger than a read is handed out in pieces, each copied once (not its remainder)
            chunk = first[start:start + max_bytes]
            p.start = start + len(chunk)
            if p.start == len(first):
                p.chunks.popleft()
                p.start = 0
        p.size -= len(chunk)
        if p.paused and p.size <= _RESUME_AT:
            p.paused = False
            self._transport.resume_reading()
        return chunk

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        p = self._protocol
        if self._transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        self._transport.write(buffer)
        if p.drained is not None:  # the kernel's buffer is full: wait until it takes the rest
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(p.drained)
            except TimeoutError as exc:
                raise httpcore.WriteTimeout(f"could not write for {timeout} s") from exc
        if p.lost is not None:
            raise httpcore.WriteError(str(p.lost) or type(p.lost).__name__) from p.lost

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport = await loop.start_tls(self._transport, self._protocol, ssl_context,
                                                 server_hostname=server_hostname)
        except TimeoutError as exc:
            self._transport.abort()
            raise httpcore.ConnectTimeout(f"TLS handshake took over {timeout} s") from exc
        except (OSError, ssl.SSLError) as exc:
            self._transport.abort()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        assert isinstance(transport, asyncio.Transport)
        self._protocol.transport = transport
        return _Stream(transport, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # an idle connection with data or EOF pending: the server closed it
            return bool(self._protocol.chunks) or self._protocol.eof
        name = {"ssl_object": "ssl_object", "client_addr": "sockname", "server_addr": "peername",
                "socket": "socket"}.get(info)
        return self._transport.get_extra_info(name) if name is not None else None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend on asyncio's transports and protocols (TCP; TLS through ``start_tls``)."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport, protocol = await loop.create_connection(
                    _Protocol, host, port, local_addr=(local_address, 0) if local_address else None)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"could not connect to {host}:{port} in {timeout} s") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        sock = transport.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        return _Stream(transport, protocol)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _HTTP11Connection(httpcore.AsyncHTTP11Connection):
    """httpcore's HTTP/1.1 connection, its state lock asyncio's own (see :class:`_Connection`)."""

    def __init__(self, origin: httpcore.Origin, stream: httpcore.AsyncNetworkStream,
                 keepalive_expiry: float | None = None) -> None:
        super().__init__(origin, stream, keepalive_expiry)
        self._state_lock = asyncio.Lock()  # type: ignore[assignment]  # the same async-with use


class _Connection(httpcore.AsyncHTTPConnection):
    """httpcore's connection (HTTP/1.1 only, as the pool is), its two locks asyncio's own.

    Under asyncio httpcore 1.0 takes its locks through anyio, whose uncontended acquire adds a cancel-shielded
    checkpoint (a ``sleep(0)``: one more pass of the event loop and of the request's whole coroutine chain) three
    times a request; asyncio's lock takes an uncontended lock without yielding (encode/httpcore#953, merged then
    reverted). A request never waits on these locks here: the pool hands an HTTP/1.1 connection one request at a
    time. The connection is made as httpcore makes it (:meth:`_connect`: TCP, then TLS for https).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._request_lock = asyncio.Lock()  # type: ignore[assignment]  # the same async-with use

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        if self._connection is None and self.can_handle_request(request.url.origin):
            async with self._request_lock:
                if self._connection is None:
                    try:
                        stream = await self._connect(request)
                    except BaseException:
                        self._connect_failed = True  # the pool drops the connection
                        raise
                    self._connection = _HTTP11Connection(self._origin, stream, self._keepalive_expiry)
        return await super().handle_async_request(request)


class _Pool(httpcore.AsyncConnectionPool):
    """httpcore's connection pool, its assignment of queued requests to connections done in one pass.

    httpcore 1.0's ``_assign_requests_to_connections`` counts the pool's connections, for each idle one, by
    asking every connection whether it is idle (``len([c.is_idle() for c in connections])``): the pool's size
    squared a call, several times a request (encode/httpcore#1035, open). This is the same method, the count
    taken as ``len``; everything else (which connection is closed, reused or opened) as httpcore decides it.

    Its connections are :class:`_Connection` objects, whose locks take no extra pass of the event loop.

    Its TLS context is made with its first ``https`` connection (:func:`httpx.create_ssl_context`, the
    certificates httpx verifies against, ``SSL_CERT_FILE`` included): about 55 ms of CPU that a pool speaking
    plain HTTP to the loopback sandbox never spends.
    """

    def create_connection(self, origin: httpcore.Origin) -> httpcore.AsyncConnectionInterface:
        if self._ssl_context is None and origin.scheme == b"https":
            self._ssl_context = httpx.create_ssl_context()
        # as httpcore's, for a pool without a proxy (AsyncioTransport builds none)
        return _Connection(origin=origin, ssl_context=self._ssl_context, keepalive_expiry=self._keepalive_expiry,
                           retries=self._retries, local_address=self._local_address, uds=self._uds,
                           network_backend=self._network_backend, socket_options=self._socket_options)

    def _assign_requests_to_connections(self) -> list[httpcore.AsyncConnectionInterface]:
        closing: list[httpcore.AsyncConnectionInterface] = []
        connections = self._connections
        for connection in list(connections):
            if connection.is_closed():
                connections.remove(connection)
            elif connection.has_expired() or (connection.is_idle()
                                              and len(connections) > self._max_keepalive_connections):
                connections.remove(connection)
                closing.append(connection)
        for pool_request in [request for request in self._requests if request.is_queued()]:
            origin = pool_request.request.url.origin
            available = next((c for c in connections if c.can_handle_request(origin) and c.is_available()), None)
            if available is None and len(connections) >= self._max_connections:
                idle = next((c for c in connections if c.is_idle()), None)
                if idle is None:
                    continue  # the request waits for a connection to be released
                connections.remove(idle)
                closing.append(idle)
            if available is None:
                available = self.create_connection(origin)
                connections.append(available)
            pool_request.assign_to_connection(available)
        return closing


_POOL = _Pool if httpcore.__version__.startswith("1.0.") else httpcore.AsyncConnectionPool
"""The one-pass pool where its method is httpcore 1.0's; httpcore's own pool on any other version."""


class AsyncioTransport(httpx.AsyncHTTPTransport):
    """httpx's ``AsyncHTTPTransport`` (HTTP/1.1, certificates verified as httpx does) whose connection pool
    (:class:`_Pool`) holds up to ``limits``' connections through :class:`AsyncioBackend`."""

    def __init__(self, limits: httpx.Limits) -> None:  # not super().__init__: it would build the pool replaced here
        self._pool = _POOL(
            ssl_context=None if _POOL is _Pool else httpx.create_ssl_context(),  # _Pool: at its first https
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=AsyncioBackend(),
        )
