"""The pipeline's commands: ``demo``, ``run`` (the daily Dagster job), ``extract`` (one day into snapshots,
without Dagster) and ``sandbox``; ``rebuild`` (the rebuild job) is :mod:`rank_pipeline.cli.rebuild`."""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta

from rank_pipeline.cli.args import check_partition, today
from rank_pipeline.cli.errors import RunFailed, UsageError
from rank_pipeline.cli.output import SESSION, Progress, load_settings, print_query
from rank_pipeline.cli.runs import Totals, dagster_instance, run_partition, run_partition_range

RANKING_TRENDS_QUERY = """
select snapshot_date, count(*) as keywords,
       count(position) as ranking,
       round(avg(position), 1) as avg_position,
       count(*) filter (where movement_1d = 'improved') as improved,
       count(*) filter (where movement_1d = 'declined') as declined,
       count(*) filter (where movement_1d = 'entered') as entered,
       count(*) filter (where movement_1d = 'dropped_out') as dropped_out
from marts.fct_keyword_rankings_daily
group by snapshot_date
order by snapshot_date
"""

QUOTA_BURN_QUERY = """
select account, metric, metric_kind, usage, quota_limit,
       round(utilisation_pct, 1) as utilisation_pct,
       cycle_start, cycle_end,
       round(burn_rate_median_7d, 1) as burn_per_day_median_7d,
       round(projected_usage_at_cycle_end) as projected_at_cycle_end,
       runs_out_before_reset, projected_exhaustion_date
from marts.fct_quota_cycle_daily
where snapshot_date = (select max(snapshot_date) from marts.fct_quota_cycle_daily)
order by account, metric
"""


def cmd_demo(args: argparse.Namespace) -> int:
    from rank_pipeline.settings import BASE_URL_ENV, ENGINE_ENV, find_component_file, unset_for_demo

    ignored = unset_for_demo()  # from the environment, which every reader of this process reads
    component = find_component_file()  # and the project's attributes (load_settings(demo=True) leaves them out)
    if component is not None and component.attributes.base_url is not None:
        ignored.append(f"base_url in {component.path.name}")
    if component is not None and component.attributes.engine not in (None, "duckdb"):
        ignored.append(f"engine in {component.path.name}")
    for name in ignored:
        if name == BASE_URL_ENV or name.startswith("base_url"):
            print(f"note: the demo always uses the embedded sandbox; {name} is ignored here", file=sys.stderr)
        elif name == ENGINE_ENV or name.startswith("engine"):  # the demo prints marts from the published DuckDB file
            print(f"note: the demo builds the models on DuckDB; {name} is ignored here", file=sys.stderr)
    settings = load_settings(demo=True)
    _check_before_a_run(settings)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if args.in_memory:
        import dagster as dg

        instance = dg.DagsterInstance.ephemeral()
    else:  # the runs are recorded in DAGSTER_HOME, so the UI (ui_command) shows them
        instance = dagster_instance(settings.data_dir)
    last = today()
    first = last - timedelta(days=args.days - 1)
    _start_partitions_for_demo(settings, first)
    with SESSION.capture():  # the settings read again: the partitions now start on the demo's first day
        from rank_pipeline.defs.component import build_definitions
        from rank_pipeline.settings import find_project

        defs = build_definitions(load_settings(demo=True), find_project())

    print(f"rank-pipeline demo: {args.days} simulated day(s) ({first} .. {last}) from the embedded sandbox "
          f"into {settings.data_dir}")
    if first != last:
        print(f"one run of the daily job over the {args.days} partitions (a single-run backfill)")
    totals = Totals()
    from rank_pipeline.defs.jobs import DAILY_JOB_NAME

    steps = len(defs.resolve_job_def(DAILY_JOB_NAME).graph.nodes)
    progress = Progress(f"daily job {first}" if first == last else f"daily job {first}..{last}", "step",
                        total=steps)
    try:
        run_id = run_partition_range(defs, instance, first, last, totals,
                                     on_step=lambda done, step: progress.update(done, steps, last=step))
    except Exception:
        progress.close()
        _print_failures(totals)
        print(totals.line("Failed"), file=sys.stderr)
        raise
    progress.close()
    print(f"run {run_id}: one run of the daily job materialized {args.days} partition(s), {first} .. {last}")
    import duckdb

    with duckdb.connect(str(settings.paths.published_db), read_only=True) as con:
        print(f"\nwarehouse: {settings.paths.published_db}")
        print(f"snapshots: {settings.paths.snapshot_store_uri}")
        print_query(con, "ranking trends (marts.fct_keyword_rankings_daily, per day)", RANKING_TRENDS_QUERY)
        print_query(con, "quota per billing cycle (marts.fct_quota_cycle_daily, latest day)", QUOTA_BURN_QUERY)
    print(f"\nquery it: {QUERY_SUGGESTION}")
    print(f"the UI:   {ui_command(settings.data_dir)}")
    _print_failures(totals)
    print(totals.line("Completed"))
    return 0


def _start_partitions_for_demo(settings, first) -> None:
    """The demo's partitions start at its first day ``first`` on a fresh data folder (its days only), at the
    folder's first snapshot day when that is earlier; a start set (``partition_start``) after ``first`` is
    refused in one line. Sets ``RANK_PIPELINE_PARTITION_START`` in this process for the definitions."""
    from rank_pipeline.settings import find_project, start_partitions_at
    from rank_pipeline.snapshots.partition_start import FIRST_SNAPSHOT, partition_start

    start = partition_start(settings, find_project())
    if start.explicit and start.day > first:
        raise UsageError(f"the demo's first day {first} is before the first daily partition {start.day} "
                         f"({start.source}): pass fewer --days, or set {start.source} to {first} or earlier")
    if not start.explicit:
        start_partitions_at(min(first, start.day) if start.source == FIRST_SNAPSHOT else first)


QUERY_SUGGESTION = 'rank-pipeline query "select * from marts.fct_keyword_rankings_daily limit 10"'
"""The query the demo and the README suggest: a command the package installs (no ``duckdb`` CLI needed)."""


def ui_command(data_dir, cwd=None) -> str:
    """The command that opens Dagster's UI on this data folder's runs, where the demo ran: ``dg dev`` in a
    project made by ``rank-pipeline init`` (after ``pip install -e .`` when ``dg`` is not installed yet),
    ``make dev`` in rank-pipeline's clone (its Makefile's ``dev`` target), else ``dagster dev`` on the
    package's definitions with the data folder's ``DAGSTER_HOME``."""
    import shlex
    import shutil
    from pathlib import Path

    from rank_pipeline.settings import ConfigurationError, find_project

    here = Path(cwd or Path.cwd())
    try:
        project = find_project(here)
    except ConfigurationError:
        project = None
    if project is not None:
        return "dg dev" if shutil.which("dg") else "pip install -e . && dg dev   (dg comes with the project)"
    makefile = here / "Makefile"
    if (here / "workspace.yaml").is_file() and makefile.is_file() and "\ndev:" in makefile.read_text():
        return "make dev"
    from rank_pipeline.defs.instance import dagster_home

    # always spelled out: opening the run's instance sets DAGSTER_HOME in this process, not in the user's shell
    return f"DAGSTER_HOME={shlex.quote(str(dagster_home(data_dir)))} dagster dev -m rank_pipeline.defs.definitions"


def _print_failures(totals, stream=None) -> None:
    """The failed checks of a run, one line each (:meth:`rank_pipeline.cli.runs.Totals.failure_lines`)."""
    for line in totals.failure_lines():
        print(line, file=stream or sys.stderr)


def cmd_run(args: argparse.Namespace) -> int:
    settings = load_settings()
    if settings.shard is not None:
        raise UsageError(f"RANK_PIPELINE_SHARD={settings.shard} is for extraction workers: run `rank-pipeline "
                         "extract` on each worker, then `rank-pipeline rebuild --from D --to D` once all shards "
                         "committed (or unset RANK_PIPELINE_SHARD)")
    day = check_partition(args.date or today(), settings)
    source = _check_before_a_run(settings)
    _check_day_for_source(day, source)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    instance = dagster_instance(settings.data_dir)
    with SESSION.capture():
        from rank_pipeline.defs.definitions import defs
    totals = Totals()
    print(f"rank-pipeline run: {day} from {source.describe()} into {settings.data_dir}", flush=True)
    try:
        run_partition(defs, instance, day, totals)
    except Exception:
        _print_failures(totals)
        print(totals.line("Failed"), file=sys.stderr)
        raise
    _print_failures(totals)
    print(totals.line("Completed"))
    return 0


def _check_before_a_run(settings):
    """The source (:func:`rank_pipeline.steps.extract.check_source`) and the model engine, checked before
    anything is written or a run starts; returns the source. Raises ConfigurationError or UsageError."""
    from rank_pipeline.extract.source import Source
    from rank_pipeline.settings import EngineSettings
    from rank_pipeline.steps.extract import check_source

    if settings.shards is not None:
        raise UsageError(f"RANK_PIPELINE_SHARDS={settings.shards.count} shards the extraction under Dagster: "
                         "run dagster-daemon (the schedule extracts every shard, then the daily run follows), "
                         "or unset RANK_PIPELINE_SHARDS for one run of every account")
    source = Source.from_settings(settings)
    check_source(source, settings.paths)
    try:
        EngineSettings.from_env(data_dir=settings.data_dir)
        if source.uses_sandbox:
            from rank_pipeline.sandbox.shapes import parse_shape
            from rank_pipeline.settings import sandbox_shape_from_env

            parse_shape(sandbox_shape_from_env())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return source


def _check_day_for_source(day, source) -> None:
    """Refuse a past day against the vendor API before the job starts (exit 2, as a future day is): the API
    tells only the present (spec "Snapshots"). The embedded sandbox plays any day."""
    now = today()
    if not source.uses_sandbox and day < now:
        raise UsageError(f"--date {day} is in the past: the vendor API tells only the present, so only today's "
                         f"partition ({now}, UTC) can be extracted from it; leave --date out, or rebuild past "
                         f"days from their snapshots with `rank-pipeline rebuild --from {day} --to {day}`")


def _to_stderr():
    """A one-line writer to the real stderr, even while :meth:`SESSION.capture` redirects it."""
    err = sys.stderr
    return lambda message: print(message, file=err)


def cmd_extract(args: argparse.Namespace) -> int:
    from rank_pipeline.extract.source import Source
    from rank_pipeline.steps.extract import check_source, extract_days

    settings = load_settings()
    day = check_partition(args.date or today(), settings)
    source = Source.from_settings(settings)
    check_source(source, settings.paths)  # a configuration error: one line, nothing written
    _check_day_for_source(day, source)
    progress = Progress(f"extract {day}", "list")
    from rank_pipeline.api import requests_sent

    sent_before = requests_sent()

    def on_progress(p) -> None:
        progress.update(p.lists_done, p.lists_total, records=p.records, requests=p.requests, http429=p.rate_limited)

    try:
        note = _to_stderr()  # lock waits and leftovers are for the user; the day's detail for the log
        with SESSION.capture():
            (report,) = extract_days(source, settings.paths, day, holder="rank-pipeline extract", log=note,
                                     detail=lambda message: SESSION.write(message, quiet=True),
                                     on_progress=on_progress)
    finally:
        progress.close()
    for resource, manifest in report.manifests.items():
        print(f"{resource:12s} rows={manifest.row_count:>8d} complete={manifest.complete}")
    sent = requests_sent()  # every request, the accounts' identity check's included
    requests = max(sum(a.requests for a in report.accounts.values()), sent[0] - sent_before[0])
    limited = max(sum(a.rate_limited for a in report.accounts.values()), sent[1] - sent_before[1])
    rows = sum(m.row_count for m in report.manifests.values())
    if not report.complete:
        incomplete = ", ".join(r for r, m in report.manifests.items() if not m.complete)
        raise RunFailed(f"the snapshot of {day} is incomplete ({incomplete}): records shifted between pages "
                        "faster than they could be re-read; run `rank-pipeline extract` again")
    print(f"Completed: 1 day(s), {rows} snapshot rows, {requests} requests, {limited} 429s")
    return 0


def cmd_sandbox(args: argparse.Namespace) -> int:
    from rank_pipeline.sandbox import serve
    from rank_pipeline.sandbox.shapes import parse_shape
    from rank_pipeline.settings import sandbox_shape_from_env

    shape = args.shape or sandbox_shape_from_env()
    try:
        parse_shape(shape)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    serve(host=args.host, port=args.port, window_s=args.window_s, shape=shape)
    return 0
