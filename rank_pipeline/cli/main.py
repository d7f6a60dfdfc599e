"""The ``rank-pipeline`` command line: :func:`main` runs one command and returns its exit status
(:data:`rank_pipeline.errors.EXIT_STATUSES`).

Every failure ends with one line on stderr and a status, the detail in a log under ``<data folder>/logs/``;
a data-folder fault names the folder and what to do. Commands: docs/reference/cli.md; statuses:
docs/reference/exit-codes.md; failure handling: docs/concepts/operations.md, "The command line's failures".
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
    """Run one command; returns its exit status (docs/reference/exit-codes.md).

    A :class:`~rank_pipeline.errors.RankPipelineError` gives its own ``exit_status`` and ``one_line()``;
    anything else is reported as unexpected, its traceback in the log.
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
