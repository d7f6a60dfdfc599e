"""Test helpers for rank_pipeline.api: an asyncio event loop on a virtual clock.

``run_virtual(coro)`` runs a coroutine on a ``SelectorEventLoop`` whose ``time()`` is virtual: when
every task is waiting, the loop jumps the clock to the next timer instead of blocking. ``asyncio.sleep``
and every timer then cost no real time, and ``loop.time`` is the fake clock handed to limiters and
clients. Only in-process transports (``httpx.MockTransport``) can be used on it (no real sockets).
"""

from __future__ import annotations

import asyncio
import selectors

import pytest


class _VirtualClock:
    def __init__(self) -> None:
        self.now = 1000.0


class _VirtualSelector(selectors.SelectSelector):
    def __init__(self, clock: _VirtualClock) -> None:
        super().__init__()
        self._clock = clock

    def select(self, timeout=None):
        ready = super().select(0)
        if ready:
            return ready
        if timeout is None:
            raise RuntimeError("virtual-time loop deadlocked: every task waits and no timer is scheduled")
        if timeout > 0:
            self._clock.now += timeout
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock advances only when nothing is runnable."""

    def __init__(self) -> None:
        self.clock = _VirtualClock()
        super().__init__(selector=_VirtualSelector(self.clock))

    def time(self) -> float:
        return self.clock.now


def run_virtual(coro):
    """Run ``coro`` to completion on a fresh ``VirtualTimeLoop``; return its result."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


@pytest.fixture
def vrun():
    """The ``run_virtual`` function."""
    return run_virtual
