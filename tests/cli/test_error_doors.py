"""Errors that keep what helps, as a user meets them: ``rank-pipeline`` as a subprocess, its settings in the
environment only. Ground truth: DuckDB's own message for the same statement, the parser's commands, the
sandbox served over HTTP on loopback as the vendor (its ``/_sandbox/stats`` counts every request it
answered), and the one exit-status table (:data:`rank_pipeline.errors.EXIT_STATUSES`).
"""

from __future__ import annotations

import argparse
import ast
import functools
import os
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path

import duckdb
import pytest
from support import rank_pipeline, requests_served

from rank_pipeline.cli.parser import build_parser
from rank_pipeline.cli.pipeline import QUERY_SUGGESTION, ui_command
from rank_pipeline.cli.reference import CLI_PAGE_WIDTH, cli_page, exit_codes_page
from rank_pipeline.errors import (
    EXIT_CHANGES_PENDING,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STATUSES,
    EXIT_USAGE,
    RankPipelineError,
    exception_classes,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e_cli_errors")]

ROOT = Path(__file__).resolve().parents[2]
cli = functools.partial(rank_pipeline, cwd=ROOT, timeout=240, stdin=subprocess.DEVNULL)
"""``rank-pipeline *args`` with a clean environment plus ``env`` (:func:`support.rank_pipeline`), in the clone
unless ``cwd`` says another folder, stdin closed (as in a script), killed past 240 s."""


def _one_line(done: subprocess.CompletedProcess) -> str:
    """The one line on stderr (asserting there is exactly one)."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


# -- query keeps DuckDB's hints -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    """A data folder whose published warehouse holds the mart the README's query reads."""
    data_dir = tmp_path_factory.mktemp("published")
    with duckdb.connect(str(data_dir / "warehouse.duckdb")) as con:
        con.execute("create schema marts")
        con.execute("create table marts.fct_keyword_rankings_daily as select date '2026-11-01' as snapshot_date, "
                    "42 as keyword_id, 3 as position")
    return data_dir


def _duckdb_message(data_dir: Path, sql: str) -> str:
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as con:
        with pytest.raises(duckdb.Error) as raised:
            con.execute(sql)
    return str(raised.value)


@pytest.mark.parametrize("sql,hint", [
    ("select * from marts.fct_keyword_ranking_daily", "Did you mean"),
    ("select positon from marts.fct_keyword_rankings_daily", "Candidate bindings:"),
])
def test_query_keeps_duckdbs_hints_on_its_one_line(warehouse, sql, hint):
    own = _duckdb_message(warehouse, sql)
    kept = [line.strip() for line in own.split("\nLINE ")[0].splitlines() if line.strip()]
    assert len(kept) >= 2 and kept[1].startswith(hint), own  # DuckDB's own message has the hint on line 2
    done = cli("query", sql, data_dir=warehouse)
    assert done.returncode == EXIT_USAGE
    line = _one_line(done)
    assert line == f"error: the query failed: {' '.join(kept)}"
    assert "fct_keyword_rankings_daily" in line if hint == "Did you mean" else '"position"' in line


def test_the_query_the_demo_and_readme_suggest_runs_as_written(warehouse):
    args = shlex.split(QUERY_SUGGESTION)
    assert args[:2] == ["rank-pipeline", "query"]
    done = cli(*args[1:], data_dir=warehouse)
    assert done.returncode == EXIT_OK, done.stderr
    assert "42" in done.stdout.splitlines()[2]  # the header, the rule, then the one row
    readme = (ROOT / "README.md").read_text()
    assert QUERY_SUGGESTION.split(" ", 1)[1] in readme and "duckdb -readonly" not in readme


# -- an unknown command names the closest -----------------------------------------------------------------


def test_an_unknown_command_names_the_closest_in_one_line():
    done = cli("querry", "select 1")
    assert done.returncode == EXIT_USAGE
    assert _one_line(done) == ("error: rank-pipeline: unknown command 'querry': did you mean `rank-pipeline query`? "
                               "(`rank-pipeline --help` lists every command)")
    nested = cli("keywords", "plann", "keywords.yml")
    assert nested.returncode == EXIT_USAGE
    assert "did you mean `rank-pipeline keywords plan`?" in _one_line(nested)
    option = cli("query", "select 1", "--format", "tabel")
    assert option.returncode == EXIT_USAGE
    assert "invalid choice 'tabel': did you mean 'table'?" in _one_line(option)
    # nothing close: no guess, every command listed (the parser's own list)
    far = cli("zzzz")
    assert far.returncode == EXIT_USAGE
    line = _one_line(far)
    assert "did you mean" not in line
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert line.endswith(f"({', '.join(sub.choices)})")


# -- one exit-status table --------------------------------------------------------------------------------


def _returned_literals(path: Path) -> set[int]:
    """The integer literals in what the ``cmd_*`` functions of ``path`` (and the functions inside them) return."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("cmd_"):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and inner.value is not None:  # `return 1`, `return 0 if x else 1`
                    found |= {c.value for c in ast.walk(inner.value)
                              if isinstance(c, ast.Constant) and type(c.value) is int}
    return found


def test_every_status_a_command_can_end_with_is_in_the_one_table():
    returned = set().union(*(_returned_literals(p) for p in (ROOT / "rank_pipeline" / "cli").glob("*.py")))
    assert 0 in returned and 1 in returned  # the walk sees the commands' own returns
    assert returned <= set(EXIT_STATUSES), returned - set(EXIT_STATUSES)
    raised = {cls.exit_status for cls in exception_classes().values() if issubclass(cls, RankPipelineError)}
    assert raised <= set(EXIT_STATUSES)
    page = exit_codes_page()
    for status, (short, _meaning) in EXIT_STATUSES.items():
        assert f"\n| {status} | " in page, status
        assert f"{status} {short}" in build_parser().epilog
    assert "keywords plan" in EXIT_STATUSES[EXIT_CHANGES_PENDING][1]


KEYWORDS = """
    version: 1
    domains:
      - domain: acme-shop.net
        account: acme
        groups:
          - words: [kw exit status]
            engines: [google]
            devices: [desktop]
            locations: [US]
            languages: [en]
            frequency: daily
"""


def test_keywords_plan_follows_the_table_and_its_detailed_exitcode(vendor, tmp_path):
    world, base_url = vendor
    env = {"RANK_TRACKER_BASE_URL": base_url, "RANK_TRACKER_ACCOUNTS": "acme",
           "RANK_TRACKER_API_KEY_ACME": world.account("acme").api_key}
    path = tmp_path / "keywords.yml"
    path.write_text(textwrap.dedent(KEYWORDS).lstrip())
    plan = cli("keywords", "plan", str(path), data_dir=tmp_path / "data", env=env)
    assert plan.returncode == EXIT_OK, plan.stdout + plan.stderr  # pending, and still 0 by default
    assert "Plan: 1 to create, 0 already tracked" in plan.stdout  # the world has no such keyword
    detailed = cli("keywords", "plan", str(path), "--detailed-exitcode", data_dir=tmp_path / "data", env=env)
    assert detailed.returncode == EXIT_CHANGES_PENDING, detailed.stdout + detailed.stderr
    bad = tmp_path / "bad.yml"
    bad.write_text(path.read_text().replace("frequency: daily", "frequncy: daily"))
    for extra in ([], ["--detailed-exitcode"]):
        refused = cli("keywords", "plan", str(bad), *extra, data_dir=tmp_path / "data", env=env)
        assert refused.returncode == EXIT_USAGE, refused.stdout + refused.stderr  # an error in the file
        assert f"{bad}:" in refused.stderr and "frequncy: is not a field" in refused.stderr
    missing = cli("keywords", "plan", data_dir=tmp_path / "data", env=env)  # no FILE: a usage error
    assert missing.returncode == EXIT_USAGE and "the following arguments are required: file" in _one_line(missing)
    assert world.account("acme").api_key not in plan.stdout + plan.stderr + detailed.stdout + detailed.stderr


# -- a past date against the vendor API is refused before the job starts --------------------------------


@pytest.mark.parametrize("command", ["run", "extract"])
def test_a_past_date_against_the_api_is_refused_at_once_like_a_future_one(vendor, tmp_path, command):
    world, base_url = vendor
    key = world.account("acme").api_key
    env = {"RANK_TRACKER_BASE_URL": base_url, "RANK_TRACKER_API_KEY": key}
    yesterday = world.today - timedelta(days=1)
    data_dir = tmp_path / "data"
    before = requests_served(base_url)
    past = cli(command, "--date", yesterday.isoformat(), data_dir=data_dir, env=env)
    assert past.returncode == EXIT_USAGE, past.stdout + past.stderr
    line = _one_line(past)
    assert line.startswith(f"error: --date {yesterday} is in the past: the vendor API tells only the present")
    assert f"`rank-pipeline rebuild --from {yesterday} --to {yesterday}`" in line
    assert requests_served(base_url) == before  # refused before any request
    assert not data_dir.exists() or not any(data_dir.iterdir())  # no run record, no log, no lock
    # two days ahead: still the future if the command reads its clock after midnight (UTC)
    future = cli(command, "--date", (world.today + timedelta(days=2)).isoformat(), data_dir=data_dir, env=env)
    assert future.returncode == past.returncode
    assert key not in past.stdout + past.stderr


# -- the run summary counts every request made ---------------------------------------------------------


@pytest.mark.slow
def test_the_summary_of_a_run_refused_by_the_api_counts_the_refused_requests(vendor, tmp_path):
    world, base_url = vendor
    key = "wrong-key-" + "x" * 20
    before = requests_served(base_url)
    done = cli("run", data_dir=tmp_path / "data", env={"RANK_TRACKER_BASE_URL": base_url,
                                                         "RANK_TRACKER_API_KEY": key})
    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr
    served = requests_served(base_url) - before
    assert served >= 1  # the refused request reached the vendor
    summary = next(line for line in done.stderr.splitlines() if line.startswith("Failed: "))
    assert re.search(rf", {served} requests, 0 429s$", summary), (summary, served)
    assert "the API key was rejected" in done.stderr
    assert key not in done.stdout + done.stderr


@pytest.mark.slow
def test_the_extract_summary_counts_the_account_checks_requests_too(vendor, tmp_path):
    world, base_url = vendor
    before = requests_served(base_url)
    done = cli("extract", data_dir=tmp_path / "data", env={"RANK_TRACKER_BASE_URL": base_url,
                                                             "RANK_TRACKER_API_KEY": world.account("acme").api_key})
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    served = requests_served(base_url) - before  # the domains page of the account check, then the extraction
    summary = done.stdout.strip().splitlines()[-1]
    counted = re.search(r", (\d+) requests, \d+ 429s$", summary)
    assert counted and int(counted.group(1)) == served, (summary, served)


# -- the CLI reference shows whole lines ----------------------------------------------------------------


def test_the_cli_reference_page_wraps_every_help_line_to_the_sites_width():
    os.environ["COLUMNS"] = "200"  # a wide terminal where the docs are built must not widen the page
    try:
        page = cli_page()
    finally:
        del os.environ["COLUMNS"]
    blocks = re.findall(r"```text\n(.*?)```", page, re.S)
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(blocks) >= 1 + len(sub.choices)  # the top level and every command, nested ones too
    long = [line for block in blocks for line in block.splitlines() if len(line) > CLI_PAGE_WIDTH]
    assert long == []
    assert "--detailed-exitcode" in page and "--endpoint ENDPOINT" in page


# -- the tools a project needs come with it ------------------------------------------------------------


def test_an_init_project_depends_on_dg_and_the_webserver_and_the_demo_names_its_ui(tmp_path, monkeypatch):
    project = tmp_path / "my-rank"
    done = cli("init", str(project), cwd=tmp_path)
    assert done.returncode == EXIT_OK, done.stderr
    pyproject = tomllib.loads((project / "pyproject.toml").read_text())
    assert "dependency-groups" not in pyproject  # pip install -e . ignores that table
    assert "pip install -e ." in done.stdout and "pip install -e ." in (project / "README.md").read_text()
    deps = {re.split(r"[<>=!~ ]", d, maxsplit=1)[0]: d for d in pyproject["project"]["dependencies"]}
    for name in ("rank-pipeline", "dagster-dg-cli", "dagster-webserver"):
        assert name in deps, deps
    # the bounds are the installed Dagster's: what is installed here satisfies them
    for name in ("dagster-dg-cli", "dagster-webserver"):
        installed = tuple(int(x) for x in version(name).split(".")[:2])
        bounds = dict(re.findall(r"([<>]=?)(\d+\.\d+)", deps[name]))
        assert tuple(int(x) for x in bounds[">="].split(".")) <= installed < tuple(
            int(x) for x in bounds["<"].split("."))
    # the UI command the demo names where it ran: dg in a project, make in the clone, dagster elsewhere
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "data" / "dagster_home"))  # as the demo's instance sets it
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    assert (Path(sys.executable).parent / "dg").is_file()
    assert ui_command(project / "data", cwd=project) == "dg dev"
    monkeypatch.setenv("PATH", str(tmp_path))  # dg not installed yet: installing the project gives it
    assert ui_command(project / "data", cwd=project).startswith("pip install -e . && dg dev")
    assert ui_command(ROOT / "data", cwd=ROOT) == "make dev"
    elsewhere = ui_command(tmp_path / "data", cwd=tmp_path)
    assert elsewhere == f"DAGSTER_HOME={tmp_path / 'data' / 'dagster_home'} dagster dev -m rank_pipeline.defs.definitions"
    assert (Path(sys.executable).parent / "dagster").is_file()  # the command it names is installed


@pytest.mark.slow
def test_the_demos_closing_lines_name_commands_that_run_where_it_ran(tmp_path):
    data_dir = tmp_path / "data"
    done = cli("demo", "--days", "1", data_dir=data_dir, cwd=tmp_path)  # neither the clone nor a project
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    query = next(line for line in lines if line.startswith("query it: ")).removeprefix("query it: ")
    ui = next(line for line in lines if line.startswith("the UI:")).removeprefix("the UI:").strip()
    assert "duckdb -readonly" not in done.stdout and "make dev" not in done.stdout
    assert ui == f"DAGSTER_HOME={data_dir / 'dagster_home'} dagster dev -m rank_pipeline.defs.definitions"
    assert (data_dir / "dagster_home" / "dagster.yaml").is_file()  # the home it names holds the demo's runs
    args = shlex.split(query)
    ran = cli(*args[1:], data_dir=data_dir, cwd=tmp_path)
    assert ran.returncode == EXIT_OK, ran.stderr
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("select count(*) from marts.fct_keyword_rankings_daily").fetchone()[0]
    assert len(ran.stdout.strip().splitlines()) == 2 + min(rows, 10)  # header, rule, the rows
