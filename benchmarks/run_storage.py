"""Benchmark of Dagster run storage: the daily job on SQLite storage vs an in-memory instance.

What it does
    Runs the daily job (``daily_rank_pipeline``, every asset and asset check, against the embedded
    sandbox's demo world) for ``--days`` consecutive days, three times, interleaved day by day so the
    shared machine's noise hits all three alike:

    - ``memory``: ``DagsterInstance.ephemeral()`` (the reference);
    - ``stock``: Dagster's default SQLite storage (``dagster.yaml`` with only ``telemetry``), what the
      demo used with ``--persist`` before;
    - ``pooled``: the instance ``rank-pipeline run`` / ``demo`` open now
      (:mod:`rank_pipeline.defs.instance`: the event log keeps one connection per shard and commits
      with ``synchronous=NORMAL``).

    Each configuration has its own data folder and ``DAGSTER_HOME`` under ``--workdir``.

Output
    Per configuration: wall seconds per day (median), events stored per run, and the ratio to
    ``memory``. Ratios, never a pass mark.

Usage
    ``python benchmarks/run_storage.py`` (3 days, a few minutes on 2 busy cores);
    ``--days 1`` for a quick look; ``--profile`` also writes a cProfile of one ``stock`` and one
    ``pooled`` day into the workdir (open with ``python -m pstats``).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import shutil
import statistics
import sys
import time
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / ".work" / "run_storage")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    import dagster as dg

    from rank_pipeline.defs.definitions import defs
    from rank_pipeline.defs.instance import instance_config
    from rank_pipeline.defs.jobs import DAILY_JOB_NAME
    from rank_pipeline.defs.resources import source_from_env

    def instance_for(name: str) -> dg.DagsterInstance:
        if name == "memory":
            return dg.DagsterInstance.ephemeral()
        home = args.workdir / name / "dagster_home"
        home.mkdir(parents=True)
        text = instance_config(home) if name == "pooled" else "telemetry:\n  enabled: false\n"
        (home / "dagster.yaml").write_text(text)
        return dg.DagsterInstance.from_config(str(home))

    names = ["memory", "stock", "pooled"]
    instances = {n: instance_for(n) for n in names}
    from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource

    jobs = {}
    for n in names:
        jobs[n] = dg.Definitions(
            assets=list(defs.assets), jobs=[defs.resolve_job_def(DAILY_JOB_NAME)],
            resources={"source": source_from_env(), "warehouse": WarehouseResource(data_dir=str(args.workdir / n)),
                       "model_engine": ModelEngineResource()},
        ).resolve_job_def(DAILY_JOB_NAME)
    run_config = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
    start = date(2026, 11, 1)
    seconds: dict[str, list[float]] = {n: [] for n in names}
    events: dict[str, list[int]] = {n: [] for n in names}
    for i in range(args.days):
        day = start + timedelta(days=i)
        for n in names:
            profiler = cProfile.Profile() if args.profile and i == 0 and n != "memory" else None
            t0 = time.perf_counter()
            if profiler:
                profiler.enable()
            result = jobs[n].execute_in_process(partition_key=day.isoformat(), instance=instances[n],
                                                run_config=run_config, raise_on_error=False)
            if profiler:
                profiler.disable()
                profiler.dump_stats(args.workdir / f"{n}.prof")
            seconds[n].append(time.perf_counter() - t0)
            events[n].append(len(result.all_events))
            assert result.success, f"{n} {day} failed"
            print(f"{day} {n:7s} {seconds[n][-1]:6.1f} s", flush=True)
    ref = statistics.median(seconds["memory"])
    print(f"\n{'instance':8s} {'s/day':>7s} {'events/run':>10s} {'/ memory':>9s}")
    for n in names:
        med = statistics.median(seconds[n])
        print(f"{n:8s} {med:7.1f} {events[n][0]:10d} {med / ref:9.2f}")
    print(f"\ncpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    from results import recorded  # benchmarks/ is this script's folder

    sys.exit(recorded("run-storage", main))
