"""Benchmark of a day's bookkeeping against its work: the daily Dagster job at the demo's size and at
5,000 and 50,000 keywords.

What it does
    For each size, in a fresh process with its own data folder and Dagster instance (the SQLite storage
    ``rank-pipeline demo`` and ``run`` open, :mod:`rank_pipeline.defs.instance`): ``--days`` consecutive
    days (default 3, from 2026-11-01) through the real daily job, exactly as the command line runs one
    (:func:`rank_pipeline.cli.runs.run_partition`: the run, its totals, the alert digest), from the
    embedded sandbox serving the demo world (``demo``, about 650 keywords) or a scaled world
    (``WorldConfig.scaled``: one account, ``N / 1000`` domains of 1,000 base keywords each). The first
    day is a warm-up (the sandbox starts, every table is created, the lineage cache is filled); the
    days after it are measured and their medians printed.

    Each measured day's wall time (``time.perf_counter`` around ``run_partition``) is split into
    - extraction: the ``extract_snapshots`` step from its start to its first materialization (the
      extraction itself, before the step reports anything), from the run's Dagster event log;
    - models' SQL: the seconds spent in :func:`rank_pipeline.steps.models.build_relation` (each seed and
      model's build and its tests' SQL), timed around the call;
    - the rest: everything else. Its parts are printed too (from the event log's step starts and ends):
      run creation (until the run starts: planned events, run record), the raw load's step
      (:func:`rank_pipeline.steps.load.load_raw` and the vendor-shape check), the steps' own overhead
      (check evaluations, materializations, outputs, table metadata and lineage; each step's time
      minus its work above), ``ops/run_history`` and ``warehouse/published``, the gaps between steps,
      and what follows the run's end (the result, the command line's totals and the alert digest).

    The process's imports and definitions are paid once per process, not per day: printed apart.

    Then Dagster's own floor for the daily job's shape, in a process of its own: a job of the same
    assets, dependencies, partitions and asset checks (blocking where they block), each step's body
    empty (it reports its materializations without metadata and every check passed), on the same
    SQLite instance, ``--days`` days, the first a warm-up. And the same assets and checks in ONE empty
    step (the shape dagster-dbt gives a dbt project: one step for every model, each model its own asset
    and each test its own check): what no cut of ours can go below while every asset and every check is
    its own in Dagster. And the job's steps without their checks: what the checks themselves cost.

Output
    Per size: keywords extracted, the day's seconds and its parts (medians), then the ratios
    rest / models' SQL and rest / extraction, our own part of a day (the raw load, ``ops/run_history`` and
    the publish step: the parts of the rest that are our code, not Dagster's; the aim is under 1 s at the
    demo's size), and each floor's seconds a day against the demo's models' SQL. Ratios and seconds, never
    a pass or fail: the machine is shared and timings are noisy.

Usage
    ``python benchmarks/overhead.py`` (sizes demo, 5000 and 50000; about 5 minutes on 2 busy cores);
    ``--sizes demo`` for one size, ``--days 4`` for more measured days, ``--no-floor`` without the floor,
    ``--storage both`` to measure each size on the project's pooled event log and on Dagster's stock SQLite
    storage in turn (the figures that keep, or remove, :mod:`rank_pipeline.defs.sqlite_storage`). Data folders go to
    ``--workdir`` (default ``benchmarks/.work/overhead``, git-ignored), emptied first.
"""

from __future__ import annotations

import argparse
import graphlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIRST_DAY = date(2026, 11, 1)
PARTS = ("run_creation", "load", "step_overhead", "run_history", "publish", "between_steps", "after_run")
"""The parts of the rest, in the order a run meets them (module docstring)."""


STOCK_DAGSTER_YAML = "telemetry:\n  enabled: false\n"
"""``--storage stock``: a ``dagster.yaml`` of the user's own (no event-log class named), which
:func:`rank_pipeline.defs.instance.open_instance` keeps: Dagster's stock SQLite storage."""


def _child(size: str, days: int, data_dir: Path, storage: str = "pooled") -> None:
    """Run ``days`` days of the size in this process; print one JSON line per day."""
    started = time.perf_counter()
    os.environ["RANK_PIPELINE_DATA_DIR"] = str(data_dir)
    os.environ.pop("DAGSTER_HOME", None)
    if storage == "stock":
        (data_dir / "dagster_home").mkdir(parents=True, exist_ok=True)
        (data_dir / "dagster_home" / "dagster.yaml").write_text(STOCK_DAGSTER_YAML)
    from rank_pipeline.settings import unset_for_demo

    unset_for_demo()
    from rank_pipeline.cli.output import SESSION, load_settings
    from rank_pipeline.cli.runs import Totals, dagster_instance, run_partition

    settings = load_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    instance = dagster_instance(settings.data_dir)
    with SESSION.capture():
        from rank_pipeline.defs.definitions import defs
    if size != "demo":
        from rank_pipeline.extract.embedded_sandbox import EmbeddedSandbox
        from rank_pipeline.sandbox import World, WorldConfig

        EmbeddedSandbox.install(World(WorldConfig.scaled(domains=max(1, int(size) // 1000), keywords_per_domain=1000)))
    import rank_pipeline.defs.model_assets as model_assets

    sql = [0.0]
    build_relation = model_assets.build_relation

    def timed_build_relation(*args, **kwargs):
        t = time.perf_counter()
        try:
            return build_relation(*args, **kwargs)
        finally:
            sql[0] += time.perf_counter() - t

    model_assets.build_relation = timed_build_relation
    print(json.dumps({"imports": time.perf_counter() - started}), flush=True)
    for i in range(days):
        day = FIRST_DAY + timedelta(days=i)
        sql[0] = 0.0
        t0, wall0 = time.perf_counter(), time.time()
        run_partition(defs, instance, day, Totals())
        wall = time.perf_counter() - t0
        wall1 = wall0 + wall
        run = instance.get_runs(limit=1)[0]
        print(json.dumps({"day": str(day), "wall": wall, "sql": sql[0],
                          **split(instance.all_logs(run.run_id), wall0, wall1, sql[0])}), flush=True)


FLOORS = {"floor": "the daily job's shape", "floor-one-step": "its assets and checks in one step",
          "floor-no-checks": "its steps without their asset checks"}
"""Dagster's floors (module docstring): the child's name, and the shape it runs with empty bodies."""


def _floor_child(floor: str, days: int, data_dir: Path) -> None:
    """Dagster's floor ``floor`` (:data:`FLOORS`): the daily job's assets with empty bodies, in its own
    steps (``floor``, ``floor-no-checks`` without the checks) or in one step (:func:`_one_step`); one JSON
    line per day."""
    os.environ["RANK_PIPELINE_DATA_DIR"] = str(data_dir)
    os.environ.pop("DAGSTER_HOME", None)
    import dagster as dg

    from rank_pipeline.cli.output import load_settings
    from rank_pipeline.cli.runs import dagster_instance
    from rank_pipeline.defs.definitions import defs
    from rank_pipeline.defs.jobs import DAILY_JOB_NAME

    settings = load_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    instance = dagster_instance(settings.data_dir)
    real = [a for a in defs.resolve_job_def(DAILY_JOB_NAME).asset_layer.asset_graph.assets_defs if a.is_executable]
    job = dg.define_asset_job("floor", selection=dg.AssetSelection.all(), executor_def=dg.in_process_executor)
    checked = floor != "floor-no-checks"
    assets = [_one_step(real)] if floor == "floor-one-step" else [_empty_copy(a, checked) for a in real]
    job_def = dg.Definitions(assets=assets, jobs=[job]).resolve_job_def("floor")
    run_config = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
    steps = len(assets)
    checks = sum(len(list(a.check_specs)) for a in assets)
    for i in range(days):
        day = FIRST_DAY + timedelta(days=i)
        started = time.perf_counter()
        result = job_def.execute_in_process(partition_key=day.isoformat(), instance=instance, run_config=run_config)
        print(json.dumps({"day": str(day), "wall": time.perf_counter() - started, "steps": steps, "checks": checks,
                          "events": len(instance.all_logs(result.run_id))}), flush=True)


def _empty_copy(assets_def, checked: bool = True):
    """``assets_def`` with an empty body: same name, asset keys, dependencies, partitions and (if
    ``checked``) checks."""
    return _empty(assets_def.node_def.name, [assets_def], checked)


def _one_step(assets_defs):
    """Every asset and asset check of ``assets_defs`` in one multi-asset with an empty body: the floor of
    the shape dagster-dbt gives a dbt project (one step for every model, each model its own asset and
    each test its own check), with the same keys, dependencies, partitions and checks."""
    partitions = {a.partitions_def for a in assets_defs}
    if len(partitions) != 1:
        raise SystemExit(f"the one-step floor needs one partitions definition for every asset, not {len(partitions)}")
    return _empty("one_step", assets_defs)


def _empty(name: str, assets_defs, checked: bool = True):
    """One multi-asset named ``name`` with the specs and (if ``checked``) the check specs of
    ``assets_defs``, and an empty body."""
    import dagster as dg

    given = {spec.key: spec for a in assets_defs for spec in a.specs}
    order = graphlib.TopologicalSorter({k: [d.asset_key for d in s.deps if d.asset_key in given]
                                        for k, s in given.items()}).static_order()  # a step yields in this order
    specs = [dg.AssetSpec(k, deps=given[k].deps, group_name=given[k].group_name) for k in order]
    checks = [dg.AssetCheckSpec(c.name, asset=c.asset_key, blocking=c.blocking, additional_deps=c.additional_deps)
              for a in assets_defs for c in a.check_specs if checked]
    first = assets_defs[0]

    @dg.multi_asset(name=name, specs=specs, check_specs=checks,
                    partitions_def=first.partitions_def, backfill_policy=first.backfill_policy)
    def empty():
        for spec in specs:
            yield dg.MaterializeResult(asset_key=spec.key)
        for c in checks:
            yield dg.AssetCheckResult(asset_key=c.asset_key, check_name=c.name, passed=True)

    return empty


def split(logs, wall0: float, wall1: float, sql: float) -> dict[str, float]:
    """The day's parts (seconds) from the run's event log; ``wall0``/``wall1`` the epoch seconds around
    the run, ``sql`` the models' SQL seconds (inside the seed and model steps)."""
    import dagster as dg

    from rank_pipeline.operations.dagster_names import EXTRACT_STEP, LOAD_STEP, PUBLISH_STEPS

    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    first_output: dict[str, float] = {}
    run_start = run_end = None
    keywords = 0
    for entry in logs:
        event = entry.dagster_event
        if event is None:
            continue
        kind = event.event_type
        if kind == dg.DagsterEventType.RUN_START:
            run_start = entry.timestamp
        elif kind in (dg.DagsterEventType.RUN_SUCCESS, dg.DagsterEventType.RUN_FAILURE):
            run_end = entry.timestamp
        elif kind == dg.DagsterEventType.STEP_START:
            starts[event.step_key] = entry.timestamp
        elif kind in (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE):
            ends[event.step_key] = entry.timestamp
        elif kind == dg.DagsterEventType.ASSET_MATERIALIZATION:
            first_output.setdefault(event.step_key, entry.timestamp)
            materialization = event.event_specific_data.materialization
            if materialization.asset_key.path == ["snapshots", "keywords"]:
                keywords = int(materialization.metadata["rows"].value)
    steps = {k: ends[k] - v for k, v in starts.items() if k in ends}
    extraction = first_output[EXTRACT_STEP] - starts[EXTRACT_STEP]
    load = first_output[LOAD_STEP] - starts[LOAD_STEP]
    history, publish = (steps.get(k, 0.0) for k in PUBLISH_STEPS)
    return {
        "keywords": keywords, "extraction": extraction,
        "run_creation": run_start - wall0, "load": load,
        "step_overhead": sum(steps.values()) - extraction - load - sql - history - publish,
        "run_history": history, "publish": publish,
        "between_steps": (run_end - run_start) - sum(steps.values()), "after_run": wall1 - run_end,
    }


def _run_size(size: str, days: int, workdir: Path, storage: str = "pooled") -> tuple[float, list[dict]]:
    """Run ``size`` (``demo``, a keyword count, or a floor of :data:`FLOORS`) in a child process:
    (imports s, days' lines)."""
    data_dir = workdir / size
    shutil.rmtree(data_dir, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, __file__, "--child", size, "--days", str(days), "--workdir", str(workdir),
                          "--storage", storage],
                         env=env, capture_output=True, text=True, cwd=ROOT)
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if size in FLOORS:
        lines.insert(0, {"imports": 0.0})
    if out.returncode != 0 or len(lines) != days + 1:
        sys.stderr.write(out.stderr[-4000:])
        raise SystemExit(f"size {size}: the child process failed (exit {out.returncode})")
    return lines[0]["imports"], lines[1:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="demo,5000,50000", help="comma-separated: demo and keyword counts")
    parser.add_argument("--days", type=int, default=3, help="days per size; the first is a warm-up")
    parser.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / ".work" / "overhead")
    parser.add_argument("--no-floor", action="store_true", help="leave out Dagster's floor (the job's shape, empty)")
    parser.add_argument("--storage", choices=("pooled", "stock", "both"), default="pooled",
                        help="Dagster's event log: the project's pooled SQLite class (default, what the command line "
                             "opens), Dagster's stock SQLite storage, or both in turn per size (the stock row's rest "
                             "against the pooled one's, measured in the same run)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.days < 2:
        parser.error("--days must be at least 2 (the first day is a warm-up)")
    if args.child in FLOORS:
        _floor_child(args.child, args.days, args.workdir / args.child)
        return 0
    if args.child:
        _child(args.child, args.days, args.workdir / args.child, args.storage)
        return 0
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"overhead benchmark: the daily job, {args.days - 1} measured day(s) after a warm-up, sizes "
          f"{', '.join(sizes)}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    storages = ("pooled", "stock") if args.storage == "both" else (args.storage,)
    for size in sizes:
        for storage in storages:
            imports, days = _run_size(size, args.days, args.workdir / storage, storage)
            med = {k: statistics.median(d[k] for d in days[1:]) for k in ("wall", "sql", "extraction", "keywords", *PARTS)}
            med["rest"] = statistics.median(d["wall"] - d["sql"] - d["extraction"] for d in days[1:])
            rows.append((size, storage, med))
            print(f"  {size} ({storage} event log): {int(med['keywords']):,} keywords, {med['wall']:.1f} s a day (imports "
                  f"and definitions {imports:.1f} s once per process); rest: "
                  + ", ".join(f"{p} {med[p]:.2f}" for p in PARTS), flush=True)
    print("\n| size | event log | keywords | day s | extraction s | models' SQL s | rest s | rest / SQL | rest / extraction |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for size, storage, m in rows:
        print(f"| {size} | {storage} | {int(m['keywords']):,} | {m['wall']:.1f} | {m['extraction']:.2f} | {m['sql']:.2f} | "
              f"{m['rest']:.2f} | {m['rest'] / m['sql']:.2f} | {m['rest'] / m['extraction']:.2f} |")
    print()
    for size, storage, m in rows:
        own = m["load"] + m["run_history"] + m["publish"]
        print(f"{size} ({storage}): our own part of a day {own:.2f} s (raw load {m['load']:.2f}, ops/run_history "
              f"{m['run_history']:.2f}, publish {m['publish']:.2f}); the rest is Dagster's (run creation, the steps' "
              "own overhead, between and after the steps)")
    if len(storages) == 2:
        for size in sizes:
            pooled, stock = (next(m for s_, st, m in rows if s_ == size and st == which) for which in storages)
            print(f"{size}: stock event log's rest / pooled event log's rest = {stock['rest'] / pooled['rest']:.2f}")
    if not args.no_floor:
        demo_sql = next((m["sql"] for size, _s, m in rows if size == "demo"), None)
        print()
        for floor, shape in FLOORS.items():
            _, days = _run_size(floor, args.days, args.workdir)
            wall = statistics.median(d["wall"] for d in days[1:])
            print(f"Dagster's floor for {shape} ({days[0]['steps']} steps, {days[0]['checks']} asset checks, "
                  f"{days[0]['events']} events, empty bodies): {wall:.2f} s a day"
                  + (f" = {wall / demo_sql:.2f} x the demo's models' SQL" if demo_sql else ""), flush=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    from results import recorded  # benchmarks/ is this script's folder

    sys.exit(recorded("overhead", main))
