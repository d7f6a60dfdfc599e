"""The ``rank-pipeline`` command line.

Commands:

``demo [--days N]``
    Runs the daily Dagster job once over N consecutive simulated days (ending today, UTC) against the
    embedded sandbox, as a single-run backfill of the N partitions, then prints where the warehouse is
    and two example answers.
``run [--date YYYY-MM-DD]``
    Runs the daily job for one partition (default today) against the configured source.
``extract [--date YYYY-MM-DD]``
    Extracts one day into Parquet snapshots without Dagster.
``sandbox [--host H] [--port P] [--window-s S]``
    Serves the sandbox API for trying by hand (prints its base URL and demo keys).
``rebuild [--from D] [--to D] [--full-refresh]``
    Rebuilds the raw tables and models from the Parquet snapshots (no API call), then publishes: one run of
    the Dagster job ``rebuild_from_snapshots`` (``rebuild_full_refresh``), as ``run`` runs the daily job.
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
``keywords plan FILE [--offline] [--detailed-exitcode]`` / ``keywords apply FILE [--yes]``
    Tracked keywords as code (:mod:`rank_pipeline.keywords`): plan exits 0 (with ``--detailed-exitcode``: 4
    when changes are pending), 2 for an error in the file, settings or plan; apply 0 applied, 2 refused
    before sending anything, 1 failed while applying.

Exit status: one table for every command, :data:`rank_pipeline.errors.EXIT_STATUSES` (0 success, 1 failed, 2
bad usage or input, 3 the data folder cannot be written, 4 changes pending, 130 interrupted). A data-folder
fault (``RANK_PIPELINE_DATA_DIR``, or a ``DAGSTER_HOME`` outside it: read-only file system, not writable
by this user, or full) names the folder and says what to do (remount it read-write, give the user write
permission, free space, or point ``RANK_PIPELINE_DATA_DIR`` elsewhere); what earlier runs wrote
(snapshots, the published warehouse) is left as it was (:mod:`rank_pipeline.operations.data_folder`). A usage
error (an unknown command names the closest) is one line, status 2.

Every failure ends with one line on stderr saying what was wrong and what to do; the detail (the Dagster
log, a traceback) is in a log file under ``<data folder>/logs/`` whose path is printed. When that log
file cannot be created or written, the detail goes to stderr instead (a data-folder fault needs none: its
one line is the whole story). ``run``, ``demo`` and ``rebuild`` send each run's alert digest to
``RANK_PIPELINE_ALERT_URLS`` (a failing destination is a warning) and end with a summary line (days, rows, checks
passed/failed, requests, 429s). Progress is a bar on a terminal and periodic log lines otherwise.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback

from rank_pipeline.cli.output import SESSION
from rank_pipeline.cli.parser import build_parser
from rank_pipeline.errors import (
    EXIT_DATA_FOLDER,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    RankPipelineError,
    first_line,
)
from rank_pipeline.settings import load_project_dotenv


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit status (module docstring, "Exit status").

    Errors map by class: every :class:`~rank_pipeline.errors.RankPipelineError` gives its own
    ``exit_status`` and ``one_line()``; anything else is reported as unexpected, with its traceback in the log.
    """
    args = build_parser().parse_args(argv)
    SESSION.command = args.command
    SESSION.verbose = bool(getattr(args, "verbose", False))
    status, message, line = 0, None, None
    try:
        # inside a project, its .env's variables the environment lacks, as dg reads them (DAGSTER_HOME: the runs
        # of demo and run are recorded where `dg dev` shows them)
        load_project_dotenv()
        status = args.func(args)
    except RankPipelineError as exc:
        status, message, line = exc.exit_status, str(exc), exc.one_line()
        if status == EXIT_FAILED and exc.__cause__ is not None:  # a wrapped failure: its traceback, to the log
            SESSION.write(traceback.format_exc(), quiet=True)
    except KeyboardInterrupt:
        status, message = EXIT_INTERRUPTED, "interrupted"
    except Exception as exc:  # noqa: BLE001 - the last resort: one line here, the traceback in the log
        if fault := _data_folder_fault(exc):
            status, message = EXIT_DATA_FOLDER, fault
        else:
            SESSION.write(traceback.format_exc())
            status, message = EXIT_FAILED, f"unexpected {type(exc).__name__}: {first_line(str(exc))}"
    if status == EXIT_FAILED and message is not None and (fault := _data_folder_fault(None, message)):
        status, message, line = EXIT_DATA_FOLDER, fault, None  # a run step failed because the folder did
    if message is not None:
        from rank_pipeline.settings import source_paths

        # a project's composed models are the pipeline's copy: the message names the file the user edits
        message, line = source_paths(message), source_paths(line) if line else line
        where = ""
        if status == EXIT_FAILED:  # a failed run: its detail (the Dagster log, a traceback) is in the log file
            SESSION.write(f"error: {message}", quiet=True)
            if SESSION.log_path is not None:
                where = f" (details: {SESSION.log_path})"
        elif status == EXIT_DATA_FOLDER:
            SESSION.write(f"error: {message}", quiet=True)
        print(f"error: {line or first_line(message)}{where}", file=sys.stderr)
    return status


def _data_folder_fault(exc: BaseException | None, failure: str | None = None) -> str | None:
    """The one line for a fault of the data folder behind ``exc`` or a run's ``failure`` text, else None.

    A run step's error reaches here as text: the folder is then probed with a small write, and a
    failure naming ENOSPC/EDQUOT counts as a full folder even when the probe still fits.
    """
    from rank_pipeline.operations.data_folder import DataFolderFault, data_folder_fault, probe
    from rank_pipeline.settings import ConfigurationError, project_settings_from_env

    try:
        settings = project_settings_from_env()
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
