"""The sandbox over real HTTP with uvicorn (``date_header=False``: ``Date`` is the simulated day's):
:class:`SandboxServer` serves from a background thread, :func:`serve` blocks (``rank-pipeline sandbox``).
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import time
from datetime import date
from typing import TextIO

import uvicorn

from rank_pipeline.api.config import SPEC_PER_IP_LIMIT, SPEC_PER_KEY_LIMIT, SPEC_WINDOW_S

__all__ = ["SandboxServer", "serve"]


class _DroppedConnectionFilter(logging.Filter):
    """Keeps the deliberate ``drop_rate`` fault out of the error log."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return type(exc).__name__ != "DroppedConnection"


logging.getLogger("uvicorn.error").addFilter(_DroppedConnectionFilter())


def _config(app, host: str, port: int, log_level: str) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        date_header=False,
        server_header=False,
        lifespan="off",
        timeout_graceful_shutdown=1,
    )


class SandboxServer:
    """``with SandboxServer(app) as server: httpx.get(server.base_url + "/v1/domains", ...)``: binds on entry
    (:attr:`port` known at once), serves from a daemon thread once it accepts connections (RuntimeError after
    ``startup_timeout_s``), stops on exit, cutting hung requests after one second.
    """

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, *, log_level: str = "warning",
                 startup_timeout_s: float = 10.0):
        self.app, self.host, self.requested_port = app, host, port
        self.log_level, self.startup_timeout_s = log_level, startup_timeout_s
        self.port: int | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    @property
    def base_url(self) -> str:
        """``http://host:port`` once started; RuntimeError before."""
        if self.port is None:
            raise RuntimeError("SandboxServer is not started; use it as a context manager or call start()")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> SandboxServer:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.requested_port))
        sock.set_inheritable(True)
        self._socket = sock
        self.port = sock.getsockname()[1]
        self._server = uvicorn.Server(_config(self.app, self.host, self.port, self.log_level))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name=f"sandbox-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the sandbox server did not start on {self.host}:{self.requested_port}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None

    def __enter__(self) -> SandboxServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def serve(
    host: str = "127.0.0.1",
    port: int = 8765,
    seed: int = 7,
    window_s: float = SPEC_WINDOW_S,
    *,
    today: date | None = None,
    faults=None,
    per_key: int = SPEC_PER_KEY_LIMIT,
    per_ip: int = SPEC_PER_IP_LIMIT,
    out: TextIO | None = None,
    shape: str | None = None,
) -> None:
    """Serve the demo world (``WorldConfig(seed=seed)``) in ``shape`` until interrupted, printing the base URL,
    the simulated day and each account's demo key to ``out``; ``port`` 0: a free one.
    Raises KeyboardInterrupt: uvicorn stopped on a signal (SIGINT: status 130).
    """
    from rank_pipeline.sandbox.app import create_app
    from rank_pipeline.sandbox.faults import Faults
    from rank_pipeline.sandbox.limits import RateLimits
    from rank_pipeline.sandbox.world import World, WorldConfig

    out = out or sys.stdout
    world = World(WorldConfig(seed=seed), today=today)
    from rank_pipeline.sandbox.shapes import parse_shape

    app = create_app(world, limits=RateLimits(per_key=per_key, per_ip=per_ip, window_s=window_s),
                     faults=faults or Faults(), shape=parse_shape(shape))
    sockets = None
    if port == 0:  # any free port: bind it here, so the banner names the port the server listens on
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((host, 0))
        port, sockets = sock.getsockname()[1], [sock]
    _banner(world, host, port, out)
    server = uvicorn.Server(_config(app, host, port, "info"))
    server.run(sockets=sockets)
    if server.should_exit:
        # uvicorn stopped on a signal it caught; it raises the signal again after its shutdown, which is
        # the KeyboardInterrupt the command line turns into status 130. That raise can fail to reach us (the
        # command would then end 0), and stopping on a signal is an interruption either way.
        raise KeyboardInterrupt


def _banner(world, host: str, port: int, out: TextIO) -> None:
    """Print the base URL, the simulated day and each account's demo key to ``out``."""
    shown_host = f"[{host}]" if ":" in host else host
    print(f"rank-tracking sandbox on http://{shown_host}:{port}  (today = {world.today.isoformat()})", file=out)
    for account in world.accounts:
        access = "API access" if account.api_enabled else "no API access (403)"
        keys = ",".join(account.api_keys or (account.api_key,))
        print(f"  account {account.name} key {keys}  {access}", file=out)
    print("  send the key as 'Authorization: <key>'; control endpoints under /_sandbox", file=out)
    out.flush()
