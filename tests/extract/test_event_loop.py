"""The extraction's event loop: uvloop's when installed, asyncio's when turned off (``RANK_PIPELINE_UVLOOP=0``);
the HTTP backend (``api/network.py``) reads and writes on uvloop's transports (``test_resume`` runs the whole
extraction through ``run_extraction`` in a child)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from rank_pipeline.api.network import AsyncioTransport
from rank_pipeline.extract.day import _loop_factory
from rank_pipeline.sandbox import SandboxServer, World, WorldConfig, create_app

uvloop = pytest.importorskip("uvloop")


def test_uvloop_is_used_unless_turned_off(monkeypatch):
    monkeypatch.delenv("RANK_PIPELINE_UVLOOP", raising=False)
    assert _loop_factory() is uvloop.new_event_loop
    monkeypatch.setenv("RANK_PIPELINE_UVLOOP", "0")
    assert _loop_factory() is None


def test_the_asyncio_backend_serves_requests_on_uvloop():
    world = World(WorldConfig(seed=5))
    with SandboxServer(create_app(world)) as server:
        async def get() -> tuple[type, int, bytes]:
            limits = httpx.Limits(max_connections=2, max_keepalive_connections=2)
            async with httpx.AsyncClient(transport=AsyncioTransport(limits)) as client:
                response = await client.get(f"{server.base_url}/_sandbox/stats")
                return type(asyncio.get_running_loop()), response.status_code, response.content

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            loop_type, status, body = runner.run(get())
        expected = httpx.get(f"{server.base_url}/_sandbox/stats")
    assert loop_type is uvloop.Loop
    assert status == 200 and body[:1] == b"{" and expected.status_code == 200
