"""The ``rank-pipeline`` command line.

Commands:

``demo [--days N]``
    Runs the daily Dagster job for N consecutive simulated days (ending today, UTC) against the
    embedded sandbox, then prints where the warehouse is and two example answers.
``run [--date YYYY-MM-DD]``
    Runs the daily job for one partition (default today) against the configured source.
``extract [--date YYYY-MM-DD]``
    Extracts one day into Parquet snapshots without Dagster.
``sandbox [--host H] [--port P] [--window-s S]``
    Serves the sandbox API for trying by hand (prints its base URL and demo keys).
``rebuild [--from D] [--to D] [--full-refresh]``
    Rebuilds the raw tables and models from the Parquet snapshots (no API call), then publishes.
``docs [--out DIR] [--dictionary PATH] [--models-dir DIR] [--serve [--port P]]``
    Writes the models' documentation site (default ``docs/site/``: the model graph, every model's
    columns, tests, SQL and column-level lineage, search) and, with ``--dictionary``, the Markdown data
    dictionary; ``--serve`` then serves the site on 127.0.0.1 until interrupted.
``test [--unit | --data] [--select MODEL ...] [--models-dir DIR]``
    Runs the models' SQL unit tests (DuckDB in memory, no warehouse needed) and their data tests on the
    published warehouse; exit 1 when one fails, printing the differing or failing rows.
``diff [--models-dir DIR]``
    Builds the models folder into a scratch warehouse from the current snapshots (no API call) and
    compares every model with the published warehouse; exit 0 when equal, 1 when different.
``query SQL [--limit N] [--format table|csv|json]``
    Runs exactly one SQL statement on the published warehouse (read-only) and prints the result.
``keywords plan FILE [--offline]`` / ``keywords apply FILE [--yes]``
    Tracked keywords as code (:mod:`rank_pipeline.keywords`). Their own exit statuses: plan 0 no changes,
    2 changes pending, 3 an error in the file, settings or plan; apply 0 applied, 3 refused before sending
    anything, 1 failed while applying.

Exit status:

- 0: success;
- 1: a failed run (a step, a blocking check, the source);
- 2: bad usage or configuration;
- 3: the data folder (``RANK_PIPELINE_DATA_DIR``, or a ``DAGSTER_HOME`` outside it) cannot be written:
  read-only file system, not writable by this user, or full. The line names the folder and says what to
  do (remount it read-write, give the user write permission, free space, or point
  ``RANK_PIPELINE_DATA_DIR`` elsewhere); what earlier runs wrote (snapshots, the published warehouse) is
  left as it was (:mod:`rank_pipeline.ops.data_folder`);
- 130: interrupted.

Every failure ends with one line on stderr saying what was wrong and what to do; the detail (the Dagster
log, a traceback) is in a log file under ``<data folder>/logs/`` whose path is printed. When that log
file cannot be created or written, the detail goes to stderr instead (a data-folder fault needs none: its
one line is the whole story). ``run`` and ``demo`` send each run's alert digest to
``RANK_PIPELINE_ALERT_URLS`` (a failing destination is a warning) and end with a summary line (days, rows, checks
passed/failed, requests, 429s). Progress is a bar on a terminal and periodic log lines otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import errno
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TextIO

from rank_pipeline.ops.data_folder import DATA_FOLDER_EXIT_STATUS

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

PROGRESS_INTERVAL_S = 5.0
"""Seconds between progress lines when stdout is not a terminal."""


class UsageError(Exception):
    """Bad command-line input found after parsing (exit status 2)."""


class RunFailed(Exception):
    """A run failed (exit status 1); the message is the one line to print."""


def _today() -> date:
    return datetime.now(UTC).date()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rank-pipeline")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "unknown"


def _positive_int(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of at least 1")
    return int(value)


def _parse_date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date; use YYYY-MM-DD") from None


def _check_partition(day: date) -> date:
    """Refuse a date outside the daily partitions (:data:`rank_pipeline.defs.partitions.PARTITIONS_START`..today)."""
    from rank_pipeline.settings import PARTITIONS_START

    first, last = date.fromisoformat(PARTITIONS_START), _today()
    if not first <= day <= last:
        raise UsageError(f"--date {day} is outside the daily partitions: pass a date from {first} to {last} "
                         "(today, UTC)")
    return day


# -- output helpers ---------------------------------------------------------------------------------


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _Progress:
    """A tqdm bar on a terminal; otherwise a log line every :data:`PROGRESS_INTERVAL_S` seconds."""

    def __init__(self, desc: str, unit: str, total: int = 0, out: TextIO | None = None):
        self.out = out or sys.stdout
        self.desc = desc
        self.unit = unit
        self._bar = None
        self._last = 0.0
        if _is_tty(self.out):
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit=unit, desc=desc, file=self.out)

    def update(self, done: int, total: int, **info) -> None:
        if self._bar is not None:
            self._bar.total = total
            self._bar.n = done
            self._bar.set_postfix(refresh=False, **info)
            self._bar.refresh()
            return
        now = time.monotonic()
        if now - self._last >= PROGRESS_INTERVAL_S or (total and done >= total):
            self._last = now
            extra = "".join(f", {k} {v}" for k, v in info.items())
            stamp = datetime.now(UTC).strftime("%H:%M:%S")
            print(f"{stamp} {self.desc}: {done}/{total} {self.unit}s{extra}", file=self.out, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _frame(con, sql: str, limit: int | None = None):
    """``(columns, rows, more)`` of a query; ``more`` is True when rows beyond ``limit`` were cut."""
    cur = con.execute(sql)
    columns = [d[0] for d in cur.description] if cur.description else []
    if limit is None:
        return columns, cur.fetchall(), False
    rows = cur.fetchmany(limit + 1)
    return columns, rows[:limit], len(rows) > limit


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        return f"{value:.6g}" if abs(value) < 1e15 else str(value)
    return str(value)


def _print_table(columns: list[str], rows: list[tuple], out: TextIO, max_width: int = 60) -> None:
    cells = [[_cell(v)[:max_width] for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip(), file=out)


def _print_query(con, title: str, sql: str) -> None:
    print(f"\n== {title} ==")
    columns, rows, _ = _frame(con, sql)
    _print_table(columns, rows, sys.stdout)


# -- logging ----------------------------------------------------------------------------------------


class _FallbackStream:
    """A text stream writing to the log file until a write fails, then to the real stderr.

    Used for the Dagster log and redirected stderr: a log file that cannot take a write (a full or
    read-only data folder) must not turn into a logging traceback or an exception inside a run step.
    """

    def __init__(self, file: TextIO, session: _Session):
        self._file = file
        self._session = session
        self._broken = False

    def write(self, text: str) -> int:
        if not self._broken:
            try:
                n = self._file.write(text)
                self._file.flush()
                return n
            except OSError:
                self._broken = True
                self._session.log_failed()
        return sys.__stderr__.write(text) if sys.__stderr__ else len(text)

    def flush(self) -> None:
        if not self._broken:
            try:
                self._file.flush()
            except OSError:
                self._broken = True
                self._session.log_failed()

    def isatty(self) -> bool:
        return False


@dataclass
class _Session:
    """One command invocation: its log file (created on first use) and what to print at the end.

    When the log file cannot be created or written (the data folder is read-only, not writable or
    full), the log is dropped and what would have gone into it goes to stderr.
    """

    logs_dir: Path | None = None
    command: str = ""
    verbose: bool = False
    _path: Path | None = field(default=None, init=False)

    @property
    def log_path(self) -> Path | None:
        if self._path is None and self.logs_dir is not None:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            path = self.logs_dir / f"{self.command}-{stamp}-{os.getpid()}.log"
            try:
                self.logs_dir.mkdir(parents=True, exist_ok=True)
                path.touch()
            except OSError:
                self.log_failed()
                return None
            self._path = path
        return self._path

    def log_failed(self) -> None:
        """Stop using the log file (it cannot be written); later detail goes to stderr."""
        self.logs_dir = None
        self._path = None

    def write(self, text: str, *, quiet: bool = False) -> None:
        """Append ``text`` to the log file; to stderr when there is none (unless ``quiet``)."""
        text = text if text.endswith("\n") else text + "\n"
        path = self.log_path
        if path is not None:
            try:
                with path.open("a") as f:
                    f.write(text)
                return
            except OSError:
                self.log_failed()
        if not quiet:
            sys.stderr.write(text)

    @contextlib.contextmanager
    def capture(self) -> Iterator[None]:
        """Send stderr and Python logging (the Dagster log included) to the log file meanwhile."""
        path = self.log_path
        if path is None:
            yield
            return
        try:
            f = path.open("a")
        except OSError:
            self.log_failed()
            yield
            return
        stream = _FallbackStream(f, self)
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        try:
            with contextlib.redirect_stderr(sys.stderr if self.verbose else stream):
                yield
        finally:
            root.removeHandler(handler)
            try:
                f.close()
            except OSError:
                self.log_failed()


_SESSION = _Session()


def _settings():
    from rank_pipeline.settings import Settings

    settings = Settings.from_env()
    _SESSION.logs_dir = settings.paths.logs_dir
    return settings


# -- running the daily job --------------------------------------------------------------------------


@dataclass
class _Totals:
    """What a ``run`` or ``demo`` did, for its summary line."""

    days: int = 0
    rows: int = 0
    checks_passed: int = 0
    checks_failed: int = 0
    requests: int = 0
    rate_limited: int = 0

    def add(self, result) -> None:
        self.days += 1
        for event in result.get_asset_materialization_events():
            materialization = event.event_specific_data.materialization
            meta = materialization.metadata
            if materialization.asset_key.path[0] == "snapshots":
                self.rows += int(getattr(meta.get("rows"), "value", 0) or 0)
                if materialization.asset_key.path[-1] == "usage":  # the run's totals are on every snapshot
                    self.requests += int(getattr(meta.get("requests_total"), "value", 0) or 0)
                    self.rate_limited += int(getattr(meta.get("rate_limited_total"), "value", 0) or 0)
        for evaluation in result.get_asset_check_evaluations():
            if evaluation.passed:
                self.checks_passed += 1
            else:
                self.checks_failed += 1

    def line(self, verdict: str) -> str:
        return (f"{verdict}: {self.days} day(s), {self.rows} snapshot rows, checks {self.checks_passed} passed / "
                f"{self.checks_failed} failed, {self.requests} requests, {self.rate_limited} 429s")


def _dagster_instance(data_dir: Path):
    from rank_pipeline.defs.instance import open_instance

    err = sys.stderr  # lock waits are for the user; storage warnings (PostgreSQL retries) for the log file
    with _SESSION.capture():
        return open_instance(data_dir, log=lambda message: print(message, file=err))


def _failure_reason(result) -> tuple[str, bool]:
    """``(one line, is_configuration)`` explaining why a Dagster run failed."""
    import dagster as dg

    from rank_pipeline.defs.instance import error_line, innermost_error

    for event in result.all_events:
        if event.event_type == dg.DagsterEventType.STEP_FAILURE:
            error = innermost_error(event.event_specific_data.error)
            message = error_line(error)
            return f"step {event.step_key}: {message}", error is not None and error.cls_name == "ConfigurationError"
    failed = [e for e in result.get_asset_check_evaluations() if not e.passed]
    if failed:
        names = ", ".join(f"{e.check_name} on {e.asset_key.to_user_string()}" for e in failed[:3])
        return f"{len(failed)} check(s) failed ({names})", False
    return "the run did not succeed", False


def _send_alerts(instance, run_id: str) -> None:
    """The run's alert digest to ``RANK_PIPELINE_ALERT_URLS`` (:func:`rank_pipeline.defs.sensors.send_run_digest`);
    a failing destination is one warning on stderr, never a failed command."""
    from rank_pipeline.defs.sensors import send_run_digest

    warnings: list[str] = []
    with _SESSION.capture():
        send_run_digest(instance, run_id, warn=warnings.append)
    for message in warnings:
        _SESSION.write(f"warning: {message}")
        print(f"warning: {message}", file=sys.stderr)


def _run_partition(defs, instance, day: date, totals: _Totals) -> None:
    """Run the daily job for ``day``; its log goes to the session's log file. Raises RunFailed."""
    from rank_pipeline.defs.jobs import DAILY_JOB_NAME
    from rank_pipeline.settings import ConfigurationError

    job = defs.resolve_job_def(DAILY_JOB_NAME)
    run_config = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
    from rank_pipeline.defs.instance import lock_timeout_message, process_tags
    from rank_pipeline.ops.history import LAUNCHED_BY_TAG

    tags = {**process_tags(), LAUNCHED_BY_TAG: "cli"}  # ops.run_history's launched_by
    with _SESSION.capture():
        result = job.execute_in_process(partition_key=day.isoformat(), instance=instance, tags=tags,
                                        run_config=run_config, raise_on_error=False)
    totals.add(result)
    _send_alerts(instance, result.run_id)
    if not result.success:
        if message := lock_timeout_message(result):
            raise RunFailed(message)
        reason, configuration = _failure_reason(result)
        message = f"the daily job failed for {day}: {reason}"
        if configuration:
            raise ConfigurationError(message)
        raise RunFailed(message)


def cmd_demo(args: argparse.Namespace) -> int:
    from rank_pipeline.settings import BASE_URL_ENV, ENGINE_ENV, unset_for_demo

    ignored = unset_for_demo()  # from the environment, which the Dagster definitions read
    if BASE_URL_ENV in ignored:
        print("note: the demo always uses the embedded sandbox; RANK_TRACKER_BASE_URL is ignored here",
              file=sys.stderr)
    if ENGINE_ENV in ignored:  # the demo prints marts from the published DuckDB file
        print("note: the demo builds the models on DuckDB; RANK_PIPELINE_ENGINE is ignored here", file=sys.stderr)
    settings = _settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    from rank_pipeline.extract.source import SANDBOX, check_data_folder

    check_data_folder(settings.data_dir, SANDBOX)
    if args.in_memory:
        import dagster as dg

        instance = dg.DagsterInstance.ephemeral()
    else:  # the runs are recorded in DAGSTER_HOME, so `make dev` shows them
        instance = _dagster_instance(settings.data_dir)
    with _SESSION.capture():
        from rank_pipeline.defs.definitions import defs

    end = _today()
    days = [end - timedelta(days=i) for i in range(args.days - 1, -1, -1)]
    print(f"rank-pipeline demo: {len(days)} simulated days ({days[0]} .. {days[-1]}) "
          f"from the embedded sandbox into {settings.data_dir}")
    totals = _Totals()
    progress = _Progress("daily job", "day", total=len(days))
    try:
        for i, day in enumerate(days):
            _run_partition(defs, instance, day, totals)
            progress.update(i + 1, len(days), day=day.isoformat())
    finally:
        progress.close()
    import duckdb

    with duckdb.connect(str(settings.paths.published_db), read_only=True) as con:
        print(f"\nwarehouse: {settings.paths.published_db}")
        print(f"snapshots: {settings.paths.snapshot_store_uri}")
        _print_query(con, "ranking trends (marts.fct_keyword_rankings_daily, per day)", RANKING_TRENDS_QUERY)
        _print_query(con, "quota per billing cycle (marts.fct_quota_cycle_daily, latest day)", QUOTA_BURN_QUERY)
    print(f"\nopen it: duckdb -readonly {settings.paths.published_db}   or the UI: make dev")
    print(totals.line("Completed"))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    settings = _settings()
    if settings.shard is not None:
        raise UsageError(f"RANK_PIPELINE_SHARD={settings.shard} is for extraction workers: run `rank-pipeline "
                         "extract` on each worker, then `rank-pipeline rebuild --from D --to D` once all shards "
                         "committed (or unset RANK_PIPELINE_SHARD)")
    day = _check_partition(args.date or _today())
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    instance = _dagster_instance(settings.data_dir)
    with _SESSION.capture():
        from rank_pipeline.defs.definitions import defs
    totals = _Totals()
    print(f"rank-pipeline run: {day} from {_describe_source(settings)} into {settings.data_dir}", flush=True)
    try:
        _run_partition(defs, instance, day, totals)
    except Exception:
        print(totals.line("Failed"), file=sys.stderr)
        raise
    print(totals.line("Completed"))
    return 0


def _describe_source(settings) -> str:
    from rank_pipeline.extract.source import Source

    return Source.from_settings(settings).describe()


def cmd_extract(args: argparse.Namespace) -> int:
    from rank_pipeline.extract.day import run_extraction
    from rank_pipeline.extract.source import Source

    settings = _settings()
    day = _check_partition(args.date or _today())
    source = Source.from_settings(settings)
    opened = source.open(day, settings.data_dir, snapshots_uri=settings.paths.snapshot_store_uri)
    progress = _Progress(f"extract {day}", "list")

    def on_progress(p) -> None:
        progress.update(p.lists_done, p.lists_total, records=p.records, requests=p.requests, http429=p.rate_limited)

    from rank_pipeline.warehouse.locks import remove_leftovers, writer_lock

    def note(message: str) -> None:
        print(message, file=sys.stderr)

    try:
        with writer_lock(settings.data_dir, holder="rank-pipeline extract", log=note), _SESSION.capture():
            remove_leftovers(settings.data_dir, log=note)
            report = run_extraction(opened.base_url, opened.accounts, day, settings.paths.snapshot_store_uri,
                                    config=source.client_config, on_progress=on_progress,
                                    shard=settings.shard)
    finally:
        progress.close()
    for resource, manifest in report.manifests.items():
        print(f"{resource:12s} rows={manifest.row_count:>8d} complete={manifest.complete}")
    requests = sum(a.requests for a in report.accounts.values())
    limited = sum(a.rate_limited for a in report.accounts.values())
    rows = sum(m.row_count for m in report.manifests.values())
    if not report.complete:
        incomplete = ", ".join(r for r, m in report.manifests.items() if not m.complete)
        raise RunFailed(f"the snapshot of {day} is incomplete ({incomplete}): records shifted between pages "
                        "faster than they could be re-read; run `rank-pipeline extract` again")
    print(f"Completed: 1 day(s), {rows} snapshot rows, {requests} requests, {limited} 429s")
    return 0


def cmd_sandbox(args: argparse.Namespace) -> int:
    from rank_pipeline.sandbox import serve

    serve(host=args.host, port=args.port, window_s=args.window_s)
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    from rank_pipeline.api.endpoints import render_markdown
    from rank_pipeline.models.docs import render_data_dictionary
    from rank_pipeline.models.lineage import project_lineage
    from rank_pipeline.models.site import write_site

    project = _project(args)
    out = Path(args.out)
    if out.suffix.lower() in (".md", ".html") or out.is_file():
        raise UsageError(f"--out {out} is the site's folder, not a file: pass a folder (default docs/site), "
                         "and --dictionary PATH for the Markdown data dictionary")
    if args.port is not None and not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a port: pass 0..65535 (0: any free port)")
    try:
        cache = _settings().paths.cache_dir
    except Exception:  # noqa: BLE001 - the cache is an optimisation; the docs need no data folder
        cache = None
    report = write_site(project, out, cache)
    print(f"wrote {report.pages} page(s) to {out}: open {report.index}")
    for model, why in sorted(report.lineage_errors.items()):
        print(f"note: no column lineage for {model}: {why}", file=sys.stderr)
    if args.dictionary:
        dictionary = Path(args.dictionary)
        dictionary.parent.mkdir(parents=True, exist_ok=True)
        dictionary.write_text(render_data_dictionary(project, render_markdown(), project_lineage(project, cache)))
        print(f"wrote {dictionary}")
    if args.serve:
        _serve_site(out, args.port if args.port is not None else DOCS_PORT)
    return 0


DOCS_PORT = 8080
"""Default port of ``rank-pipeline docs --serve`` (on 127.0.0.1)."""


def _serve_site(folder: Path, port: int) -> None:
    """Serve ``folder`` on 127.0.0.1:``port`` with the standard library's HTTP server until interrupted.

    SIGTERM stops it even when it was started with SIGTERM ignored (a child of a process that ignores it
    inherits that), as a service manager or a test expects.
    """
    import functools
    import signal
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - the standard library's signature
            pass

    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Quiet, directory=str(folder)))
    except OSError as exc:
        raise UsageError(f"cannot serve on 127.0.0.1:{port} ({exc.strerror}): pass another --port, or 0 "
                         "for any free port") from None
    with server:
        print(f"serving {folder} on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass


def _project(args: argparse.Namespace):
    """The models folder of ``--models-dir``, else RANK_PIPELINE_MODELS_DIR, else the shipped one, loaded."""
    from rank_pipeline.models import load_project
    from rank_pipeline.settings import models_dir

    folder = Path(args.models_dir) if getattr(args, "models_dir", None) else models_dir()
    if not folder.is_dir():
        raise UsageError(f"--models-dir {folder} is not a folder: pass a copy of dbt_like_sql/ (with staging/, "
                         "marts/, seeds/)")
    return load_project(folder)


def cmd_test(args: argparse.Namespace) -> int:
    """``rank-pipeline test``: the models' unit tests (in memory, no warehouse) and/or data tests (read-only
    on the published warehouse), ``--select`` limiting both. Returns 0 when all pass, 1 when one fails (its
    differing rows or failing row count printed); raises UsageError (exit 2) for ``--data`` without a
    published warehouse or an unknown model."""
    from rank_pipeline.models.unit_tests import run_unit_tests

    project = _project(args)
    select = list(dict.fromkeys(args.select or []))
    unknown = [s for s in select if s not in project.models and s not in project.seeds]
    if unknown:
        raise UsageError(f"--select {', '.join(unknown)}: no such model or seed in {project.root}; pass one of "
                         f"{', '.join(sorted(project.models))}")
    unit_passed = unit_failed = data_passed = data_failed = 0
    if not args.data:
        results = run_unit_tests(project, [s for s in select if s in project.models] if select else [])
        for result in results:
            if result.passed:
                unit_passed += 1
            else:
                unit_failed += 1
            if not result.passed or args.verbose:
                print(result.report())
        if select and not results:
            print(f"note: {', '.join(select)} has no unit tests (unit_tests: in its .yml)", file=sys.stderr)
    if not args.unit:
        data_passed, data_failed = _data_tests(project, select, args.verbose)
    parts = []
    if not args.data:
        parts.append(f"unit tests {unit_passed} passed / {unit_failed} failed")
    if not args.unit:
        parts.append(f"data tests {data_passed} passed / {data_failed} failed")
    failed = unit_failed + data_failed
    print(f"{'Failed' if failed else 'Completed'}: " + ", ".join(parts))
    return 1 if failed else 0


def _data_tests(project, select: list[str], verbose: bool) -> tuple[int, int]:
    """Run the data tests of the selected models and seeds on the published warehouse (read-only)."""
    import duckdb

    from rank_pipeline.models import run_tests
    from rank_pipeline.warehouse.sql import table_columns

    path = _settings().paths.published_db
    if not path.exists():
        raise UsageError(f"no warehouse at {path} for the data tests: run `rank-pipeline demo` (or `run`) "
                         "first, or pass --unit for the unit tests alone")
    relations = [*project.seeds.values(), *project.topological_order()]
    passed = failed = 0
    with duckdb.connect(str(path), read_only=True) as con:
        for relation in relations:
            if select and relation.name not in select:
                continue
            if not relation.tests:
                continue
            if not table_columns(con, relation.schema, relation.name):
                print(f"SKIP data tests of {relation.qualified_name}: not in the published warehouse "
                      "(rank-pipeline diff builds it from the snapshots)")
                continue
            for result in run_tests(con, relation):
                if result.passed:
                    passed += 1
                    if verbose:
                        print(f"PASS data test {relation.qualified_name}.{result.name}")
                    continue
                failed += 1
                print(f"FAIL data test {relation.qualified_name}.{result.name}: {result.failures} failing row(s)")
                for row in result.sample_rows:
                    print("    " + json.dumps(row, default=str))
    return passed, failed


def cmd_diff(args: argparse.Namespace) -> int:
    """``rank-pipeline diff``: build ``--models-dir`` (default the configured models) from the snapshots into a
    scratch file, no API call, and compare every seed and model with the published warehouse (rows added,
    removed, changed; changed values per column; 5 examples). Returns 0 when equal, 1 when different or
    when the folder does not build."""
    from rank_pipeline.models.diff import diff_models
    from rank_pipeline.models.errors import BuildError

    project = _project(args)
    settings = _settings()
    paths = settings.paths
    if not paths.published_db.exists():
        raise UsageError(f"no published warehouse at {paths.published_db} to compare with: run `rank-pipeline "
                         "demo` (or `run`) first")
    print(f"rank-pipeline diff: {project.root} built from the snapshots in {paths.snapshot_store_uri}, "
          f"compared with {paths.published_db}", flush=True)
    try:
        with _SESSION.capture():
            result = diff_models(project, paths.snapshot_store_uri, paths.published_db, scratch_dir=settings.data_dir)
    except BuildError as exc:
        raise RunFailed(f"the models folder does not build: {_first_line(str(exc))}") from None
    print(result.report())
    return 0 if result.equal else 1


def _one_statement(sql: str) -> str:
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise UsageError(f"the SQL does not parse: {_first_line(str(exc))}") from None
    if not statements:
        raise UsageError('no SQL statement given: pass one, e.g. rank-pipeline query "select 1"')
    if len(statements) > 1:
        raise UsageError(f"{len(statements)} statements given: query runs exactly one; run them one at a time")
    return sql


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else text


def cmd_rebuild(args: argparse.Namespace) -> int:
    from rank_pipeline.models.engines import EngineSettings
    from rank_pipeline.settings import models_dir
    from rank_pipeline.steps.rebuild import RebuildError, rebuild, rebuild_on_spark
    from rank_pipeline.warehouse.locks import remove_leftovers, writer_lock

    def note(message: str) -> None:
        print(message, file=sys.stderr)

    settings = _settings()
    try:
        engine = EngineSettings.from_env(data_dir=settings.data_dir)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        # one writer per data folder: a run of the daily job waits for the rebuild, and the other way round
        with writer_lock(settings.data_dir, holder="rank-pipeline rebuild", log=note):
            remove_leftovers(settings.data_dir, log=note)
            if engine.engine == "spark":
                report = rebuild_on_spark(settings.paths, models_dir(), engine, args.first, args.last,
                                          full_refresh=args.full_refresh)
            else:
                report = rebuild(settings.paths, models_dir(), args.first, args.last,
                                 full_refresh=args.full_refresh)
    except RebuildError as exc:
        if getattr(exc, "report", None):
            raise RunFailed(str(exc)) from None
        raise UsageError(str(exc)) from None
    print(report.summary())
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    import duckdb

    path = _settings().paths.published_db
    sql = _one_statement(args.sql)
    if not path.exists():
        raise UsageError(f"no warehouse at {path}: run `rank-pipeline demo` (or `rank-pipeline run`) first")
    with duckdb.connect(str(path), read_only=True) as con:
        try:
            columns, rows, more = _frame(con, sql, args.limit)
        except duckdb.Error as exc:
            raise UsageError(f"the query failed: {_first_line(str(exc))}") from None
    out = sys.stdout
    if args.format == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    elif args.format == "json":
        json.dump([dict(zip(columns, row, strict=True)) for row in rows], out, default=str, indent=1)
        out.write("\n")
    else:
        _print_table(columns, rows, out)
    if more:
        print(f"(first {args.limit} rows shown; pass --limit N for more)", file=sys.stderr)
    return 0


# -- keywords as code (rank_pipeline.keywords) --------------------------------------------------------

KEYWORDS_EXIT_PENDING = 2
"""``keywords plan``: changes are pending (``apply`` would create keywords)."""
KEYWORDS_EXIT_REFUSED = 3
"""``keywords plan|apply``: the file, the settings or the plan has an error (schema, catalogue, domain,
quota 402 forecast, missing --yes); apply sent nothing."""


class _KeywordsRefused(Exception):
    """``keywords plan|apply`` refused (exit :data:`KEYWORDS_EXIT_REFUSED`); one message line each."""

    def __init__(self, lines: list[str]):
        super().__init__(lines[0])
        self.lines = lines


def _keywords_clients(settings):
    """``(source description, {account: RankTrackerClient})`` for the configured source (the embedded
    sandbox when RANK_TRACKER_BASE_URL is unset), paced like the extractor (one IP pacer shared)."""
    from rank_pipeline.api import RankTrackerClient, SlidingWindowLimiter
    from rank_pipeline.extract.source import Source

    source = Source.from_settings(settings)
    opened = source.open(_today())
    config = source.client_config
    ip = SlidingWindowLimiter.for_ceiling(config.per_ip_limit, config.window_s, config.safety_margin)
    clients = {a.name: RankTrackerClient(opened.base_url, a.api_key, config=config, ip_limiter=ip, label=a.name)
               for a in opened.accounts}
    return source.describe(), clients


def _keywords_load(path: str):
    from rank_pipeline.keywords import KeywordsFileError, load_keywords_file

    try:
        return load_keywords_file(path)
    except KeywordsFileError as exc:
        raise _KeywordsRefused(exc.problems) from None


def _keywords_run(func) -> int:
    """Run a keywords command: refusals and bad settings exit 3 with their lines on stderr."""
    from rank_pipeline.settings import ConfigurationError

    try:
        return func()
    except _KeywordsRefused as exc:
        for line in exc.lines:
            print(f"error: {line}", file=sys.stderr)
        _SESSION.write("\n".join(f"error: {line}" for line in exc.lines))
        return KEYWORDS_EXIT_REFUSED
    except (ConfigurationError, UsageError) as exc:
        print(f"error: {_first_line(str(exc))}", file=sys.stderr)
        return KEYWORDS_EXIT_REFUSED


def cmd_keywords_plan(args: argparse.Namespace) -> int:
    """``rank-pipeline keywords plan FILE``: the plan against the API (or the latest snapshot with
    ``--offline``), printed (spec "Keywords": create, catalogues, quota). Returns 0 with no change pending,
    2 with changes pending, 3 for an error in the file, settings or plan (a 402 forecast included)."""
    def run() -> int:
        import asyncio

        from rank_pipeline.keywords import plan_offline, plan_online

        settings = _settings()
        loaded = _keywords_load(args.file)
        if args.offline:
            names = [a.name for a in settings.accounts] if settings.base_url else None
            try:
                plan = plan_offline(loaded, settings.paths.snapshot_store_uri, names)
            except FileNotFoundError as exc:
                raise _KeywordsRefused([str(exc)]) from None
        else:
            described, clients = _keywords_clients(settings)

            async def go():
                try:
                    return await plan_online(loaded, clients, described)
                finally:
                    for client in clients.values():
                        await client.aclose()

            plan = asyncio.run(go())
        print(plan.render())
        _SESSION.write(plan.render())
        if plan.refusals:
            raise _KeywordsRefused([f"the plan cannot be applied: {plan.refusals[0]}"]
                                   + ([f"({len(plan.refusals) - 1} more problem(s) listed above)"]
                                      if len(plan.refusals) > 1 else []))
        return KEYWORDS_EXIT_PENDING if plan.pending else 0

    return _keywords_run(run)


def cmd_keywords_apply(args: argparse.Namespace) -> int:
    """``rank-pipeline keywords apply FILE``: re-plan, then create what is missing in all-or-nothing calls,
    never retrying a create blind (spec "Keywords"). Returns 0 when applied or nothing to do, 3 when refused
    before sending (plan errors, quota, no ``--yes`` on a non-terminal stdin), 1 when it failed part-way."""
    def run() -> int:
        import asyncio

        from rank_pipeline.keywords import ApplyFailed, apply_plan, plan_online

        if not args.yes and not _is_tty(sys.stdin):
            raise _KeywordsRefused(["stdin is not a terminal, so apply cannot ask before creating keywords: "
                                    "review `rank-pipeline keywords plan FILE`, then pass --yes"])
        settings = _settings()
        loaded = _keywords_load(args.file)
        described, clients = _keywords_clients(settings)

        async def go():
            try:
                plan = await plan_online(loaded, clients, described)
                print(plan.render(), flush=True)
                _SESSION.write(plan.render())
                if plan.refusals:
                    raise _KeywordsRefused([f"nothing was sent: {line}" for line in plan.refusals])
                if not plan.pending:
                    return plan, None
                if not args.yes:
                    answer = input(f"Create {plan.to_create} keyword(s)? Only 'yes' creates them: ")
                    if answer.strip().lower() != "yes":
                        raise _KeywordsRefused(["not confirmed: nothing was sent"])
                try:
                    result = await apply_plan(plan, clients, echo=lambda line: print(line, flush=True))
                except ApplyFailed as exc:
                    for line in exc.lines[1:]:
                        print(f"error: {line}", file=sys.stderr)
                    summary = exc.result.summary(plan)
                    print(summary)
                    _SESSION.write(f"{summary}\nerror: {exc}")
                    raise
                return plan, result
            finally:
                for client in clients.values():
                    await client.aclose()

        plan, result = asyncio.run(go())
        summary = (result.summary(plan) if result is not None else
                   f"Applied: nothing to create; {plan.existing} already tracked; {plan.untracked} tracked but "
                   "not in the file (never removed).")
        _SESSION.write(summary)
        where = f" (run log: {_SESSION.log_path})" if _SESSION.log_path is not None else ""
        print(summary + where)
        return 0

    return _keywords_run(run)


def _keywords_parser(sub) -> None:
    """``keywords plan FILE [--offline]`` and ``keywords apply FILE [--yes]``; a usage error exits 3, as
    2 means "changes pending" for plan."""
    def usage_error_exits_3(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        def error(message: str):
            parser.print_usage(sys.stderr)
            parser.exit(KEYWORDS_EXIT_REFUSED, f"{parser.prog}: error: {message}\n")
        parser.error = error
        return parser

    epilog = ("Exit status of plan: 0 no changes, 2 changes pending, 3 an error in the file, the settings or "
              "the plan (nothing sent), 1 the API failed. apply: 0 applied (or nothing to do), 3 refused before "
              "sending anything, 1 failed while applying (what was created is summarised).")
    p = usage_error_exits_3(sub.add_parser(
        "keywords", help="plan and apply a keywords file (tracked keywords as code)",
        description="Tracked keywords as code: a YAML file of keywords per domain, planned against the "
                    "account's keywords, catalogues and quota, and applied all-or-nothing per create call.",
        epilog=epilog))
    ksub = p.add_subparsers(dest="keywords_command", required=True, metavar="ACTION",
                           help="plan: what apply would do (exit 0 none, 2 changes); apply: create what is missing")
    kp = usage_error_exits_3(ksub.add_parser(
        "plan", help="show what apply would create, what exists, what is tracked but not in the file",
        description="Read the account's keywords (or the latest snapshot with --offline) and print what would "
                    "be created, what already exists and what is tracked but not in the file, with catalogue "
                    "problems (file lines) and the quota forecast.", epilog=epilog))
    kp.add_argument("file", help="the keywords YAML file (see examples/keywords.yml)")
    kp.add_argument("--offline", action="store_true",
                    help="plan against the latest snapshot in the data folder: no API request, catalogues unchecked")
    kp.set_defaults(func=cmd_keywords_plan)
    ka = usage_error_exits_3(ksub.add_parser(
        "apply", help="create the missing keywords (re-plans first; refuses when the plan has errors)",
        description="Re-plan, then create only the missing combinations, grouped into create calls that are "
                    "each all-or-nothing. Refuses before sending anything when the plan has errors or exceeds "
                    "the quota. A lost response is never retried blind: the domain is read back and re-planned.",
        epilog=epilog))
    ka.add_argument("file", help="the keywords YAML file")
    ka.add_argument("--yes", action="store_true", help="do not ask (required when stdin is not a terminal)")
    ka.set_defaults(func=cmd_keywords_apply)


# -- the parser ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from rank_pipeline.api.config import SPEC_WINDOW_S

    parser = argparse.ArgumentParser(
        prog="rank-pipeline",
        description="Bring a rank-tracking API into a DuckDB warehouse every day (snapshots, models, Dagster). "
                    "Settings come from the environment: RANK_TRACKER_BASE_URL (unset: the embedded sandbox), "
                    "RANK_TRACKER_API_KEY, RANK_TRACKER_ACCOUNTS, RANK_PIPELINE_DATA_DIR (default ./data); "
                    "see the README.",
        epilog="Exit status: 0 success, 1 failed run, 2 bad usage or configuration, 3 the data folder cannot be "
               "written (read-only, not writable, full). Failures print one line; details go to a log file "
               "under <data folder>/logs/ (to stderr when it cannot be written).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    date_help = "the partition (UTC day) as YYYY-MM-DD, from 2026-01-01 to today; default today"

    p = sub.add_parser("demo", help="run the daily job for N simulated days on the embedded sandbox",
                       description="Run the daily Dagster job for N consecutive simulated days ending today "
                                   "against the embedded sandbox (RANK_TRACKER_BASE_URL is ignored), then print "
                                   "two example answers from the warehouse.")
    p.add_argument("--days", type=_positive_int, default=7, help="how many days to play (default 7)")
    p.add_argument("--verbose", action="store_true",
                   help="also print the Dagster log on stderr (it is always in the log file)")
    p.add_argument("--in-memory", action="store_true",
                   help="do not record the runs in DAGSTER_HOME (default data/dagster_home) for the UI")
    p.add_argument("--persist", action="store_true", help=argparse.SUPPRESS)  # the default now
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("run", help="run the daily job for one partition against the configured source",
                       description="Run the daily Dagster job (extract, load, models, checks, publish) for one "
                                   "partition. Against the vendor API only today's partition can be extracted "
                                   "(the API tells only the present).")
    p.add_argument("--date", type=_parse_date, help=date_help)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("extract", help="extract one day into Parquet snapshots (no Dagster)",
                       description="Extract one day from the configured source into Parquet snapshots under "
                                   "<data folder>/snapshots, without Dagster, the warehouse or the models.")
    p.add_argument("--date", type=_parse_date, help=date_help)
    p.set_defaults(func=cmd_extract)

    p = sub.add_parser("sandbox", help="serve the sandbox API on loopback",
                       description="Serve the sandbox (a spec-faithful stand-in for the vendor API) and print "
                                   "its base URL and demo keys; stop with Ctrl-C.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765)")
    p.add_argument("--window-s", type=float, default=SPEC_WINDOW_S,
                   help=f"rate-limit window in seconds (spec: {SPEC_WINDOW_S:g})")
    p.set_defaults(func=cmd_sandbox)

    p = sub.add_parser("rebuild", help="rebuild raw tables and models from the snapshots (no API call), then publish",
                       description="Rebuild the raw tables and every model from the Parquet snapshots, without "
                                   "calling the API, then publish the warehouse. Use it after restoring "
                                   "snapshots, changing a model, or to repair a warehouse.")
    p.add_argument("--from", dest="first", type=_parse_date, help="first day to rebuild (default: first snapshot)")
    p.add_argument("--to", dest="last", type=_parse_date, help="last day to rebuild (default: last snapshot)")
    p.add_argument("--full-refresh", action="store_true", help="drop and rebuild every raw table and model")
    p.set_defaults(func=cmd_rebuild)

    p = sub.add_parser("docs", help="write the models' documentation site (and the Markdown dictionary)",
                       description="Write the documentation site of the models (the model graph, every raw table, "
                                   "seed and model with its columns, types, tests, SQL and column-level lineage, "
                                   "and a search) from the models folder (--models-dir, else "
                                   "RANK_PIPELINE_MODELS_DIR, else the shipped one) and the API resource "
                                   "declarations. Plain HTML: open index.html, or --serve it.")
    p.add_argument("--out", default="docs/site", help="the site's folder (default docs/site under the current folder)")
    p.add_argument("--dictionary", metavar="PATH",
                   help="also write the Markdown data dictionary there (the repository's is docs/data_dictionary.md)")
    p.add_argument("--models-dir", help="the models folder (default: RANK_PIPELINE_MODELS_DIR, else the shipped "
                                        "dbt_like_sql)")
    p.add_argument("--serve", action="store_true", help=f"then serve the site on http://127.0.0.1:{DOCS_PORT}/ "
                                                        "until interrupted")
    p.add_argument("--port", type=int, help=f"port for --serve (default {DOCS_PORT}; 0: any free port)")
    p.set_defaults(func=cmd_docs)

    models_dir_help = ("the models folder (default: RANK_PIPELINE_MODELS_DIR, else the shipped dbt_like_sql); "
                       "a copy of it with your changes")
    p = sub.add_parser("test", help="run the models' unit tests and data tests",
                       description="Run the SQL unit tests of the models (the unit_tests of their .yml: given "
                                   "rows in, expected rows out, on DuckDB in memory, nothing built) and the data "
                                   "tests (the tests of their .yml) on the published warehouse. A failing unit "
                                   "test prints the rows that differ; a failing data test a sample of its "
                                   "failing rows. Exit 1 when a test fails.")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--unit", action="store_true", help="run only the unit tests (no warehouse needed)")
    which.add_argument("--data", action="store_true", help="run only the data tests on the published warehouse")
    p.add_argument("--select", nargs="+", metavar="MODEL", help="only these models (or seeds)")
    p.add_argument("--models-dir", help=models_dir_help)
    p.add_argument("--verbose", action="store_true", help="also print the tests that pass")
    p.set_defaults(func=cmd_test)

    p = sub.add_parser("diff", help="compare a models folder's build with the published warehouse",
                       description="Build the models folder into a scratch warehouse from the current Parquet "
                                   "snapshots (no API call; nothing published) and compare every model with the "
                                   "published warehouse: rows added, removed and changed per table, changed "
                                   "values per column, 5 examples each. Exit 0 when equal, 1 when different.")
    p.add_argument("--models-dir", help=models_dir_help)
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser("query", help="run one SQL statement on the published warehouse",
                       description="Run exactly one SQL statement on the published warehouse, read-only.")
    p.add_argument("sql", help='one SQL statement, e.g. "select * from marts.fct_quota_cycle_daily"')
    p.add_argument("--limit", type=_positive_int, default=20, help="print at most N rows (default 20)")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="output format (default table)")
    p.set_defaults(func=cmd_query)

    _keywords_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rank_pipeline.api import RankTrackerError
    from rank_pipeline.extract.day import ExtractionError
    from rank_pipeline.models import ProjectError
    from rank_pipeline.settings import ConfigurationError
    from rank_pipeline.warehouse.locks import LockTimeout

    _SESSION.command = args.command
    _SESSION.verbose = bool(getattr(args, "verbose", False))
    status, message = 0, None
    try:
        status = args.func(args)
    except (ConfigurationError, UsageError) as exc:
        status, message = 2, str(exc)
    except ProjectError as exc:  # a broken models folder: configuration; the first problem, then how many more
        problems = [line for line in str(exc).splitlines() if line.strip()]
        more = f" (and {len(problems) - 1} more line(s) of detail)" if len(problems) > 1 else ""
        status, message = 2, (problems[0] if problems else str(exc)) + more
    except (RankTrackerError, ExtractionError, LockTimeout, RunFailed) as exc:
        status, message = 1, str(exc)
    except KeyboardInterrupt:
        status, message = 130, "interrupted"
    except Exception as exc:  # noqa: BLE001 - the last resort: one line here, the traceback in the log
        if fault := _data_folder_fault(exc):
            status, message = DATA_FOLDER_EXIT_STATUS, fault
        else:
            _SESSION.write(traceback.format_exc())
            status, message = 1, f"unexpected {type(exc).__name__}: {_first_line(str(exc))}"
    if status == 1 and message is not None and (fault := _data_folder_fault(None, message)):
        status, message = DATA_FOLDER_EXIT_STATUS, fault  # a run step failed because the folder did
    if message is not None:
        where = ""
        if status == 1:  # a failed run: its detail (the Dagster log, a traceback) is in the log file
            _SESSION.write(f"error: {message}", quiet=True)
            if _SESSION.log_path is not None:
                where = f" (details: {_SESSION.log_path})"
        elif status == DATA_FOLDER_EXIT_STATUS:
            _SESSION.write(f"error: {message}", quiet=True)
        print(f"error: {_first_line(message)}{where}", file=sys.stderr)
    return status


def _data_folder_fault(exc: BaseException | None, failure: str | None = None) -> str | None:
    """The one line for a fault of the data folder behind ``exc`` or a run's ``failure`` text, else None.

    A run step's error reaches here as text: the folder is then probed with a small write, and a
    failure naming ENOSPC/EDQUOT counts as a full folder even when the probe still fits.
    """
    from rank_pipeline.ops.data_folder import DataFolderFault, data_folder_fault, probe
    from rank_pipeline.settings import ConfigurationError, Settings

    try:
        settings = Settings.from_env()
    except ConfigurationError:
        return None
    data_dir = settings.data_dir
    if exc is not None:
        from rank_pipeline.defs.instance import dagster_home

        fault = data_folder_fault(exc, data_dir, others=(dagster_home(data_dir),))
    else:
        fault = probe(data_dir)
        if fault is None and failure and any(os.strerror(code) in failure for code in (errno.ENOSPC, errno.EDQUOT)):
            fault = DataFolderFault("full", data_dir)
    return fault.line() if fault else None

if __name__ == "__main__":
    sys.exit(main())
