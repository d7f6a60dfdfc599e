"""The sandbox process of ``benchmarks/extract.py``: one world served over real HTTP on loopback.

Run as a script, in its own process so that its CPU work (building pages, JSON) does not share the
extractor's event loop or GIL, and so that the extractor's peak RSS does not include the world::

    python benchmarks/_extract_sandbox.py '<job json>'

The job: ``{"world": {"domains", "keywords_per_domain", "accounts", "keys", "seed"}, "today": "YYYY-MM-DD",
"limits": {"per_key", "per_ip", "window_s"}, "faults": {<Faults fields>}}``. The process builds
``World(WorldConfig.scaled(...), today=...)`` (``keys``: valid keys per account, default 1; spec
"Authentication" 5), generates every domain's keywords before it answers (so
the first requests do not pay for generation), serves ``create_app(world, limits, faults)`` with
:class:`~rank_pipeline.sandbox.SandboxServer` on 127.0.0.1 (a free port), prints ONE line of JSON to
stdout ``{"base_url", "accounts": [{"name", "api_key"}], "build_s"}`` (``api_key``: the account's keys,
comma-separated when it holds several: the value of ``RANK_TRACKER_API_KEY`` for a key pool) and serves until its stdin
closes (the harness closes it, or dies).

Besides the sandbox's own routes (``/v1``, ``/_sandbox``) it answers two benchmark-only routes,
outside the sandbox's rate limits and faults:

``GET /_bench/cpu``
    ``{"cpu_s": <CPU seconds this process has used>}`` (``time.process_time``): the harness reads it
    before and after a run to tell whether the sandbox, rather than the tool, set the pace.

``GET /_bench/truth[?lookups=1]``
    The ground truth as of now (after a run: shifting records included): per account name
    ``{"domains", "keywords", "competitors", "tags", "usage"}`` as lists of ids, ``"counts"``
    ``{"domains": n, "tags": n, "keywords": [n per domain], "competitors": [n per domain]}``, and
    with ``lookups=1`` ``"lookups": {"locations": [[engine, code], ...], "languages": {engine: n}}``:
    the distinct (search engine, location code) pairs of the account's keywords and the size of each
    engine's language catalogue (the reference lists rank-pipeline reads after the keywords).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from datetime import date
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from rank_pipeline.sandbox import Faults, RateLimits, SandboxServer, World, WorldConfig, create_app

__all__ = ["build_app", "build_world", "ground_truth", "main"]


def ground_truth(world: World, *, lookups: bool = False) -> dict[str, Any]:
    """The records that exist now, per account (module docstring, ``/_bench/truth``)."""
    from rank_pipeline.sandbox import catalogues

    out: dict[str, Any] = {"today": world.today.isoformat(), "accounts": {}}
    for account in world.accounts:
        if not account.api_enabled:
            continue
        domains = [d["id"] for d in world.domains(account.account_id)]
        keywords: list[str] = []
        competitors: list[str] = []
        kw_counts: list[int] = []
        comp_counts: list[int] = []
        pairs: set[tuple[str, str]] = set()
        engines: set[str] = set()
        for domain_id in domains:
            if lookups:
                records = world.keywords(domain_id)
                ids = [r["id"] for r in records]
                for r in records:
                    a = r["attributes"]
                    engines.add(a["searchEngine"])
                    pairs.add((a["searchEngine"], str(a["location"]["code"])))
            else:
                ids = world.keyword_ids(domain_id)
            keywords.extend(ids)
            kw_counts.append(len(ids))
            comps = [c["id"] for c in world.competitors(domain_id)]
            competitors.extend(comps)
            comp_counts.append(len(comps))
        tags = [t["id"] for t in world.tags(account.account_id)]
        entry: dict[str, Any] = {
            "domains": domains,
            "keywords": keywords,
            "competitors": competitors,
            "tags": tags,
            "usage": [world.usage(account.account_id)["id"]],
            "counts": {"domains": len(domains), "tags": len(tags), "keywords": kw_counts,
                       "competitors": comp_counts},
        }
        if lookups:
            entry["lookups"] = {
                "locations": sorted([e, c] for e, c in pairs),
                "languages": {e: len(catalogues.languages(e)) for e in sorted(engines)},
            }
        out["accounts"][account.name] = entry
    return out


def build_world(w: dict[str, Any], today: str) -> World:
    """The job's world (``{"domains", "keywords_per_domain", "accounts", "keys", "seed"}``) on ``today``,
    every domain's keywords generated. The harness builds the same world to size workloads."""
    config = WorldConfig.scaled(w["domains"], w["keywords_per_domain"], accounts=w.get("accounts", 1),
                                seed=w.get("seed", 7))
    if w.get("keys", 1) != 1:
        config = dataclasses.replace(
            config, accounts=tuple(dataclasses.replace(a, keys=w["keys"]) for a in config.accounts))
    world = World(config, today=date.fromisoformat(today))
    for account in world.accounts:  # generate every domain now, not during the first requests
        for d in world.domains(account.account_id):
            world.keyword_ids(d["id"])
    return world


def build_app(world: World, limits: RateLimits, faults: Faults):
    """The sandbox app with the benchmark's ``/_bench/truth`` and ``/_bench/cpu`` routes in front
    (plain ASGI dispatch)."""
    sandbox = create_app(world, limits=limits, faults=faults)

    async def truth(request: Request) -> JSONResponse:
        lookups = request.query_params.get("lookups", "") in ("1", "true")
        return JSONResponse(ground_truth(world, lookups=lookups))

    async def cpu(request: Request) -> JSONResponse:
        return JSONResponse({"cpu_s": time.process_time()})

    bench_routes = {"/_bench/truth": truth, "/_bench/cpu": cpu}

    async def app(scope, receive, send):
        handler = bench_routes.get(scope["path"]) if scope["type"] == "http" else None
        if handler is not None:
            response = await handler(Request(scope, receive))
            await response(scope, receive, send)
            return
        await sandbox(scope, receive, send)

    return app


def main(argv: list[str] | None = None) -> int:
    """Build the world, serve it, print the ready line, serve until stdin closes."""
    argv = sys.argv[1:] if argv is None else argv
    job = json.loads(argv[0])
    started = time.perf_counter()
    world = build_world(job["world"], job["today"])
    limits = RateLimits(**job["limits"])
    faults = Faults(**job.get("faults", {}))
    with SandboxServer(build_app(world, limits, faults), host="127.0.0.1", port=0) as server:
        ready = {
            "base_url": server.base_url,
            "accounts": [{"name": a.name, "api_key": ",".join(a.api_keys)} for a in world.accounts if a.api_enabled],
            "build_s": round(time.perf_counter() - started, 2),
        }
        print(json.dumps(ready), flush=True)
        sys.stdin.read()  # until the harness closes our stdin (or exits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
