"""The sandbox's Starlette app: :func:`create_app` serves the spec's ``/v1`` read endpoints behind
:class:`~rank_pipeline.sandbox.middleware.SandboxMiddleware`, with the lookups, keyword create,
``/openapi.json`` and the ``/_sandbox`` control routes. Endpoints and choices: docs/concepts/sandbox.md,
"The read endpoints".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from rank_pipeline.sandbox import control, keyword_create, lookups, openapi
from rank_pipeline.sandbox.faults import FaultInjector, Faults
from rank_pipeline.sandbox.limits import RateLimiter, RateLimits
from rank_pipeline.sandbox.middleware import SandboxMiddleware, SandboxStats, error_response
from rank_pipeline.sandbox.pagination import paginated_response
from rank_pipeline.sandbox.shapes import ShapeSetting

__all__ = ["create_app", "domain_not_found"]


def domain_not_found() -> Response:
    """The spec's 404 for a domain that is absent or another account's."""
    return error_response(404, "not_found", "Domain not found")


def _account(request: Request):
    return request.state.account


def _owned_domain(request: Request) -> str | None:
    domain_id = request.path_params["uuid"]
    world = request.app.state.world
    return domain_id if world.domain(_account(request).account_id, domain_id) is not None else None


def list_domains(request: Request) -> Response:
    return paginated_response(request, request.app.state.world.domains(_account(request).account_id))


def get_domain(request: Request) -> Response:
    record = request.app.state.world.domain(_account(request).account_id, request.path_params["uuid"])
    return JSONResponse({"data": record}) if record is not None else domain_not_found()


def list_keywords(request: Request) -> Response:
    domain_id = _owned_domain(request)
    if domain_id is None:
        return domain_not_found()
    records = request.app.state.world.keywords(domain_id, shared=True)  # only read and encoded here
    url = request.query_params.get("results_organic_url")
    if url is not None:
        records = [r for r in records if r["attributes"]["results"]["organic"]["url"] == url]
    shape, today = request.app.state.shape, request.app.state.world.today
    return paginated_response(request, [shape.keyword(r, today) for r in records])


def list_competitors(request: Request) -> Response:
    domain_id = _owned_domain(request)
    if domain_id is None:
        return domain_not_found()
    shape, today = request.app.state.shape, request.app.state.world.today
    return paginated_response(request, [shape.record("competitors", r, today)
                                        for r in request.app.state.world.competitors(domain_id)])


def list_tags(request: Request) -> Response:
    shape, today = request.app.state.shape, request.app.state.world.today
    return paginated_response(request, [shape.record("tags", r, today)
                                        for r in request.app.state.world.tags(_account(request).account_id)])


def get_usage(request: Request) -> Response:
    shape, world = request.app.state.shape, request.app.state.world
    return JSONResponse({"data": shape.record("usage", world.usage(_account(request).account_id), world.today)})


async def unknown_v1(request: Request) -> Response:
    return error_response(404, "not_found", "Resource not found")


_DEFAULT_LIMITS = RateLimits()
_NO_FAULTS = Faults()
_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def _colleague_routes() -> list[BaseRoute]:
    """Routes of the lookups, keyword-create and OpenAPI modules."""
    return [*lookups.routes, *keyword_create.routes, openapi.openapi_route]


def create_app(
    world,
    *,
    limits: RateLimits = _DEFAULT_LIMITS,
    faults: Faults = _NO_FAULTS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    shape: ShapeSetting | None = None,
) -> Starlette:
    """The sandbox application over ``world`` (a :class:`~rank_pipeline.sandbox.world.World`).

    ``limits`` are the rate limits, ``faults`` the initial fault switches; ``clock`` (seconds) drives
    the rate windows and ``sleep`` the latency/hang faults (both injectable for tests). ``shape`` is the
    shape keyword, tag, competitor and usage records are served in (:mod:`rank_pipeline.sandbox.shapes`;
    default: the invented one).
    ``app.state`` holds ``world``, ``limiter``, ``injector`` (faults) and ``stats``.
    """
    injector = FaultInjector(faults)
    limiter = RateLimiter(limits, clock=clock, outside_consumer=lambda: injector.faults.outside_consumer)
    stats = SandboxStats()
    routes: list[BaseRoute] = [
        Route("/v1/domains", list_domains, methods=["GET"]),
        Route("/v1/domains/{uuid}", get_domain, methods=["GET"]),
        Route("/v1/domains/{uuid}/keywords", list_keywords, methods=["GET"]),
        Route("/v1/domains/{uuid}/competitors", list_competitors, methods=["GET"]),
        Route("/v1/tags", list_tags, methods=["GET"]),
        Route("/v1/account/usage", get_usage, methods=["GET"]),
        *_colleague_routes(),
        *control.routes,
        Route("/v1", unknown_v1, methods=_ALL_METHODS),
        Route("/v1/{rest:path}", unknown_v1, methods=_ALL_METHODS),
    ]
    middleware = [
        Middleware(SandboxMiddleware, world=world, limiter=limiter, injector=injector, stats=stats, sleep=sleep)
    ]
    app = Starlette(routes=routes, middleware=middleware)
    app.state.world = world
    app.state.limiter = limiter
    app.state.injector = injector
    app.state.stats = stats
    app.state.shape = shape or ShapeSetting()
    return app
