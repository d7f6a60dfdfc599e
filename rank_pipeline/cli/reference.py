"""The reference pages of the docs site, generated from the code so they cannot fall behind it.

``docs/hooks.py`` adds them to the MkDocs build (``mkdocs.yml``); nothing is written to ``docs/``:

- ``reference/settings.md``: every environment variable, from the table in :mod:`rank_pipeline.settings`'s
  docstring (the settings package is the only reader of the environment);
- ``reference/cli.md``: every command's ``--help``, from :func:`rank_pipeline.cli.parser.build_parser`;
- ``reference/exit-codes.md``: the exit statuses of :mod:`rank_pipeline.errors` and which error classes
  end a command with each.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rank_pipeline.errors import RankPipelineError

__all__ = ["cli_page", "exit_codes_page", "pages", "settings_page", "settings_rows"]

_ROW = re.compile(r"^``([A-Z][A-Z0-9_]+)``\s+(.*)$")


def settings_rows() -> list[tuple[str, str]]:
    """``(variable, description)`` for each row of the environment table in the settings docstring."""
    import rank_pipeline.settings as settings

    rows: list[tuple[str, str]] = []
    inside = False
    for line in (settings.__doc__ or "").splitlines():
        if line.startswith("====="):
            if inside:
                break
            inside = True
            continue
        if not inside:
            continue
        if match := _ROW.match(line):
            rows.append((match.group(1), match.group(2).strip()))
        elif line.strip() and rows:
            name, text = rows[-1]
            rows[-1] = (name, f"{text} {line.strip()}")
    return rows


def _markdown(text: str) -> str:
    """Sphinx roles and double backticks as Markdown code spans; pipes escaped for a table cell."""
    text = re.sub(r":(?:mod|func|class|meth|data|attr):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`").replace("|", "\\|")


def settings_page() -> str:
    lines = ["# Settings", "",
             "Every setting is an environment variable, read by `rank_pipeline/settings/` alone; all are optional,",
             "and with none set the pipeline runs on the embedded sandbox. A malformed value ends a command with",
             "exit status 2 and one line naming the variable and what to set. API keys, alert URLs and the",
             "PostgreSQL URL are secrets: never logged or stored.", "",
             "| variable | what it sets |", "|---|---|"]
    lines += [f"| `{name}` | {_markdown(text)} |" for name, text in settings_rows()]
    return "\n".join(lines) + "\n"


def cli_page() -> str:
    from rank_pipeline.cli.parser import build_parser

    os.environ.setdefault("COLUMNS", "100")  # argparse wraps help to the terminal; a fixed width here
    parser = build_parser()
    lines = ["# Command line", "", "`rank-pipeline COMMAND --help` prints the same. Exit statuses:",
             "[Exit statuses](exit-codes.md).", "", "```text", parser.format_help().rstrip(), "```"]
    for name, sub in _commands(parser):
        level = "#" * (1 + name.count(" ") + 1)
        lines += ["", f"{level} {name}", "", "```text", sub.format_help().rstrip(), "```"]
    return "\n".join(lines) + "\n"


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    """``(name, parser)`` of every sub-command, nested ones (``keywords plan``) after their group."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):  # argparse's one way to list sub-commands
            for name, sub in action.choices.items():
                found.append((prefix + name, sub))
                found += _commands(sub, prefix + name + " ")
    return found


def _error_classes() -> list[type[RankPipelineError]]:
    """The public error classes of the package (:func:`rank_pipeline.errors.exception_classes`), sorted by name."""
    from rank_pipeline.errors import RankPipelineError, exception_classes

    return [cls for _, cls in sorted(exception_classes().items())
            if issubclass(cls, RankPipelineError) and not cls.__name__.startswith("_")]


def exit_codes_page() -> str:
    from rank_pipeline import errors

    meaning = {}
    for line in (errors.__doc__ or "").splitlines():
        if match := re.match(r"^- :data:`(EXIT_\w+)` (\d+): (.*)$", line):
            meaning[int(match.group(2))] = match.group(3).rstrip(";.")
    by_status: dict[int, list[str]] = {}
    for cls in _error_classes():
        by_status.setdefault(cls.exit_status, []).append(f"`{cls.__module__}.{cls.__qualname__}`")
    lines = ["# Exit statuses", "",
             "Every failure ends with one line on stderr saying what was wrong and what to do; the detail (the",
             "Dagster log, a traceback) is in a log file under `<data folder>/logs/` whose path is printed.",
             "Every error the project raises on purpose derives from `rank_pipeline.errors.RankPipelineError`,",
             "which carries its exit status.", "", "| status | meaning | raised as |", "|---|---|---|"]
    for status in sorted(meaning):
        raised = ", ".join(by_status.get(status, [])) or "(not an exception class: see the meaning)"
        lines.append(f"| {status} | {_markdown(meaning[status])} | {raised} |")
    lines += ["", "`keywords plan` and `keywords apply` have statuses of their own: plan 0 no changes, 2 changes",
              "pending, 3 an error in the file, settings or plan; apply 0 applied, 3 refused before sending",
              "anything, 1 failed while applying."]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """Each generated page's path under ``docs/`` and its Markdown."""
    return {"reference/settings.md": settings_page(), "reference/cli.md": cli_page(),
            "reference/exit-codes.md": exit_codes_page()}
