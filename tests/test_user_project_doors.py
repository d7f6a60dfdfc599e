"""A user's own project and the Dagster component, through their doors, in subprocesses: the package built as
a wheel and installed (not editable) into a fresh venv, as tests/test_install.py does, used from folders
outside the repository.

- ``rank-pipeline init my-rank``; ``demo --days 2`` in it publishes; an edit of its copy of a mart and
  ``rebuild`` change that mart; ``dg check defs`` passes; the installed package's files are untouched.
- a project in create-dagster's layout gains the component through a hand-written ``defs.yaml``;
  ``dg check defs`` passes and ``dg launch`` materializes one day against the sandbox and publishes.
- after the package is upgraded (reinstalled with a changed default), ``rank-pipeline upgrade`` leaves the
  user's edited model as it was and shows the difference.
- a wrong attribute (an unknown engine, a key written in clear) fails ``dg check defs`` with a line naming it.
- one source of each setting: ``data_dir: elsewhere`` in a project's ``defs.yaml`` makes ``rank-pipeline demo``
  publish ``elsewhere/warehouse.duckdb`` (and ``query`` read it); ``engine: sparkle`` ends a command with one line
  naming its line of ``defs.yaml``.
- ``dg scaffold defs`` in a create-dagster project writes the documented attributes, which ``dg check defs`` passes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from support import command_env, install_wheel, wheel_source, wheel_venv

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e_user_project")]

ROOT = Path(__file__).resolve().parents[1]
SHARED_BIN = Path(sys.executable).parent
COMPONENT = "rank_pipeline.defs.component.RankPipelineComponent"
DG = "import sys; from dagster_dg_cli.cli import main; sys.exit(main())"


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh venv with the package installed from its wheel (the dependencies seen through a ``.pth``)."""
    return wheel_venv(tmp_path_factory.mktemp("user_project"))


def _package_dir(venv: Path) -> Path:
    out = subprocess.run([str(venv / "bin" / "python"), "-c", "import rank_pipeline; print(rank_pipeline.__file__)"],
                         env=_env(venv), capture_output=True, text=True, check=True).stdout.strip()
    return Path(out).parent


def _tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return digest.hexdigest()


def _env(venv: Path, **extra: str) -> dict[str, str]:
    env = command_env(drop=("PYTHONPATH", "VIRTUAL_ENV"))
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["DAGSTER_DISABLE_TELEMETRY"] = "1"
    env.update(extra)
    return env


def _run(venv: Path, args: list[str], cwd: Path, timeout: int = 600, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=_env(venv, **extra), capture_output=True, text=True, timeout=timeout)


def _rank(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return _run(venv, [str(venv / "bin" / "rank-pipeline"), *args], cwd)


def _dg(venv: Path, cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    """``dg`` run by the venv's Python, so that it loads the installed package; the project's ``src/`` on the
    path stands for installing the project itself (``uv sync`` or ``pip install -e .`` in real use)."""
    return _run(venv, [str(venv / "bin" / "python"), "-c", DG, *args], cwd, PYTHONPATH=str(cwd / "src"), **extra)


def _max_tracked(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute("select max(tracked_keywords) from marts.dim_domains").fetchone()
    assert row is not None
    return int(row[0])


def test_init_demo_edit_rebuild_and_dg_check(venv, tmp_path):
    package = _package_dir(venv)
    before = _tree_digest(package)
    done = _rank(venv, tmp_path, "init", "my-rank")
    assert done.returncode == 0, done.stderr
    project = tmp_path / "my-rank"
    for rel in ("pyproject.toml", "README.md", "keywords.yml", "models/sources/vendor_contract.yml",
                "models/marts/dim_domains.sql", "models/seeds/ctr_curve.csv", "dashboards/dashboards.yml",
                "src/my_rank/definitions.py", "src/my_rank/defs/rank/defs.yaml"):
        assert (project / rel).is_file(), rel

    done = _rank(venv, project, "demo", "--days", "2")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Completed: 2 day(s)" in done.stdout
    published = project / "data" / "warehouse.duckdb"
    baseline = _max_tracked(published)

    mart = project / "models" / "marts" / "dim_domains.sql"
    mart.write_text(mart.read_text().replace(
        "select * from final", "select * replace (tracked_keywords + 1000000 as tracked_keywords) from final"))
    done = _rank(venv, project, "rebuild")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert _max_tracked(published) == baseline + 1000000

    done = _rank(venv, project, "files")
    assert done.returncode == 0, done.stderr
    assert ["yours (replaces the package's)", "marts/dim_domains.sql"] in [
        [part.strip() for part in line.rsplit(" ", 1)] for line in done.stdout.splitlines()]

    done = _dg(venv, project, "check", "defs")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert _tree_digest(package) == before


def _create_dagster_project(venv: Path, where: Path, name: str) -> Path:
    done = _run(venv, [str(SHARED_BIN / "create-dagster"), "project", "--no-uv-sync", name], where)
    assert done.returncode == 0, done.stdout + done.stderr
    return where / name


def test_component_in_a_create_dagster_project_materializes_a_day(venv, tmp_path):
    project = _create_dagster_project(venv, tmp_path, "analytics")
    defs = project / "src" / "analytics" / "defs" / "rank"
    defs.mkdir(parents=True)
    # the day launched is the first partition: without it they start on the day the definitions load, after
    # the launch's day should the test cross midnight, UTC
    day = datetime.now(UTC).date().isoformat()
    (defs / "defs.yaml").write_text(f"type: {COMPONENT}\nattributes:\n  data_dir: rank_data\n  engine: duckdb\n"
                                    f"  schedule: {{cron: '0 7 * * *', timezone: UTC}}\n  partition_start: '{day}'\n")
    done = _dg(venv, project, "check", "defs")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    done = _dg(venv, project, "list", "defs", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "daily_rank_pipeline_schedule" in done.stdout and "marts/dim_domains" in done.stdout

    home = tmp_path / "dagster_home"
    home.mkdir()
    done = _dg(venv, project, "launch", "--job", "daily_rank_pipeline", "--partition", day, DAGSTER_HOME=str(home))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with duckdb.connect(str(project / "rank_data" / "warehouse.duckdb"), read_only=True) as con:
        row = con.execute("select count(*) from marts.fct_keyword_rankings_daily where snapshot_date = ?",
                          [day]).fetchone()
    assert row is not None and row[0] > 0


@pytest.mark.parametrize(("attributes", "named"), [
    ("  engine: sparkk\n", "defs.yaml:3 - rank_pipeline.defs.component.RankPipelineComponent attributes.engine "
                          "'sparkk' is not one of ['duckdb', 'spark']"),
    ("  accounts:\n    - {name: acme, api_key_env: sk-live-0123456789}\n", "accounts[0].api_key_env"),
])
def test_a_wrong_attribute_fails_dg_check_naming_it(venv, tmp_path, attributes, named):
    project = _create_dagster_project(venv, tmp_path, "analytics")
    defs = project / "src" / "analytics" / "defs" / "rank"
    defs.mkdir(parents=True)
    (defs / "defs.yaml").write_text(f"type: {COMPONENT}\nattributes:\n{attributes}")
    done = _dg(venv, project, "check", "defs")
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert [line for line in output.splitlines() if named in line], output[-3000:]
    assert "sk-live-0123456789" not in output  # the error never repeats a key written in clear


def test_upgrade_keeps_the_users_edit_and_shows_the_new_default(venv, tmp_path):
    done = _rank(venv, tmp_path, "init", "mine", "--own", "dim_domains")
    assert done.returncode == 0, done.stderr
    project = tmp_path / "mine"
    owned = project / "models" / "marts" / "dim_domains.sql"
    owned.write_text(owned.read_text() + "-- my change\n")
    edited = owned.read_text()

    newer = wheel_source(tmp_path / "newer")  # the next release: its default of the model changed
    default = newer / "dbt_like_sql" / "marts" / "dim_domains.sql"
    default.write_text(default.read_text().replace("select * from final", "select * from final -- upstream fix"))
    install_wheel(venv / "bin" / "python", newer)

    done = _rank(venv, project, "upgrade")
    assert done.returncode == 0, done.stderr
    assert owned.read_text() == edited
    assert "marts/dim_domains.sql: the default changed and so did yours" in done.stdout
    assert "+select * from final -- upstream fix" in done.stdout
    assert "--- yours/marts/dim_domains.sql" in done.stdout


def test_the_command_line_reads_defs_yaml(venv, tmp_path):
    done = _rank(venv, tmp_path, "init", "mine")
    assert done.returncode == 0, done.stderr
    project = tmp_path / "mine"
    defs_yaml = project / "src" / "mine" / "defs" / "rank" / "defs.yaml"
    text = defs_yaml.read_text()
    assert "  data_dir: data\n" in text
    defs_yaml.write_text(text.replace("  data_dir: data\n", "  data_dir: elsewhere\n"))

    done = _rank(venv, project, "demo", "--days", "1")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (project / "elsewhere" / "warehouse.duckdb").is_file()
    assert not (project / "data" / "warehouse.duckdb").exists()
    assert f"warehouse: {project / 'elsewhere' / 'warehouse.duckdb'}" in done.stdout
    done = _rank(venv, project / "models", "query", "select count(*) as n from marts.dim_domains", "--format", "csv")
    assert done.returncode == 0 and int(done.stdout.split()[-1]) > 0, done.stdout + done.stderr

    lines = defs_yaml.read_text().splitlines()
    engine = next(i for i, line in enumerate(lines) if line.startswith("  engine:"))
    lines[engine] = "  engine: sparkle"
    defs_yaml.write_text("\n".join(lines) + "\n")
    done = _rank(venv, project, "demo", "--days", "1")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: src/mine/defs/rank/defs.yaml:{engine + 1}: engine 'sparkle' is not "
                                        "one of duckdb, spark"]


def test_dg_scaffold_defs_writes_the_documented_attributes(venv, tmp_path):
    project = _create_dagster_project(venv, tmp_path, "analytics")
    done = _dg(venv, project, "scaffold", "defs", COMPONENT, "rank")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    text = (project / "src" / "analytics" / "defs" / "rank" / "defs.yaml").read_text()
    assert "attributes: {}" not in text
    for line in ("  data_dir: data", "  engine: duckdb", '    cron: "15 6 * * *"', "  # partition_start:"):
        assert line in text.splitlines() or any(t.startswith(line) for t in text.splitlines()), (line, text)
    done = _dg(venv, project, "check", "defs")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
