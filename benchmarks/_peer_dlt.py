"""The peer tool of ``benchmarks/extract.py``: dlt's ``rest_api`` source configured for this API.

Run as a script in a fresh process, one per benchmark run, so its peak RSS is its own::

    python benchmarks/_peer_dlt.py <job.json> <result.json>

``job.json``: ``{"base_url": "http://127.0.0.1:PORT", "accounts": [{"name": ..., "api_key": ...}],
"workdir": "<empty temp folder>", "per_page": 1000, "parallelized": false}``. Every account is loaded by its own dlt
pipeline (dataset ``<account name>``), one after the other, into ``<workdir>/dlt.duckdb`` (dlt's
duckdb destination); dlt's data and pipelines folders live under ``workdir`` too, so nothing is
written to the repository or the home folder.

``result.json``: ``{"tool": "dlt", "wall_s", "phases_s": {"extract", "normalize", "load"},
"peak_rss_mb", "cpu_s", "client": {"requests", "rate_limited", "server_errors", "no_response", "statuses"}, "error",
"duckdb": <path>, "datasets": {account name: dataset name}}``. ``wall_s`` covers extract,
normalize and load of every account (seconds, ``time.perf_counter``); ``peak_rss_mb`` is
``getrusage(RUSAGE_SELF).ru_maxrss`` at the end (MiB); ``cpu_s`` the process's CPU seconds (user +
system) over the same span as ``wall_s``. ``client`` is what dlt's requests session
sent (one count per attempt, retries included, by status or ``no response``): the benchmark's referee is the sandbox's own count, this is "what the client believes".
``error`` is None, or the exception that stopped a pipeline (its records are then not in duckdb).

How dlt is configured (the spec sections it follows):

- "Authentication": ``APIKeyAuth(name="Authorization", location="header")``: the raw key, no Bearer.
- "Limits" rule 4: :class:`TotalPagesPaginator` sends ``page`` (1-based) and stops when
  ``X-Current-Page`` reaches ``X-Total-Pages``; ``per_page=1000`` (the maximum) on every list.
- "Endpoints": resources ``domains``, ``keywords`` and ``competitors`` (child resources resolved from
  each domain's ``id``), ``tags``, and ``usage`` (a single read, ``data`` object). The lookups
  (locations, languages) are not read: the comparison excludes them (see benchmarks/README.md).
- Retries: dlt's defaults (its requests client retries 429 and 5xx honouring ``Retry-After``, and
  connection errors, with exponential backoff; 5 attempts). No pacing: dlt has none built in.
- Concurrency: dlt's defaults (resources are not ``parallelized``; one request at a time), or with
  ``job["parallelized"]`` dlt's best documented configuration: ``rest_api_source(...,
  parallelized=True)`` (the resources are extracted in parallel with each other) and
  ``"parallelized": True`` on the child resources ``keywords`` and ``competitors`` (each parent's child
  fetch runs in dlt's extract thread pool, ``extract.workers``, default 5; dlt's docs "REST API
  source: advanced configuration", "Per-resource parallelization for dependent resources").
- Files: ``loader_file_format="parquet"`` (``job["loader_file_format"]`` overrides). dlt's default for
  duckdb, ``insert_values``, took 320 s and 6.8 GB of RSS to load workload (a) on a 2-core machine
  (parquet: 3 s and about 420 MB), so the peer gets its faster documented option.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

__all__ = ["build_source", "main", "paginator_class", "run_job"]


def _prepare_environment(workdir: Path) -> None:
    """Point dlt's folders and settings at ``workdir`` before dlt is imported."""
    os.environ["DLT_DATA_DIR"] = str(workdir / "dlt_data")
    os.environ.setdefault("RUNTIME__LOG_LEVEL", "WARNING")
    os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"
    os.environ["DLT_TELEMETRY_DISABLED"] = "1"
    os.chdir(workdir)  # dlt reads ./.dlt/ config from the working directory: keep it empty


def paginator_class():
    """The ``TotalPagesPaginator`` class (a dlt ``BasePaginator``; built on call so that importing this
    module does not import dlt)."""
    from dlt.sources.helpers.rest_client.paginators import BasePaginator

    class TotalPagesPaginator(BasePaginator):
        """Page-number paginator for the spec's pagination headers ("Limits" rule 4).

        Sends ``page`` = 1, 2, ... and stops after the response whose ``X-Current-Page`` equals
        ``X-Total-Pages`` (an empty list has ``X-Total-Pages`` 0 and stops after page 1).

        Raises:
            ValueError: a list response without ``X-Total-Pages`` (not this API's list endpoint).
        """

        def __init__(self, page_param: str = "page") -> None:
            super().__init__()
            self.page_param = page_param
            self.page = 1

        def init_request(self, request) -> None:
            self.page = 1
            self._has_next_page = True
            request.params = dict(request.params or {})
            request.params[self.page_param] = self.page

        def update_state(self, response, data=None) -> None:
            total = response.headers.get("X-Total-Pages")
            if total is None:
                raise ValueError(
                    f"{response.request.method} {response.url} has no X-Total-Pages header: the "
                    "TotalPagesPaginator only fits this API's list endpoints (spec 'Limits' rule 4)"
                )
            current = int(response.headers.get("X-Current-Page", self.page))
            self._has_next_page = current < int(total)
            self.page = current + 1

        def update_request(self, request) -> None:
            request.params = dict(request.params or {})
            request.params[self.page_param] = self.page

    return TotalPagesPaginator


class _AttemptCounter:
    """Counts HTTP attempts by outcome at the transport adapter, below dlt's retry wrapper.

    :meth:`wrap` replaces an adapter's ``send``: every attempt (retries included) is counted once, by
    its HTTP status, or under ``"no response"`` when it raised (dropped connection, timeout).
    """

    def __init__(self) -> None:
        self.statuses: dict[str, int] = {}
        self._lock = threading.Lock()  # parallelized resources send from dlt's worker threads

    def wrap(self, adapter) -> None:
        send = adapter.send

        def counting_send(request, *args: Any, **kwargs: Any):
            try:
                response = send(request, *args, **kwargs)
            except Exception:
                self._add("no response")
                raise
            self._add(str(response.status_code))
            return response

        adapter.send = counting_send

    def _add(self, key: str) -> None:
        with self._lock:
            self.statuses[key] = self.statuses.get(key, 0) + 1

    def summary(self) -> dict[str, Any]:
        return {
            "requests": sum(self.statuses.values()),
            "rate_limited": self.statuses.get("429", 0),
            "server_errors": sum(n for s, n in self.statuses.items() if s.isdigit() and int(s) >= 500),
            "no_response": self.statuses.get("no response", 0),
            "statuses": dict(sorted(self.statuses.items())),
        }


def build_source(base_url: str, api_key: str, *, per_page: int = 1000, session=None, name: str = "rank_tracker",
                 parallelized: bool = False):
    """dlt ``rest_api_source`` for one account of the rank-tracking API (module docstring).

    Args:
        base_url: the API's base address without ``/v1`` (e.g. ``http://127.0.0.1:8765``).
        api_key: the account's key, sent as the raw ``Authorization`` header.
        per_page: records per page (spec maximum 1000).
        session: a requests session for the client (the benchmark passes dlt's own retrying session
            with a counting adapter); None uses dlt's default.
        name: the dlt source name.
        parallelized: dlt's parallel extraction, on the source and on the child (dependent) resources.

    Returns:
        a ``DltSource`` with resources ``domains, keywords, competitors, tags, usage``.
    """
    from dlt.sources.helpers.rest_client.auth import APIKeyAuth
    from dlt.sources.rest_api import rest_api_source

    client: dict[str, Any] = {
        "base_url": base_url.rstrip("/") + "/v1/",
        "auth": APIKeyAuth(name="Authorization", api_key=api_key, location="header"),
        "paginator": paginator_class()(),
    }
    if session is not None:
        client["session"] = session
    child: dict[str, Any] = {"parallelized": True} if parallelized else {}
    config = {
        "client": client,
        "resource_defaults": {
            "primary_key": "id",
            "write_disposition": "append",
            "endpoint": {"params": {"per_page": per_page}, "data_selector": "data"},
        },
        "resources": [
            {"name": "domains", "endpoint": {"path": "domains"}},
            {"name": "keywords", "endpoint": {"path": "domains/{resources.domains.id}/keywords"}, **child},
            {"name": "competitors", "endpoint": {"path": "domains/{resources.domains.id}/competitors"}, **child},
            {"name": "tags", "endpoint": {"path": "tags"}},
            {
                "name": "usage",
                "endpoint": {"path": "account/usage", "paginator": "single_page", "params": {}},
            },
        ],
    }
    return rest_api_source(config, name=name, parallelized=parallelized)


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux ``ru_maxrss`` is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_s() -> float:
    """CPU seconds (user + system) this process has used."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Load every account of ``job`` with dlt; returns the result dict (module docstring)."""
    workdir = Path(job["workdir"]).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    _prepare_environment(workdir)
    import dlt
    from dlt.sources.helpers.requests import Client

    counter = _AttemptCounter()
    db_path = workdir / "dlt.duckdb"
    phases = {"extract": 0.0, "normalize": 0.0, "load": 0.0}
    datasets: dict[str, str] = {}
    error = None
    file_format = job.get("loader_file_format", "parquet")
    started = time.perf_counter()
    cpu_started = _cpu_s()
    for account in job["accounts"]:
        session = Client(raise_for_status=False).session
        for adapter in {id(a): a for a in session.adapters.values()}.values():
            counter.wrap(adapter)
        dataset = "acct_" + "".join(c if c.isalnum() else "_" for c in account["name"].lower())
        datasets[account["name"]] = dataset
        pipeline = dlt.pipeline(
            pipeline_name=f"bench_{dataset}",
            pipelines_dir=str(workdir / "pipelines"),
            destination=dlt.destinations.duckdb(str(db_path)),
            dataset_name=dataset,
        )
        source = build_source(job["base_url"], account["api_key"], per_page=job.get("per_page", 1000),
                              session=session, name=f"rank_tracker_{dataset}",
                              parallelized=bool(job.get("parallelized", False)))
        try:
            steps = (("extract", functools.partial(pipeline.extract, source, loader_file_format=file_format)),
                     ("normalize", pipeline.normalize), ("load", pipeline.load))
            for phase, step in steps:
                t0 = time.perf_counter()
                try:
                    step()
                finally:
                    phases[phase] += time.perf_counter() - t0
        except Exception as exc:  # the run failed: report it, count what did load
            root = exc
            while root.__cause__ is not None:
                root = root.__cause__
            error = f"{account['name']}: {type(root).__name__}: {str(root)[:300]}"
            traceback.print_exc(file=sys.stderr)
    wall = time.perf_counter() - started
    return {
        "tool": "dlt parallelized" if job.get("parallelized") else "dlt",
        "wall_s": wall,
        "phases_s": phases,
        "peak_rss_mb": peak_rss_mb(),
        "cpu_s": _cpu_s() - cpu_started,
        "client": counter.summary(),
        "error": error,
        "duckdb": str(db_path),
        "datasets": datasets,
    }


def main(argv: list[str] | None = None) -> int:
    """``_peer_dlt.py <job.json> <result.json>``; exit 0 even when dlt failed (``error`` says so)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: _peer_dlt.py <job.json> <result.json>", file=sys.stderr)
        return 2
    job = json.loads(Path(argv[0]).read_text())
    result_path = Path(argv[1]).resolve()
    result = run_job(job)
    result_path.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
