"""The argument parser of ``rank-pipeline``: every command, its options and help, and the function it runs."""

from __future__ import annotations

import argparse
import difflib

from rank_pipeline.cli.args import package_version, parse_date, positive_int
from rank_pipeline.cli.keywords import cmd_keywords_apply, cmd_keywords_plan
from rank_pipeline.cli.models import DOCS_PORT, cmd_diff, cmd_docs, cmd_query, cmd_test
from rank_pipeline.cli.pipeline import cmd_demo, cmd_extract, cmd_run, cmd_sandbox
from rank_pipeline.cli.profile import cmd_profile
from rank_pipeline.cli.project import cmd_files, cmd_init, cmd_own, cmd_upgrade
from rank_pipeline.cli.rebuild import cmd_rebuild

MODELS_DIR_HELP = ("the models folder (default: RANK_PIPELINE_MODELS_DIR, else the shipped dbt_like_sql); "
                   "a copy of it with your changes")
"""The --models-dir help of docs, test and diff."""

DATE_HELP = ("the partition (UTC day) as YYYY-MM-DD, from the partition start (partition_start, else the first "
             "snapshot day) to today; default today")
"""The --date help of run and extract."""


class CommandParser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors are one line on stderr and exit 2 (the exit-status table), and
    whose refusal of an unknown command or choice names the closest one (``rank-pipeline querry``: did you
    mean ``rank-pipeline query``?). The sub-commands' parsers are of this class too."""

    def error(self, message: str):  # argparse's own error(), which exits
        from rank_pipeline.errors import EXIT_USAGE

        hint = "" if "--help" in message else f" (`{self.prog} --help` shows how to call it)"
        self.exit(EXIT_USAGE, f"error: {self.prog}: {message}{hint}\n")

    def _check_value(self, action: argparse.Action, value) -> None:  # argparse's one check of a choice
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(choice) for choice in choices]
        close = difflib.get_close_matches(str(value), names, n=1, cutoff=0.6)
        if isinstance(action, argparse._SubParsersAction):  # argparse's sub-command action
            what = "command" if action.dest == "command" else "action"
            hint = (f"did you mean `{self.prog} {close[0]}`? (`{self.prog} --help` lists every {what})" if close
                    else f"`{self.prog} --help` lists every {what} ({', '.join(names)})")
            raise argparse.ArgumentError(None, f"unknown {what} {value!r}: {hint}")
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise argparse.ArgumentError(action, f"invalid choice {value!r}: {hint}choose from {', '.join(names)}")


def build_parser() -> argparse.ArgumentParser:
    """The ``rank-pipeline`` parser: every command in the order ``--help`` lists them, each with its
    options and, as ``func``, the function that runs it (the keywords commands under ``keywords``)."""
    from rank_pipeline.errors import exit_status_line

    parser = CommandParser(
        prog="rank-pipeline",
        description="Bring a rank-tracking API into a DuckDB warehouse every day (snapshots, models, Dagster). "
                    "Settings come from the environment: RANK_TRACKER_BASE_URL (unset: the embedded sandbox), "
                    "RANK_TRACKER_API_KEY, RANK_TRACKER_ACCOUNTS, RANK_PIPELINE_DATA_DIR (default ./data); "
                    "every setting: docs/reference/settings.md.",
        epilog=f"{exit_status_line()} Every command follows this one table: docs/reference/exit-codes.md. "
               "Failures print one line; details go to a log file under <data folder>/logs/ (to stderr when "
               "it cannot be written).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _daily_job_parsers(sub)
    _source_parsers(sub)
    _rebuild_parser(sub)
    _models_parsers(sub)
    _keywords_parser(sub)
    _project_parsers(sub)
    return parser


def _daily_job_parsers(sub) -> None:
    """``demo``, ``run`` and ``extract``: the daily job on the sandbox, the daily job, its extraction alone."""
    p = sub.add_parser("demo", help="run the daily job for N simulated days on the embedded sandbox",
                       description="Run the daily Dagster job once over N consecutive simulated days ending "
                                   "today (one run over the N partitions, as a single-run backfill) against the "
                                   "embedded sandbox (RANK_TRACKER_BASE_URL is ignored), then print two example "
                                   "answers from the warehouse.")
    p.add_argument("--days", type=positive_int, default=7, help="how many days to play (default 7)")
    p.add_argument("--verbose", action="store_true",
                   help="also print the Dagster log on stderr (it is always in the log file)")
    p.add_argument("--in-memory", action="store_true",
                   help="do not record the run in DAGSTER_HOME (default data/dagster_home) for the UI")
    p.add_argument("--persist", action="store_true", help=argparse.SUPPRESS)  # the default now
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("run", help="run the daily job for one partition against the configured source",
                       description="Run the daily Dagster job (extract, load, models, checks, publish) for one "
                                   "partition. Against the vendor API only today's partition can be extracted "
                                   "(the API tells only the present).")
    p.add_argument("--date", type=parse_date, help=DATE_HELP)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("extract", help="extract one day into Parquet snapshots (no Dagster)",
                       description="Extract one day from the configured source into Parquet snapshots under "
                                   "<data folder>/snapshots, without Dagster, the warehouse or the models.")
    p.add_argument("--date", type=parse_date, help=DATE_HELP)
    p.set_defaults(func=cmd_extract)


def _source_parsers(sub) -> None:
    """``sandbox`` (serve the stand-in API) and ``profile`` (what the source sends beside what is read)."""
    from rank_pipeline.api.config import SPEC_WINDOW_S
    from rank_pipeline.api.endpoints import endpoint_names

    p = sub.add_parser("sandbox", help="serve the sandbox API on loopback",
                       description="Serve the sandbox (a spec-faithful stand-in for the vendor API) and print "
                                   "its base URL and demo keys; stop with Ctrl-C.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765)")
    p.add_argument("--shape", default=None,
                   help="the shape records are served in: default or another of the sandbox's shapes (docs: reference, "
                        "sandbox), optionally NAME@YYYY-MM-DD from that day on (default: RANK_SANDBOX_SHAPE, else "
                        "default)")
    p.add_argument("--window-s", type=float, default=SPEC_WINDOW_S,
                   help=f"rate-limit window in seconds (spec: {SPEC_WINDOW_S:g})")
    p.set_defaults(func=cmd_sandbox)

    p = sub.add_parser("profile", help="show every JSON path the vendor sends, beside what the contract reads",
                       description="Profile a day's raw snapshots (default: the latest committed day) or, with "
                                   "--live N, a sample of N records per endpoint read from the API: per endpoint, "
                                   "every JSON path with its types, the share of records holding it and holding "
                                   "null, its distinct count, an example value, and whether the contract "
                                   "(dbt_like_sql/sources/vendor_contract.yml) reads it.")
    p.add_argument("--date", type=parse_date, help="the snapshot day to profile (default: the latest)")
    p.add_argument("--live", type=positive_int, metavar="N", help="profile N records per endpoint from the API instead")
    p.add_argument("--endpoint", action="append", choices=endpoint_names(), metavar="ENDPOINT",
                   help=f"only this endpoint (repeatable): {', '.join(endpoint_names())}")
    p.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json, for tools")
    p.add_argument("--suggest", action="store_true",
                   help="print a patch of the contract remapping the paths it misses to the paths the vendor sends, "
                        "for review (notes first, then the diff: `rank-pipeline profile --suggest > remap.patch`, "
                        "review, `git apply remap.patch`, `rank-pipeline rebuild`)")
    p.set_defaults(func=cmd_profile)


def _rebuild_parser(sub) -> None:
    """``rebuild``: the Dagster rebuild job (raw tables and models from the snapshots, then publish)."""
    p = sub.add_parser("rebuild", help="rebuild raw tables and models from the snapshots (no API call), then publish",
                       description="Rebuild the raw tables and every model from the Parquet snapshots, without "
                                   "calling the API, then publish the warehouse: one run of the Dagster job "
                                   "rebuild_from_snapshots over the days (rebuild_full_refresh with "
                                   "--full-refresh), recorded where the UI shows it. Use it after restoring "
                                   "snapshots, changing a model, or to repair a warehouse.")
    p.add_argument("--from", dest="first", type=parse_date, help="first day to rebuild (default: first snapshot)")
    p.add_argument("--to", dest="last", type=parse_date, help="last day to rebuild (default: last snapshot)")
    p.add_argument("--full-refresh", action="store_true", help="drop and rebuild every raw table and model")
    p.set_defaults(func=cmd_rebuild)


def _models_parsers(sub) -> None:
    """``docs``, ``test``, ``diff`` and ``query``: the models' documentation, tests, changes and the
    published warehouse."""
    p = sub.add_parser("docs", help="write the models' documentation site (and the Markdown dictionary)",
                       description="Write the documentation site of the models (the model graph, every raw table, "
                                   "seed and model with its columns, types, tests, SQL and column-level lineage, "
                                   "and a search) from the models folder (--models-dir, else "
                                   "RANK_PIPELINE_MODELS_DIR, else the shipped one) and the API endpoint "
                                   "declarations. Plain HTML: open index.html, or --serve it.")
    p.add_argument("--out", default="docs/site", help="the site's folder (default docs/site under the current folder)")
    p.add_argument("--dictionary", metavar="PATH",
                   help="also write the Markdown data dictionary there (the repository's is docs/reference/data-dictionary.md)")
    p.add_argument("--models-dir", help=MODELS_DIR_HELP)
    p.add_argument("--serve", action="store_true", help=f"then serve the site on http://127.0.0.1:{DOCS_PORT}/ "
                                                        "until interrupted")
    p.add_argument("--port", type=int, help=f"port for --serve (default {DOCS_PORT}; 0: any free port)")
    p.set_defaults(func=cmd_docs)

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
    p.add_argument("--models-dir", help=MODELS_DIR_HELP)
    p.add_argument("--verbose", action="store_true", help="also print the tests that pass")
    p.set_defaults(func=cmd_test)

    p = sub.add_parser("diff", help="compare a models folder's build with the published warehouse",
                       description="Build the models folder into a scratch warehouse from the current Parquet "
                                   "snapshots (no API call; nothing published) and compare every model with the "
                                   "published warehouse: rows added, removed and changed per table, changed "
                                   "values per column, 5 examples each. Exit 0 when equal, 1 when different.")
    p.add_argument("--models-dir", help=MODELS_DIR_HELP)
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser("query", help="run one SQL statement on the published warehouse",
                       description="Run exactly one SQL statement on the published warehouse, read-only.")
    p.add_argument("sql", help='one SQL statement, e.g. "select * from marts.fct_quota_cycle_daily"')
    p.add_argument("--limit", type=positive_int, default=20, help="print at most N rows (default 20)")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="output format (default table)")
    p.set_defaults(func=cmd_query)


def _keywords_parser(sub) -> None:
    """``keywords plan FILE [--offline] [--detailed-exitcode]`` and ``keywords apply FILE [--yes]``."""
    epilog = ("Exit status (the one table, docs/reference/exit-codes.md): 0 done (plan: also with changes "
              "pending), 4 changes pending with plan --detailed-exitcode (as Terraform's -detailed-exitcode), "
              "2 an error in the file, the settings or the plan (nothing sent), 1 the API failed (apply: "
              "part-way; what was created is summarised).")
    p = sub.add_parser(
        "keywords", help="plan and apply a keywords file (tracked keywords as code)",
        description="Tracked keywords as code: a YAML file of keywords per domain, planned against the "
                    "account's keywords, catalogues and quota, and applied all-or-nothing per create call.",
        epilog=epilog)
    ksub = p.add_subparsers(dest="keywords_command", required=True, metavar="ACTION",
                           help="plan: what apply would do; apply: create what is missing")
    kp = ksub.add_parser(
        "plan", help="show what apply would create, what exists, what is tracked but not in the file",
        description="Read the account's keywords (or the latest snapshot with --offline) and print what would "
                    "be created, what already exists and what is tracked but not in the file, with catalogue "
                    "problems (file lines) and the quota forecast.", epilog=epilog)
    kp.add_argument("file", help="the keywords YAML file (see examples/keywords.yml)")
    kp.add_argument("--offline", action="store_true",
                    help="plan against the latest snapshot in the data folder: no API request, catalogues unchecked")
    kp.add_argument("--detailed-exitcode", action="store_true",
                    help="exit 4 when changes are pending and 0 only when there are none, as Terraform's "
                         "-detailed-exitcode; errors keep their statuses (2 the file, 1 the API)")
    kp.set_defaults(func=cmd_keywords_plan)
    ka = ksub.add_parser(
        "apply", help="create the missing keywords (re-plans first; refuses when the plan has errors)",
        description="Re-plan, then create only the missing combinations, grouped into create calls that are "
                    "each all-or-nothing. Refuses before sending anything when the plan has errors or exceeds "
                    "the quota. A lost response is never retried blind: the domain is read back and re-planned.",
        epilog=epilog)
    ka.add_argument("file", help="the keywords YAML file")
    ka.add_argument("--yes", action="store_true", help="do not ask (required when stdin is not a terminal)")
    ka.set_defaults(func=cmd_keywords_apply)


def _project_parsers(sub) -> None:
    """``init``, ``files``, ``own`` and ``upgrade``: a project of your own (rank_pipeline.cli.project)."""
    p = sub.add_parser("init", help="scaffold a project of your own: contract, models, seeds, Dagster component",
                       description="Write a new project at PATH: the vendor's contract, the models (every one, or "
                                   "only those given with --own; the rest are read from the installed package), "
                                   "the seeds, an empty keywords file, the dashboards' definitions, a "
                                   "pyproject.toml and a README; a Dagster project (create-dagster's layout) "
                                   "with the pipeline as its component, so `dg check defs` and `dg dev` work.")
    p.add_argument("path", help="the new project's folder (must not exist, or be empty)")
    p.add_argument("--own", action="append", metavar="NAME",
                   help="copy only this model (name or path, e.g. agg_tag_daily); repeatable")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("files", help="which model files are yours and which come from the package",
                       description="In a project of your own: list the model files of models/ (yours, each "
                                   "replacing the package's file of the same path or added) and count the rest, "
                                   "read from the installed package.")
    p.add_argument("--all", action="store_true", help="also list every file read from the package")
    p.set_defaults(func=cmd_files)

    p = sub.add_parser("own", help="copy a model of the package into your project, to edit it",
                       description="Copy the package's files of each NAME (a model or seed name, or a path such "
                                   "as marts/agg_tag_daily.sql) into models/; a file you have is kept.")
    p.add_argument("names", nargs="+", metavar="NAME", help="a model or seed name, or a path below the models folder")
    p.add_argument("--replace", action="store_true", help="overwrite your file with the package's")
    p.set_defaults(func=cmd_own)

    p = sub.add_parser("upgrade", help="after upgrading the package: which of your files differ from its new defaults",
                       description="List, with a diff, each of your model files whose default in the installed "
                                   "package changed since you took it. Changes none of your files.")
    p.add_argument("--accept", action="store_true",
                   help="record the new defaults as seen, so these files are not reported again")
    p.set_defaults(func=cmd_upgrade)
