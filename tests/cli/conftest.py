"""The command-line doors' shared fixture: the sandbox served over HTTP as the vendor."""

from __future__ import annotations

import pytest

from rank_pipeline.sandbox import SandboxServer, World, create_app


@pytest.fixture(scope="module")
def vendor():
    """The sandbox served over HTTP as if it were the vendor (``(world, base URL)``); its today is the real UTC
    today, read at each request (a module that runs past midnight sees the new day, as the commands do). One
    server per test module."""
    world = World()
    with SandboxServer(create_app(world)) as server:
        yield world, server.base_url
