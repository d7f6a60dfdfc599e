"""The reference pages of the docs site, generated from the code so they cannot fall behind it.

``docs/hooks.py`` adds them to the MkDocs build (``mkdocs.yml``); nothing is written to ``docs/``:

- ``reference/settings.md``: every environment variable, from :data:`rank_pipeline.settings.variables.VARIABLES`
  (the settings package is the only reader of the environment);
- ``reference/cli.md``: every command's ``--help``, from :func:`rank_pipeline.cli.parser.build_parser`;
- ``reference/exit-codes.md``: the one exit-status table (:data:`rank_pipeline.errors.EXIT_STATUSES`) and
  which error classes end a command with each.
"""

from __future__ import annotations

import argparse
import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rank_pipeline.errors import RankPipelineError

__all__ = ["cli_page", "exit_codes_page", "pages", "settings_page", "settings_rows"]



def settings_rows() -> list[tuple[str, str]]:
    """``(variable, description)`` of every environment variable, from :data:`rank_pipeline.settings.variables.VARIABLES`."""
    from rank_pipeline.settings.variables import VARIABLES

    return list(VARIABLES)


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
             "In a project (`rank-pipeline init`, or a Dagster project with the component), the component's",
             "attributes in `defs.yaml` set the data folder, engine, models folder, accounts, base URL, keywords",
             "file, schedule, partition start and alerts, for `rank-pipeline` and `dg` alike; the variable of an",
             "attribute, when set, overrides it (a blank one counts as unset). A wrong attribute is refused at its",
             "line of `defs.yaml`. `rank-pipeline` also reads the project's `.env` for the variables the",
             "environment does not set, as `dg` does.", "",
             "| variable | what it sets |", "|---|---|"]
    lines += [f"| `{name}` | {_markdown(text)} |" for name, text in settings_rows()]
    return "\n".join(lines) + "\n"


CLI_PAGE_WIDTH = 76
"""The width the CLI reference page's help is wrapped to: a code block of the site's theme (Material) shows
about 80 characters beside its two sidebars, so no line is cut on the right (a test holds every line to it)."""


def _help(parser: argparse.ArgumentParser) -> str:
    """``parser``'s ``--help``, wrapped to :data:`CLI_PAGE_WIDTH` whatever the terminal."""
    formatter = parser.formatter_class
    parser.formatter_class = functools.partial(argparse.HelpFormatter, width=CLI_PAGE_WIDTH)
    try:
        return parser.format_help().rstrip()
    finally:
        parser.formatter_class = formatter


def cli_page() -> str:
    from rank_pipeline.cli.parser import build_parser

    parser = build_parser()
    lines = ["# Command line", "", "`rank-pipeline COMMAND --help` prints the same. Every command follows one table of",
             "[exit statuses](exit-codes.md).", "", "```text", _help(parser), "```"]
    for name, sub in _commands(parser):
        level = "#" * (1 + name.count(" ") + 1)
        lines += ["", f"{level} {name}", "", "```text", _help(sub), "```"]
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
    """The exit statuses page: :data:`rank_pipeline.errors.EXIT_STATUSES`, each with the error classes that end
    a command with it."""
    from rank_pipeline.errors import EXIT_STATUSES

    by_status: dict[int, list[str]] = {}
    for cls in _error_classes():
        by_status.setdefault(cls.exit_status, []).append(f"`{cls.__module__}.{cls.__qualname__}`")
    lines = ["# Exit statuses", "",
             "Every command follows this one table. Every failure ends with one line on stderr saying what was",
             "wrong and what to do; the detail (the Dagster log, a traceback) is in a log file under",
             "`<data folder>/logs/` whose path is printed. Every error the project raises on purpose derives from",
             "`rank_pipeline.errors.RankPipelineError`, which carries its exit status.", "",
             "| status | meaning | raised as |", "|---|---|---|"]
    for status, (_, meaning) in EXIT_STATUSES.items():
        raised = ", ".join(by_status.get(status, [])) or "(not an exception class: see the meaning)"
        lines.append(f"| {status} | {_markdown(meaning)} | {raised} |")
    lines += ["", "`keywords plan` exits 0 whether or not changes are pending, as `terraform plan` does; with",
              "`--detailed-exitcode` it exits 0 only when nothing is pending and 4 when keywords would be",
              "created, so a script can tell the two without parsing the plan:", "",
              "```sh",
              "rank-pipeline keywords plan keywords.yml --detailed-exitcode; status=$?",
              "if [ $status = 4 ]; then rank-pipeline keywords apply keywords.yml --yes",
              "elif [ $status != 0 ]; then exit $status; fi   # 2: an error in the file, 1: the API failed",
              "```"]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """Each generated page's path under ``docs/`` and its Markdown."""
    return {"reference/settings.md": settings_page(), "reference/cli.md": cli_page(),
            "reference/exit-codes.md": exit_codes_page()}
