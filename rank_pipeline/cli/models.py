"""The models' commands: ``docs`` (the documentation site), ``test`` (unit and data tests), ``diff`` (a models
folder's build against the published warehouse) and ``query`` (one read-only statement)."""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

from rank_pipeline.cli.errors import RunFailed, UsageError
from rank_pipeline.cli.output import SESSION, frame, load_settings, print_table
from rank_pipeline.errors import first_line


def cmd_docs(args: argparse.Namespace) -> int:
    from rank_pipeline.api.endpoints import raw_docs, render_markdown
    from rank_pipeline.transform.docs import render_data_dictionary
    from rank_pipeline.transform.lineage import project_lineage
    from rank_pipeline.transform.site import write_site

    project = _project(args)
    out = Path(args.out)
    if out.suffix.lower() in (".md", ".html") or out.is_file():
        raise UsageError(f"--out {out} is the site's folder, not a file: pass a folder (default docs/site), "
                         "and --dictionary PATH for the Markdown data dictionary")
    if args.port is not None and not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a port: pass 0..65535 (0: any free port)")
    try:
        cache = load_settings().paths.cache_dir
    except Exception:  # noqa: BLE001 - the cache is an optimisation; the docs need no data folder
        cache = None
    report = write_site(project, out, cache, raw_docs())
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
    from rank_pipeline.settings import models_dir
    from rank_pipeline.transform import load_project

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
    from rank_pipeline.transform.unit_tests import run_unit_tests

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

    from rank_pipeline.transform import DuckDBEngine, run_tests
    from rank_pipeline.transform.sql import table_columns

    path = load_settings().paths.published_db
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
            for result in run_tests(DuckDBEngine(con), relation):
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
    from rank_pipeline.transform.diff import diff_models
    from rank_pipeline.transform.errors import BuildError
    from rank_pipeline.warehouse.raw_load import reload_raw_from_snapshots

    project = _project(args)
    settings = load_settings()
    paths = settings.paths
    against = (paths.published_db if paths.published_db.exists()
               else f"nothing: no warehouse is published at {paths.published_db} yet, every relation is new")
    print(f"rank-pipeline diff: {project.root} built from the snapshots in {paths.snapshot_store_uri}, "
          f"compared with {against}", flush=True)
    try:
        with SESSION.capture():
            result = diff_models(project, lambda con: reload_raw_from_snapshots(con, paths.snapshot_store_uri),
                                 paths.published_db, scratch_dir=settings.data_dir)
    except BuildError as exc:
        raise RunFailed(f"the models folder does not build: {first_line(str(exc))}") from None
    shape = _shape_of_snapshots(project, paths)  # before the report, whose last line is the verdict
    print(result.report())
    return 0 if result.equal and shape else 1


def _shape_of_snapshots(project, paths) -> bool:
    """Print whether every committed snapshot day matches the vendor's contract of ``project``
    (:mod:`rank_pipeline.steps.shape`, nothing recorded); True when it does or there is no snapshot."""
    from rank_pipeline.steps.shape import check_shape
    from rank_pipeline.warehouse.raw_load import snapshot_dates

    days = sorted(snapshot_dates(paths.snapshot_store_uri))
    if not days:
        return True
    shape = check_shape(project, paths.snapshot_store_uri, days[0], days[-1])
    if shape.passed:
        print(f"vendor shape: the snapshots of {days[0]} .. {days[-1]} match the contract of {project.root}")
        return True
    for line in shape.lines():
        print(f"vendor shape: {line}")
    return False


def duckdb_error_line(exc: BaseException) -> str:
    """DuckDB's error as one line that keeps its hints: the message and the lines that follow it (``Did you
    mean "marts.fct_keyword_rankings_daily"?``, ``Candidate bindings: ...``), joined; the quoted SQL with its
    caret (``LINE 1: ...``) is left out, as the user has just typed it."""
    kept = []
    for line in str(exc).splitlines():
        if re.match(r"\s*LINE \d+:", line):
            break
        if line.strip():
            kept.append(line.strip())
    return " ".join(kept) or type(exc).__name__


def _one_statement(sql: str) -> str:
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise UsageError(f"the SQL does not parse: {duckdb_error_line(exc)}") from None
    if not statements:
        raise UsageError('no SQL statement given: pass one, e.g. rank-pipeline query "select 1"')
    if len(statements) > 1:
        raise UsageError(f"{len(statements)} statements given: query runs exactly one; run them one at a time")
    return sql


def cmd_query(args: argparse.Namespace) -> int:
    import duckdb

    path = load_settings().paths.published_db
    sql = _one_statement(args.sql)
    if not path.exists():
        raise UsageError(f"no warehouse at {path}: run `rank-pipeline demo` (or `rank-pipeline run`) first")
    with duckdb.connect(str(path), read_only=True) as con:
        try:
            columns, rows, more = frame(con, sql, args.limit)
        except duckdb.Error as exc:
            raise UsageError(f"the query failed: {duckdb_error_line(exc)}") from None
    out = sys.stdout
    if args.format == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    elif args.format == "json":
        json.dump([dict(zip(columns, row, strict=True)) for row in rows], out, default=str, indent=1)
        out.write("\n")
    else:
        print_table(columns, rows, out)
    if more:
        print(f"(first {args.limit} rows shown; pass --limit N for more)", file=sys.stderr)
    return 0
