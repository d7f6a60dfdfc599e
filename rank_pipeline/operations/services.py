"""``python -m rank_pipeline.operations.services CMD...``: start a Dagster service so SIGTERM and Ctrl-C stop it
(default signal dispositions, then ``exec``; exit status 2 when the command is missing). Why:
docs/concepts/operations.md, "Stopping Dagster's services".
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

__all__ = ["exec_service", "main", "resolve_command"]


def resolve_command(name: str) -> str | None:
    """The executable for ``name``: a path as given, else the script beside ``sys.executable``, else ``PATH``."""
    if os.sep in name:
        return name if os.access(name, os.X_OK) else None
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def exec_service(argv: list[str]) -> None:
    """Reset SIGINT and SIGTERM to their defaults and ``exec`` ``argv`` (never returns).
    Raises FileNotFoundError: ``argv[0]`` is not an executable (nothing started).
    """
    exe = resolve_command(argv[0])
    if exe is None:
        raise FileNotFoundError(argv[0])
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)  # handlers reset on exec; an ignored signal would stay ignored
    os.execv(exe, [exe, *argv[1:]])


def main(argv: list[str] | None = None) -> int:
    """Restore default SIGINT and SIGTERM handling, then replace this process with ``argv`` (a leading
    ``--`` dropped). Returns non-zero with one line when no command is given or it is not installed;
    otherwise it does not return."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python -m rank_pipeline.operations.services COMMAND [ARGS...], e.g. dagster dev -w workspace.yaml",
              file=sys.stderr)
        return 2
    try:
        exec_service(argv)
    except FileNotFoundError:
        print(f"error: {argv[0]!r} is not an installed command; run `make env` (or give its path)", file=sys.stderr)
        return 2
    return 0  # pragma: no cover - exec does not return


if __name__ == "__main__":
    sys.exit(main())
