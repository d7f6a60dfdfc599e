"""Fixtures for the sandbox tests: a demo world on a fixed day, an in-process client, a fake clock."""

from __future__ import annotations

import asyncio
from datetime import date

import httpx
import pytest

from rank_pipeline.sandbox import World, WorldConfig, create_app

TODAY = date(2026, 3, 10)


class ASGIClient:
    """A synchronous client over ``httpx.ASGITransport`` (in process, no sockets).

    ``key`` sets the ``Authorization`` header to the raw key (spec, "Authentication"); ``ip`` is the
    client address the app sees.
    """

    def __init__(self, app, ip: str = "127.0.0.1"):
        self.app = app
        self.loop = asyncio.new_event_loop()
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(app, client=(ip, 50000)), base_url="http://sandbox")

    def request(self, method: str, path: str, *, key: str | None = None, headers=None, **kwargs) -> httpx.Response:
        headers = dict(headers or {})
        if key is not None:
            headers["Authorization"] = key
        return self.loop.run_until_complete(self.http.request(method, path, headers=headers, **kwargs))

    def get(self, path: str, **kwargs) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def close(self) -> None:
        self.loop.run_until_complete(self.http.aclose())
        self.loop.close()


class FakeClock:
    """Seconds that move only when a test says so."""

    def __init__(self, now: float = 1_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class SleepRecorder:
    """An ``asyncio.sleep`` stand-in that records the delays asked for and returns at once."""

    def __init__(self):
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def world() -> World:
    return World(WorldConfig(), today=TODAY)


@pytest.fixture
def client(world):
    c = ASGIClient(create_app(world))
    yield c
    c.close()


@pytest.fixture
def make_client():
    """``make_client(app, ip=...)`` -> ASGIClient, closed after the test."""
    made: list[ASGIClient] = []

    def make(app, ip: str = "127.0.0.1") -> ASGIClient:
        made.append(ASGIClient(app, ip))
        return made[-1]

    yield make
    for c in made:
        c.close()


@pytest.fixture
def fake_clock() -> FakeClock:
    """A FakeClock at 1003.0 s: inside the window [1000, 1010) when window_s=10 and offset 0."""
    return FakeClock(1_003.0)


@pytest.fixture
def sleep_recorder() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def acme(world):
    return world.account("acme")
