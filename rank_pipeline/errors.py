"""The one root of every error rank-pipeline raises on purpose, :class:`RankPipelineError` (each class with its
exit status and a one-line hint), and the exit statuses, :data:`EXIT_STATUSES` (docs/reference/exit-codes.md).
"""

from __future__ import annotations

from typing import ClassVar

__all__ = ["EXIT_CHANGES_PENDING", "EXIT_DATA_FOLDER", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_STATUSES",
           "EXIT_USAGE", "RankPipelineError", "exception_classes", "exit_status_line", "first_line"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_DATA_FOLDER = 3
EXIT_CHANGES_PENDING = 4
EXIT_INTERRUPTED = 130

EXIT_STATUSES: dict[int, tuple[str, str]] = {
    EXIT_OK: ("success", "success: the run, the test or the query did what was asked; `keywords plan` also when "
                         "changes are pending, unless `--detailed-exitcode`"),
    EXIT_FAILED: ("failed", "a failed run (a step, a blocking check, the source, a damaged snapshot), a failed "
                            "model test (`test`), models that differ from the published warehouse (`diff`), an "
                            "API failure while planning or applying keywords (what was created is summarised)"),
    EXIT_USAGE: ("bad usage or input", "bad usage, configuration or input, found before anything is done: an "
                                      "unknown command or option, a setting, a date outside the partitions or "
                                      "in the past against the vendor API, the models folder, the vendor "
                                      "contract, a query that does not run, a keywords file or plan that "
                                      "cannot be applied (nothing sent)"),
    EXIT_DATA_FOLDER: ("data folder", "the data folder cannot be written (read-only, not writable, full); what "
                                      "earlier runs wrote is left as it was"),
    EXIT_CHANGES_PENDING: ("changes pending", "changes pending: `keywords plan --detailed-exitcode` found "
                                              "keywords to create (as Terraform's `-detailed-exitcode`; 2 stays "
                                              "bad input)"),
    EXIT_INTERRUPTED: ("interrupted", "interrupted (Ctrl-C, SIGINT)"),
}
"""Every exit status of the command line: ``status -> (short name, meaning)``. Each command follows this
one table; the reference page and the ``--help`` epilog are written from it."""


def exit_status_line() -> str:
    """The table in one sentence, for ``--help``: ``Exit status: 0 success, 1 failed, ...``."""
    return "Exit status: " + ", ".join(f"{status} {short}" for status, (short, _) in EXIT_STATUSES.items()) + "."


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, stripped (``text`` itself when it has none)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else text


class RankPipelineError(Exception):
    """Root of every error rank-pipeline raises on purpose. Class attributes: ``exit_status`` (an ``EXIT_*``
    value) and ``hint`` (what to do, appended by :meth:`one_line` unless the message says it; may be empty).
    """

    exit_status: ClassVar[int] = EXIT_FAILED
    hint: ClassVar[str] = ""

    def one_line(self) -> str:
        """The line the command line prints: the message's first line, then the hint when it is not in it."""
        line = first_line(str(self)) or type(self).__name__
        if self.hint and self.hint not in line:
            line = f"{line.rstrip('.')}; {self.hint}"
        return line


def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class of the package by qualified name (``module.Class``), importing every module but
    ``__main__``: the walk the exit-status page and the exception-root test share.
    """
    import importlib
    import inspect
    import pkgutil

    import rank_pipeline

    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(rank_pipeline.__path__, "rank_pipeline."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found
