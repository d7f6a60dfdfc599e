"""The ``rank-pipeline`` command line.

Commands:

``demo [--days N]``
    Runs the daily Dagster job for N consecutive simulated days (ending today, UTC) against the
    embedded sandbox, then prints where the warehouse is and two example answers.
``run [--date YYYY-MM-DD]``
    Runs the daily job for one partition (default today) against the configured source.
``extract [--date YYYY-MM-DD]``
    Extracts one day into Parquet snapshots without Dagster, with a progress bar.
``sandbox [--host H] [--port P] [--window-s S]``
    Serves the sandbox API for trying by hand (prints its base URL and demo keys).
``rebuild [--from D] [--to D] [--full-refresh]``
    Rebuilds the raw tables and models from the Parquet snapshots (no API call), then publishes.
``docs``
    Regenerates ``docs/data_dictionary.md`` from the model ``.yml`` files.
``query SQL``
    Runs one SQL statement on the published warehouse (read-only) and prints the result.

Exit status is 0 on success, 1 on a failed run, 2 on bad input; errors print one clear line.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent

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
select account, metric, usage, quota_limit, remaining,
       round(utilisation_pct, 1) as utilisation_pct,
       round(burn_rate_7d, 1) as burn_per_day_7d,
       round(days_to_exhaustion) as days_to_exhaustion,
       projected_exhaustion_date
from marts.fct_quota_burn_daily
where snapshot_date = (select max(snapshot_date) from marts.fct_quota_burn_daily)
order by account, metric
"""


def _today() -> date:
    return datetime.now(UTC).date()


def _positive_int(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of at least 1")
    return int(value)


def _parse_date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date; use YYYY-MM-DD") from None


def _print_query(con, title: str, sql: str) -> None:
    print(f"\n== {title} ==")
    df = con.execute(sql).df()
    import pandas as pd

    with pd.option_context("display.width", 160, "display.max_columns", 20, "display.max_rows", 40):
        print(df.to_string(index=False))


def _dagster_instance(data_dir: Path):
    import dagster as dg

    home = Path(os.environ.get("DAGSTER_HOME") or data_dir / "dagster_home")
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        # every asset that writes DuckDB runs in the "duckdb" pool; one at a time across runs
        config.write_text("concurrency:\n  pools:\n    default_limit: 1\ntelemetry:\n  enabled: false\n")
    os.environ["DAGSTER_HOME"] = str(home)
    return dg.DagsterInstance.get()


def _run_partition(defs, instance, day: date, quiet: bool) -> bool:
    from rank_pipeline.defs.jobs import DAILY_JOB_NAME

    job = defs.resolve_job_def(DAILY_JOB_NAME)
    run_config = {"loggers": {"console": {"config": {"log_level": "WARNING" if quiet else "INFO"}}}}
    result = job.execute_in_process(partition_key=day.isoformat(), instance=instance,
                                    run_config=run_config, raise_on_error=False)
    return result.success


def cmd_demo(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    if os.environ.pop("RANK_TRACKER_BASE_URL", None):
        print("note: the demo always uses the embedded sandbox; RANK_TRACKER_BASE_URL is ignored here",
              file=sys.stderr)
    from rank_pipeline.settings import Settings

    settings = Settings.from_env()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if args.persist:
        instance = _dagster_instance(settings.data_dir)
    else:
        import dagster as dg

        # an in-memory instance: the runs are not kept for the UI, and the demo runs several times
        # faster than with SQLite run storage (--persist keeps them in DAGSTER_HOME)
        instance = dg.DagsterInstance.ephemeral()
    from rank_pipeline.definitions import defs

    end = _today()
    days = [end - timedelta(days=i) for i in range(args.days - 1, -1, -1)]
    print(f"rank-pipeline demo: {len(days)} simulated days ({days[0]} .. {days[-1]}) "
          f"from the embedded sandbox into {settings.data_dir}")
    with tqdm(days, unit="day", desc="daily job", file=sys.stdout) as bar:
        for day in bar:
            bar.set_postfix_str(day.isoformat())
            if not _run_partition(defs, instance, day, quiet=not args.verbose):
                print(f"\nthe daily job failed for {day}; rerun with --verbose to see the Dagster log",
                      file=sys.stderr)
                return 1
    import duckdb

    with duckdb.connect(str(settings.paths.published_db), read_only=True) as con:
        print(f"\nwarehouse: {settings.paths.published_db}")
        print(f"snapshots: {settings.paths.snapshots_dir}")
        _print_query(con, "ranking trends (marts.fct_keyword_rankings_daily, per day)", RANKING_TRENDS_QUERY)
        _print_query(con, "quota burn (marts.fct_quota_burn_daily, latest day)", QUOTA_BURN_QUERY)
    print(f"\nopen it: duckdb -readonly {settings.paths.published_db}   or the UI: make dev")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from rank_pipeline.settings import Settings

    settings = Settings.from_env()
    instance = _dagster_instance(settings.data_dir)
    from rank_pipeline.definitions import defs

    ok = _run_partition(defs, instance, args.date or _today(), quiet=False)
    return 0 if ok else 1


def cmd_extract(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from rank_pipeline.defs.resources import source_from_env
    from rank_pipeline.extract import run_extraction
    from rank_pipeline.settings import Settings

    settings = Settings.from_env()
    source = source_from_env(settings)
    day = args.date or _today()
    base_url, accounts = source.open_source(day)
    bar = tqdm(total=0, unit="list", desc=f"extract {day}", file=sys.stdout)

    def on_progress(p) -> None:
        bar.total = p.lists_total
        bar.n = p.lists_done
        bar.set_postfix(records=p.records, requests=p.requests, http429=p.rate_limited, refresh=False)
        bar.refresh()

    try:
        report = run_extraction(base_url, accounts, day, settings.paths.snapshots_dir,
                                config=source.client_config(), on_progress=on_progress)
    finally:
        bar.close()
    for resource, manifest in report.manifests.items():
        print(f"{resource:12s} rows={manifest['row_count']:>8d} complete={manifest['complete']}")
    print(f"requests per account: { {n: a['requests'] for n, a in report.accounts.items()} }")
    return 0 if report.complete else 1


def cmd_sandbox(args: argparse.Namespace) -> int:
    from rank_pipeline.sandbox import serve

    serve(host=args.host, port=args.port, window_s=args.window_s)
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    from rank_pipeline.sql_models.docs import write_data_dictionary

    out = PROJECT_DIR / "docs" / "data_dictionary.md"
    write_data_dictionary(PROJECT_DIR / "dbt_like_sql", out)
    print(f"wrote {out}")
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    from rank_pipeline.rebuild import RebuildError, rebuild
    from rank_pipeline.settings import Settings

    try:
        report = rebuild(Settings.from_env().paths, PROJECT_DIR / "dbt_like_sql", args.first, args.last,
                         full_refresh=args.full_refresh)
    except RebuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1 if getattr(exc, "report", None) else 2
    print(report.summary())
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    import duckdb

    from rank_pipeline.settings import Settings

    path = Settings.from_env().paths.published_db
    if not path.exists():
        print(f"no warehouse at {path}: run `make demo` (or `rank-pipeline run`) first", file=sys.stderr)
        return 2
    with duckdb.connect(str(path), read_only=True) as con:
        _print_query(con, args.sql.strip().splitlines()[0][:60], args.sql)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rank-pipeline", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="run the daily job for N simulated days on the embedded sandbox")
    p.add_argument("--days", type=_positive_int, default=7)
    p.add_argument("--verbose", action="store_true", help="show the Dagster log")
    p.add_argument("--persist", action="store_true",
                   help="record the runs in DAGSTER_HOME (default data/dagster_home) for the UI; slower")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("run", help="run the daily job for one partition against the configured source")
    p.add_argument("--date", type=_parse_date)
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("extract", help="extract one day into Parquet snapshots (no Dagster)")
    p.add_argument("--date", type=_parse_date)
    p.set_defaults(func=cmd_extract)
    p = sub.add_parser("sandbox", help="serve the sandbox API on loopback")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--window-s", type=float, default=60.0, help="rate-limit window in seconds (spec: 60)")
    p.set_defaults(func=cmd_sandbox)
    p = sub.add_parser("rebuild", help="rebuild raw tables and models from the snapshots (no API call), then publish")
    p.add_argument("--from", dest="first", type=_parse_date, help="first day to rebuild (default: first snapshot)")
    p.add_argument("--to", dest="last", type=_parse_date, help="last day to rebuild (default: last snapshot)")
    p.add_argument("--full-refresh", action="store_true", help="drop and rebuild every raw table and model")
    p.set_defaults(func=cmd_rebuild)
    p = sub.add_parser("docs", help="regenerate docs/data_dictionary.md")
    p.set_defaults(func=cmd_docs)
    p = sub.add_parser("query", help="run one SQL query on the published warehouse")
    p.add_argument("sql")
    p.set_defaults(func=cmd_query)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rank_pipeline.api import RankTrackerError
    from rank_pipeline.extract import ExtractionError
    from rank_pipeline.settings import ConfigurationError

    try:
        return args.func(args)
    except ConfigurationError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    except (RankTrackerError, ExtractionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
