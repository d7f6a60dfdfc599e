"""The embedded sandbox: the default source when no ``RANK_TRACKER_BASE_URL`` is configured.

One sandbox per process, started on first use on 127.0.0.1 (a free port) and served over real HTTP by
uvicorn, so the demo and the Dagster UI exercise exactly the code path a vendor key would. Its world is
deterministic (seeded), so every process that starts one sees the same accounts, domains and ground
truth. The sandbox's clock is simulated: :meth:`EmbeddedSandbox.at` moves its "today" so a run can
extract any partition date; against the real API a past date is refused instead.
"""

from __future__ import annotations

import atexit
import threading
from datetime import date
from typing import TYPE_CHECKING

from rank_pipeline.extract.day import AccountSource

if TYPE_CHECKING:
    from rank_pipeline.sandbox import World

__all__ = ["EmbeddedSandbox"]


class EmbeddedSandbox:
    """A process-wide sandbox server. Use :meth:`get`; never construct directly."""

    _instance: EmbeddedSandbox | None = None
    _lock = threading.Lock()

    def __init__(self, world: World | None = None) -> None:
        """Start a sandbox serving ``world`` (default: the demo world). Only :meth:`get` and
        :meth:`install` construct one."""
        from rank_pipeline.sandbox import SandboxServer, World, create_app
        from rank_pipeline.sandbox.shapes import parse_shape
        from rank_pipeline.settings import sandbox_shape_from_env

        self.world = world if world is not None else World()
        self.shape = parse_shape(sandbox_shape_from_env())  # RANK_SANDBOX_SHAPE: the keyword records' shape
        self._server: SandboxServer | None = SandboxServer(create_app(self.world, shape=self.shape), host="127.0.0.1", port=0)
        self._server.__enter__()
        self.base_url: str = self._server.base_url
        atexit.register(self.close)

    @classmethod
    def get(cls) -> EmbeddedSandbox:
        """The process's sandbox, started on first call (thread-safe)."""
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    @classmethod
    def install(cls, world: World) -> EmbeddedSandbox:
        """Make a sandbox serving ``world`` the process's sandbox (benchmarks: a scaled world,
        ``WorldConfig.scaled``); one started before is stopped. Returns it."""
        with cls._lock:
            if cls._instance is not None:
                cls._instance.close()
            cls._instance = cls(world)
            return cls._instance

    def at(self, day: date) -> EmbeddedSandbox:
        """Set the sandbox's simulated today (UTC) to ``day``; returns self."""
        self.world.set_today(day)
        return self

    def accounts(self) -> list[AccountSource]:
        """The sandbox's accounts whose plan has API access, with their (sandbox-only) keys."""
        return [AccountSource(a.name, a.api_key) for a in self.world.accounts if a.api_enabled]

    def close(self) -> None:
        """Stop the server (registered with :mod:`atexit`)."""
        server, self._server = getattr(self, "_server", None), None
        if server is not None:
            server.__exit__(None, None, None)
