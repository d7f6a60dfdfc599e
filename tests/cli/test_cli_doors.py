"""Every command as a user runs it: ``rank-pipeline`` as a subprocess, settings in the environment only.

The vendor is the sandbox served over HTTP on loopback (``RANK_TRACKER_BASE_URL=http://127.0.0.1:<port>``),
its keys passed only as environment variables. Ground truth is the sandbox's ``World``.
"""

from __future__ import annotations

import functools
import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support import rank_pipeline, requests_served

from rank_pipeline.sandbox import World
from rank_pipeline.snapshots.reader import list_snapshot_dates, read_snapshot

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e_cli_doors")]

cli = functools.partial(rank_pipeline, timeout=240)
"""``rank-pipeline *args`` with a clean environment plus ``env`` (:func:`support.rank_pipeline`), killed past 240 s."""


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _key_env(world: World, *names: str) -> dict[str, str]:
    if len(names) == 1 and names[0] == "default":
        return {"RANK_TRACKER_API_KEY": world.account("acme").api_key}
    env = {"RANK_TRACKER_ACCOUNTS": ",".join(names)}
    for name in names:
        env[f"RANK_TRACKER_API_KEY_{name.upper()}"] = world.account(name).api_key
    return env


def _all_text(root: Path) -> str:
    return "\n".join(p.read_bytes().decode("latin-1") for p in root.rglob("*") if p.is_file())


# -- extract against the "vendor" -------------------------------------------------------------------


@pytest.mark.slow
def test_extract_against_an_http_api_sends_the_key_not_the_variable_name(vendor, tmp_path):
    world, base_url = vendor
    env = {"RANK_TRACKER_BASE_URL": base_url + "/v1/", **_key_env(world, "acme", "globex")}
    done = cli("extract", data_dir=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Completed: 1 day(s)" in _last_line(done.stdout)
    # ground truth: the domains the world holds for those accounts on the day extracted (the extractor's clock:
    # the test can cross midnight, UTC)
    (day,) = list_snapshot_dates(tmp_path / "snapshots", "domains")
    table = read_snapshot(tmp_path / "snapshots", "domains", day).to_pandas()
    expected = {(a, str(d["id"])) for a in ("acme", "globex")
                for d in world.domains(world.account(a).account_id, day=day)}
    assert set(zip(table["account"], table["id"].astype(str), strict=True)) == expected
    # a loopback "vendor" is recorded without its port (a test's or a hand-run sandbox's port changes)
    assert json.loads((tmp_path / "source.json").read_text())["source"] == base_url.rsplit(":", 1)[0] + ":*"
    text = done.stdout + done.stderr + _all_text(tmp_path)
    for name in ("acme", "globex"):
        assert world.account(name).api_key not in text


def test_a_key_with_a_control_character_is_refused_before_any_request_without_echo(vendor, tmp_path):
    world, base_url = vendor
    key = world.account("acme").api_key
    before = requests_served(base_url)
    done = cli("extract", data_dir=tmp_path, env={"RANK_TRACKER_BASE_URL": base_url,
                                                  "RANK_TRACKER_API_KEY": key + "\n"})
    assert done.returncode == 2
    assert requests_served(base_url) == before
    assert "RANK_TRACKER_API_KEY contains a control character" in _last_line(done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1
    assert key not in done.stdout + done.stderr + _all_text(tmp_path)


@pytest.mark.slow
def test_a_data_folder_keeps_its_source(vendor, tmp_path):
    world, base_url = vendor
    env = {"RANK_TRACKER_BASE_URL": base_url, **_key_env(world, "default")}
    assert cli("extract", data_dir=tmp_path, env=env).returncode == 0
    snapshots = sorted(p for p in (tmp_path / "snapshots").rglob("*") if p.is_file())
    # a forgotten export RANK_TRACKER_BASE_URL: the sandbox is refused in the API's folder
    done = cli("extract", data_dir=tmp_path)
    assert done.returncode == 2
    line = _last_line(done.stderr)
    label = base_url.rsplit(":", 1)[0] + ":*"
    assert f"holds snapshots from the API at {label}, not from the embedded sandbox" in line
    assert f"export RANK_TRACKER_BASE_URL={label}" in line
    assert sorted(p for p in (tmp_path / "snapshots").rglob("*") if p.is_file()) == snapshots
    # and the other way round: a sandbox folder refuses the API
    sandbox_dir = tmp_path / "sandbox-data"
    (sandbox_dir).mkdir()
    (sandbox_dir / "source.json").write_text('{"source": "sandbox"}')
    before = requests_served(base_url)
    done = cli("extract", data_dir=sandbox_dir, env=env)
    assert done.returncode == 2
    assert "unset RANK_TRACKER_BASE_URL" in _last_line(done.stderr)
    assert requests_served(base_url) == before


# -- accounts are an identity -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_renamed_account_is_refused_and_says_what_to_do(vendor, tmp_path):
    world, base_url = vendor
    base = {"RANK_TRACKER_BASE_URL": base_url}
    assert cli("extract", data_dir=tmp_path, env={**base, **_key_env(world, "default")}).returncode == 0
    snapshots = sorted(p for p in (tmp_path / "snapshots").rglob("*") if p.is_file())
    done = cli("extract", data_dir=tmp_path, env={**base, **_key_env(world, "acme", "globex")})
    assert done.returncode == 2, done.stdout + done.stderr
    line = _last_line(done.stderr)
    assert "account 'acme' holds domains this data folder records under account 'default'" in line
    assert "Configure it as 'default' again" in line
    assert sorted(p for p in (tmp_path / "snapshots").rglob("*") if p.is_file()) == snapshots
    # configured as before, the run goes on
    assert cli("extract", data_dir=tmp_path, env={**base, **_key_env(world, "default")}).returncode == 0


@pytest.mark.parametrize("case", ["same_name_twice", "same_key_two_names", "same_variable"])
def test_a_repeated_account_is_refused(vendor, tmp_path, case):
    world, base_url = vendor
    acme = world.account("acme").api_key
    env = {"RANK_TRACKER_BASE_URL": base_url}
    if case == "same_name_twice":
        env.update(RANK_TRACKER_ACCOUNTS="acme,acme", RANK_TRACKER_API_KEY_ACME=acme)
        expected = "RANK_TRACKER_ACCOUNTS lists 'acme' and 'acme'"
    elif case == "same_key_two_names":
        env.update(RANK_TRACKER_ACCOUNTS="acme,other", RANK_TRACKER_API_KEY_ACME=acme,
                   RANK_TRACKER_API_KEY_OTHER=acme)
        expected = "RANK_TRACKER_API_KEY_ACME and RANK_TRACKER_API_KEY_OTHER hold the same key"
    else:
        env.update(RANK_TRACKER_ACCOUNTS="a-b,a_b", RANK_TRACKER_API_KEY_A_B=acme)
        expected = "both read RANK_TRACKER_API_KEY_A_B"
    before = requests_served(base_url)
    done = cli("extract", data_dir=tmp_path, env=env)
    assert done.returncode == 2
    assert expected in _last_line(done.stderr)
    assert acme not in done.stderr + done.stdout
    assert requests_served(base_url) == before
    assert not (tmp_path / "snapshots").exists()


# -- configuration errors: one line, exit 2 ------------------------------------------------------------


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*")) if root.exists() else []


@pytest.mark.parametrize("command", ["run", "extract"])
@pytest.mark.parametrize("case", ["plain_http_to_a_remote_host", "key_with_a_newline", "unresolvable_host",
                                  "folder_of_another_source"])
def test_a_source_configuration_error_is_one_line_before_anything_is_written(vendor, tmp_path, command, case):
    """The source is opened and checked before a run starts: one line, status 2, no request, and nothing
    written (no build file, no Dagster run record, no log, no summary line)."""
    world, base_url = vendor
    key = world.account("acme").api_key
    data_dir = tmp_path / "data"
    env = {"RANK_TRACKER_BASE_URL": base_url, "RANK_TRACKER_API_KEY": key}
    expected = {
        "plain_http_to_a_remote_host": "refusing plain http:// to api.example.com",
        "key_with_a_newline": "RANK_TRACKER_API_KEY contains a control character",
        "unresolvable_host": "the host name no-such-host.invalid does not resolve",
        "folder_of_another_source": f"holds snapshots from the embedded sandbox, not from the API at "
                                    f"{base_url.rsplit(':', 1)[0]}:*",
    }[case]
    if case == "plain_http_to_a_remote_host":
        env["RANK_TRACKER_BASE_URL"] = "http://api.example.com"
    elif case == "key_with_a_newline":
        env["RANK_TRACKER_API_KEY"] = key + "\n"
    elif case == "unresolvable_host":
        env["RANK_TRACKER_BASE_URL"] = "https://no-such-host.invalid"
    else:  # a folder the sandbox filled (its record alone is enough)
        data_dir.mkdir()
        (data_dir / "source.json").write_text(json.dumps({"source": "sandbox", "recorded_at": "2026-11-01"}))
    before, served = _files(data_dir), requests_served(base_url)
    done = cli(command, data_dir=data_dir, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [_last_line(done.stderr)]  # one line
    line = _last_line(done.stderr)
    assert line.startswith("error: ") and expected in line, line
    assert "rank_pipeline." not in line and "Error:" not in line  # no exception class path
    assert "Failed" not in done.stdout + done.stderr and "checks" not in done.stdout
    assert _files(data_dir) == before  # no build file, no run record, no log, no lock
    assert requests_served(base_url) == served  # and no request
    assert key not in done.stdout + done.stderr


@pytest.mark.parametrize("variable,value", [
    ("RANK_TRACKER_RATE_WINDOW_S", "nan"),
    ("RANK_TRACKER_RATE_WINDOW_S", "inf"),
    ("RANK_TRACKER_RATE_WINDOW_S", "1e-9"),
    ("RANK_TRACKER_RATE_PER_KEY", "0"),
    ("RANK_TRACKER_RATE_PER_IP", "1e12"),
    ("RANK_TRACKER_MAX_IN_FLIGHT", "many"),
])
def test_a_bad_rate_setting_is_one_line(tmp_path, variable, value):
    done = cli("extract", data_dir=tmp_path, env={variable: value})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [_last_line(done.stderr)]
    assert _last_line(done.stderr).startswith(f"error: {variable}={value!r} ")
    assert "set it between" in done.stderr


@pytest.mark.slow
def test_a_data_folder_that_is_a_file_is_one_line(tmp_path):
    path = tmp_path / "data"
    path.write_text("not a folder")
    for command in (["run"], ["extract"], ["query", "select 1"]):
        done = cli(*command, data_dir=path)
        assert done.returncode == 2, command
        assert _last_line(done.stderr) == (f"error: the data folder {path} is a file: set RANK_PIPELINE_DATA_DIR "
                                           "to a folder (it is created if missing)")


def test_a_date_outside_the_partitions_gives_the_valid_range(tmp_path):
    start = {"RANK_PIPELINE_PARTITION_START": "2026-01-01"}

    def run(day: str) -> tuple[subprocess.CompletedProcess, set]:
        """The command's result, and the days its clock can have read (the test can cross midnight, UTC)."""
        before = datetime.now(UTC).date()
        done = cli("run", "--date", day, data_dir=tmp_path, env=start)
        return done, {before, datetime.now(UTC).date()}

    done, today = run("2099-01-01")
    assert done.returncode == 2
    assert _last_line(done.stderr) in {"error: --date 2099-01-01 is outside the daily partitions: pass a date "
                                       f"from 2026-01-01 to {d} (today, UTC)" for d in today}
    done, today = run("2020-01-01")
    assert done.returncode == 2
    assert _last_line(done.stderr) in {
        "error: --date 2020-01-01 is before the first daily partition 2026-01-01 (RANK_PIPELINE_PARTITION_START): "
        f"pass a date from 2026-01-01 to {d}, or set RANK_PIPELINE_PARTITION_START to 2020-01-01 or earlier"
        for d in today}


@pytest.mark.slow
def test_version_and_help_on_every_command_and_option():
    import argparse

    from rank_pipeline.cli.main import build_parser

    done = cli("--version")
    assert done.returncode == 0 and done.stdout.startswith("rank-pipeline 0.")
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {c.dest: c.help for c in sub._choices_actions}
    assert set(helps) == set(sub.choices) and all(helps.values())
    top = cli("--help")
    assert top.returncode == 0
    for command, subparser in sub.choices.items():
        assert command in top.stdout
        assert subparser.description, command
        for action in subparser._actions:
            assert action.help, (command, action.dest)
        shown = cli(command, "--help")
        assert shown.returncode == 0 and subparser.description.split()[0] in shown.stdout


# -- run and query through Dagster --------------------------------------------------------------------


@pytest.fixture(scope="module")
def ran(vendor, tmp_path_factory):
    """``rank-pipeline run`` of today against the HTTP "vendor" with acme and globex."""
    world, base_url = vendor
    data_dir = tmp_path_factory.mktemp("run")
    env = {"RANK_TRACKER_BASE_URL": base_url, **_key_env(world, "acme", "globex")}
    done = cli("run", data_dir=data_dir, env=env)
    return world, data_dir, env, done


@pytest.mark.slow
def test_run_against_the_api_succeeds_and_ends_with_a_summary(ran):
    world, data_dir, _, done = ran
    assert done.returncode == 0, done.stdout + done.stderr
    line = _last_line(done.stdout)
    assert line.startswith("Completed: 1 day(s), ")
    assert " 0 failed, " in line and " 0 429s" in line
    domains = sum(len(world.domains(world.account(a).account_id, day=world.today)) for a in ("acme", "globex"))
    q = cli("query", "select count(*) as n from raw.domains", "--format", "json", data_dir=data_dir)
    assert q.returncode == 0, q.stderr
    assert json.loads(q.stdout) == [{"n": domains}]
    text = done.stdout + done.stderr + _all_text(data_dir)
    assert world.account("acme").api_key not in text


@pytest.mark.slow
def test_a_failed_run_is_one_line_with_the_log_path(ran, tmp_path):
    world, _, env, _ = ran
    key = "wrong-key-" + "x" * 20
    done = cli("run", data_dir=tmp_path, env={**env, "RANK_TRACKER_API_KEY_ACME": key})
    assert done.returncode == 1
    line = _last_line(done.stderr)
    assert "the API key was rejected" in line and "details: " in line
    log = Path(line.split("details: ", 1)[1].rstrip(")"))
    assert log.is_file() and log.parent == tmp_path / "logs"
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 2
    assert key not in done.stdout + done.stderr + _all_text(tmp_path)


@pytest.mark.slow
def test_query_limit_formats_and_one_statement(ran):
    _, data_dir, _, _ = ran
    many = "select * from range(100) as t(i)"
    table = cli("query", many, data_dir=data_dir)
    assert table.returncode == 0
    assert len(table.stdout.strip().splitlines()) == 2 + 20
    assert "first 20 rows shown" in table.stderr
    csv_out = cli("query", many, "--limit", "3", "--format", "csv", data_dir=data_dir)
    assert csv_out.stdout.splitlines() == ["i", "0", "1", "2"]
    for sql, expected in [("select * from nowhere", "error: the query failed: "),
                          ("selec 1", "error: the SQL does not parse: "),
                          ("   ", "error: no SQL statement given"),
                          ("select 1; select 2", "error: 2 statements given: query runs exactly one")]:
        done = cli("query", sql, data_dir=data_dir)
        assert done.returncode == 2, sql
        assert done.stderr.strip().splitlines() == [_last_line(done.stderr)], sql
        assert _last_line(done.stderr).startswith(expected), (sql, done.stderr)

# `demo` runs from a non-editable install in tests/test_install.py
