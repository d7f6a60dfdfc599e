"""rank-pipeline's side of ``benchmarks/extract.py``: one extraction run in a fresh process.

Run as a script, one process per benchmark run, so its peak RSS is its own::

    python benchmarks/_extract_ours.py <job.json> <result.json>

``job.json``: ``{"base_url", "accounts": [{"name", "api_key"}], "snapshot_date": "YYYY-MM-DD",
"snapshots_uri", "config": {<ClientConfig fields>}}``. The run is
:func:`rank_pipeline.extract.day.run_extraction` (every resource of every account, Parquet snapshots and
manifests under ``snapshots_uri``) with ``allow_other_day=True`` (the sandbox's clock is fixed by the
benchmark).

``result.json``: ``{"tool": "rank-pipeline", "wall_s", "peak_rss_mb", "client": {"requests",
"rate_limited", "retries"}, "accounts": <ExtractionReport.accounts>, "manifests": {resource:
{"complete", "accounts": {name: {"expected", "delivered", "complete", "lists", "pages", "passes"}}}},
"complete", "resumed_lists", "passes_max", "error"}``: ``complete`` is ``ExtractionReport.complete``,
``resumed_lists`` the lists taken from the day's checkpoints (a retried run, :mod:`rank_pipeline.extract.resume`),
``passes_max`` the most passes any list took to prove its id set (adaptive settling). ``wall_s`` is the time of ``run_extraction`` (seconds, ``time.perf_counter``);
``peak_rss_mb`` is ``getrusage(RUSAGE_SELF).ru_maxrss`` right after it (MiB); ``cpu_s`` the
process's CPU seconds (user + system) during it; ``client`` sums what
the clients counted ("what the client believes"; the sandbox's own count is the referee).
"""

from __future__ import annotations

import json
import resource
import sys
import time
import traceback
from datetime import date
from pathlib import Path
from typing import Any

__all__ = ["main", "run_job"]


def _manifest_summary(manifest: dict[str, Any]) -> dict[str, Any]:
    keep = ("expected", "delivered", "complete", "lists", "pages", "passes", "missing_parents")
    return {
        "complete": manifest.get("complete"),
        "accounts": {name: {k: v for k, v in entry.items() if k in keep}
                     for name, entry in (manifest.get("accounts") or {}).items()},
    }


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One extraction run; returns the result dict (module docstring). Never raises: ``error`` says."""
    from rank_pipeline.api import ClientConfig
    from rank_pipeline.extract.day import AccountSource, run_extraction

    config = ClientConfig(**job.get("config", {}))
    accounts = [AccountSource(a["name"], a["api_key"]) for a in job["accounts"]]
    error = None
    report = None
    started = time.perf_counter()
    cpu_started = _cpu_s()
    try:
        report = run_extraction(job["base_url"], accounts, date.fromisoformat(job["snapshot_date"]),
                                Path(job["snapshots_uri"]), config=config, allow_other_day=True)
    except Exception as exc:  # report it: the benchmark prints the failure beside the figures
        error = f"{type(exc).__name__}: {str(exc)[:300]}"
        traceback.print_exc(file=sys.stderr)
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    rss = usage.ru_maxrss / 1024.0
    cpu = usage.ru_utime + usage.ru_stime - cpu_started
    accounts_stats = {n: a.model_dump() for n, a in report.accounts.items()} if report is not None else {}
    return {
        "tool": "rank-pipeline",
        "wall_s": wall,
        "peak_rss_mb": rss,
        "cpu_s": cpu,
        "client": {
            "requests": sum(s.get("requests", 0) for s in accounts_stats.values()),
            "rate_limited": sum(s.get("rate_limited", 0) for s in accounts_stats.values()),
            "retries": sum(s.get("retries", 0) for s in accounts_stats.values()),
        },
        "accounts": accounts_stats,
        "manifests": {r: _manifest_summary(m.model_dump(mode="json"))
                      for r, m in (report.manifests if report else {}).items()},
        "complete": report.complete if report is not None else False,
        "resumed_lists": report.resumed_lists if report is not None else 0,
        "passes_max": max((r.passes for lists in (report.lists if report else {}).values() for r in lists),
                          default=0),
        "error": error,
    }


def main(argv: list[str] | None = None) -> int:
    """``_extract_ours.py <job.json> <result.json>``; exit 0 even when the run failed."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: _extract_ours.py <job.json> <result.json>", file=sys.stderr)
        return 2
    job = json.loads(Path(argv[0]).read_text())
    Path(argv[1]).write_text(json.dumps(run_job(job), default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
