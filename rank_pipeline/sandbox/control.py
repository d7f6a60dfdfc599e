"""Sandbox-only control endpoints under ``/_sandbox`` (today, stats, faults, key revocation), without
authentication and not part of the vendor API; a malformed body is a 400 ``bad_request``.

Endpoints: docs/concepts/sandbox.md, "Control endpoints".
"""

from __future__ import annotations

import json
from datetime import date

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from rank_pipeline.sandbox import assumptions as A
from rank_pipeline.sandbox.middleware import error_response

__all__ = ["routes"]


async def _json_body(request: Request) -> dict | Response:
    try:
        body = json.loads(await request.body() or b"null")
    except ValueError:
        return error_response(400, A.BAD_REQUEST_CODE, "The body must be a JSON object")
    if not isinstance(body, dict):
        return error_response(400, A.BAD_REQUEST_CODE, "The body must be a JSON object")
    return body


async def get_today(request: Request) -> Response:
    return JSONResponse({"today": request.app.state.world.today.isoformat()})


async def put_today(request: Request) -> Response:
    body = await _json_body(request)
    if isinstance(body, Response):
        return body
    try:
        day = date.fromisoformat(str(body["today"]))
    except (KeyError, ValueError):
        return error_response(400, A.BAD_REQUEST_CODE, 'Send {"today": "YYYY-MM-DD"}')
    request.app.state.world.set_today(day)
    return await get_today(request)


async def get_stats(request: Request) -> Response:
    state = request.app.state
    return JSONResponse(state.stats.snapshot(dict(state.limiter.outside_requests)))


async def reset_stats(request: Request) -> Response:
    state = request.app.state
    state.stats.reset()
    limits = request.query_params.get("limits", "").lower() in ("1", "true", "yes")
    if limits:
        state.limiter.reset()
    return JSONResponse({"reset": True, "limits": limits})


async def get_faults(request: Request) -> Response:
    return JSONResponse(request.app.state.injector.faults.to_dict())


async def put_faults(request: Request) -> Response:
    body = await _json_body(request)
    if isinstance(body, Response):
        return body
    injector = request.app.state.injector
    try:
        injector.set(injector.faults.updated(body))
    except ValueError as exc:
        return error_response(400, A.BAD_REQUEST_CODE, str(exc))
    return await get_faults(request)


async def revoke_key(request: Request) -> Response:
    body = await _json_body(request)
    if isinstance(body, Response):
        return body
    position = body.get("position")
    if not isinstance(body.get("account"), str) or isinstance(position, bool) or not isinstance(position, int):
        return error_response(400, A.BAD_REQUEST_CODE, 'Send {"account": "<name>", "position": <1-based int>}')
    try:
        revoked = request.app.state.world.revoke_key(body["account"], position)
    except (KeyError, IndexError) as exc:
        return error_response(400, A.BAD_REQUEST_CODE, str(exc).strip('"'))
    return JSONResponse({"revoked": revoked})


routes: list[Route] = [
    Route("/_sandbox/today", get_today, methods=["GET"]),
    Route("/_sandbox/today", put_today, methods=["PUT"]),
    Route("/_sandbox/stats", get_stats, methods=["GET"]),
    Route("/_sandbox/stats/reset", reset_stats, methods=["POST"]),
    Route("/_sandbox/faults", get_faults, methods=["GET"]),
    Route("/_sandbox/faults", put_faults, methods=["PUT"]),
    Route("/_sandbox/keys/revoke", revoke_key, methods=["POST"]),
]
