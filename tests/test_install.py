"""``pip install .`` (not editable) into a fresh venv, then ``rank-pipeline demo --days 1`` from another folder;
and what ``make demo`` and ``make test`` install.

The venv sees the project venv's site-packages through a ``.pth`` (the dependencies are not reinstalled),
and only our package is installed, non-editable, with ``--no-deps``: what it ships (the SQL models as
package data, mapped by the build backend's configuration in ``pyproject.toml``) is what the demo finds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from support import command_env, require, wheel_venv

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e_install")]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The ``bin`` folder of a fresh venv holding a non-editable install of the project."""
    return wheel_venv(tmp_path_factory.mktemp("install")) / "bin"


def _env(**extra: str) -> dict[str, str]:
    return command_env(extra, drop=("PYTHONPATH",))


@pytest.mark.slow
def test_installed_package_runs_the_demo_from_another_folder(installed, tmp_path):
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    done = subprocess.run([str(installed / "rank-pipeline"), "demo", "--days", "1"], cwd=cwd,
                          env=_env(RANK_PIPELINE_DATA_DIR=str(tmp_path / "data")),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1].startswith("Completed: 1 day(s), ") and " 0 failed, " in lines[-1]
    # demo --days 1: the 7-day burn rate and the projection are empty, shown as "-", never NaN/NaT
    assert "NaN" not in done.stdout and "NaT" not in done.stdout and "None" not in done.stdout
    assert "\r" not in done.stdout  # not a terminal: progress lines, not a bar
    assert (tmp_path / "data" / "warehouse.duckdb").is_file()
    # the models came from the installed package, not from this checkout
    where = subprocess.run([str(installed / "python"), "-c",
                            "from rank_pipeline.settings import models_dir; print(models_dir())"],
                           cwd=cwd, env=_env(), capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(installed.parent) and not Path(where).is_relative_to(ROOT)


@pytest.mark.slow
def test_models_dir_setting_points_at_a_users_own_project(installed, tmp_path):
    own = tmp_path / "my_models"
    shutil.copytree(ROOT / "dbt_like_sql", own)
    (own / "marts" / "my_domain_count.sql").write_text(
        "select snapshot_date, count(*) as domains from staging.stg_domains group by snapshot_date\n")
    (own / "marts" / "my_domain_count.yml").write_text(
        "models:\n  - name: my_domain_count\n    description: Domains per day.\n")
    code = ("from rank_pipeline.settings import models_dir\nfrom rank_pipeline.transform import load_project\n"
            "p = load_project(models_dir())\nprint(models_dir()); print('marts.my_domain_count' in "
            "{m.qualified_name for m in p.models.values()})")
    done = subprocess.run([str(installed / "python"), "-c", code], env=_env(RANK_PIPELINE_MODELS_DIR=str(own)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(own.resolve()), "True"]
    bad = subprocess.run([str(installed / "rank-pipeline"), "docs", "--out", str(tmp_path / "d.md")],
                         env=_env(RANK_PIPELINE_MODELS_DIR=str(tmp_path / "missing")),
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("error: RANK_PIPELINE_MODELS_DIR=")


def _make_dry_run(folder: Path, *targets: str, installed: tuple[str, ...] = ()) -> list[str]:
    """The ``pip install`` lines ``make -n TARGETS`` would run in a copy of the Makefile whose venv holds the
    stamps ``installed`` (newer than pyproject.toml and constraints.txt, the stamps' prerequisites); nothing
    is installed."""
    folder.mkdir()
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy2(ROOT / name, folder / name)
    (folder / ".venv").mkdir()
    later = max(os.stat(folder / name).st_mtime for name in ("pyproject.toml", "constraints.txt")) + 60
    for stamp in installed:
        (folder / ".venv" / stamp).touch()
        os.utime(folder / ".venv" / stamp, (later, later))
    done = subprocess.run(["make", "-n", *targets], cwd=folder, capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")})
    assert done.returncode == 0, done.stdout + done.stderr
    # the package's installs (uv's own, into a new venv, is not one)
    return [line for line in done.stdout.splitlines() if re.search(r"\bpip install\b.* -e ", line)]


def test_make_demo_installs_the_package_alone_and_make_env_adds_the_extras_once(tmp_path):
    require(shutil.which("make"), "make is not installed")
    # a fresh `make demo`: one install, the package without extras (no pyspark, no test tools)
    fresh = _make_dry_run(tmp_path / "fresh", "demo")
    assert len(fresh) == 1 and re.search(r" -e \.$", fresh[0]), fresh
    # `make test`'s env after `make demo`: the dev, spark and postgres extras on top, the package not again
    after = _make_dry_run(tmp_path / "after", "env", installed=(".installed-runtime",))
    assert len(after) == 1 and after[0].endswith(" -e '.[dev,spark,postgres]'"), after
    assert "-c constraints.txt" in after[0] and "-c constraints.txt" in fresh[0]  # pinned either way
    # both done: nothing installed again
    assert _make_dry_run(tmp_path / "both", "env", "demo", installed=(".installed-runtime", ".installed-dev")) == []
    # a fresh `make test-fast`: the package, then the dev and postgres extras, no spark extra (no pyspark)
    fast = _make_dry_run(tmp_path / "fast", "test-fast")
    assert len(fast) == 2 and fast[1].endswith(" -e '.[dev,postgres]'"), fast
    # after `make env` (make test), the fast tier installs nothing more
    assert _make_dry_run(tmp_path / "full", "test-fast", "lint", installed=(".installed-runtime", ".installed-dev",
                                                                             ".installed-dev-core")) == []


def _venv_command(tmp_path: Path, *args: str) -> str:
    """The command ``make env-runtime`` would make its venv with (``make -n``: nothing is run)."""
    out = subprocess.run(["make", "-n", "-C", str(ROOT), f"VENV={tmp_path / 'v'}", *args, "env-runtime"],
                         capture_output=True, text=True, env=_env(), check=True).stdout
    return next(line for line in out.splitlines() if " -m venv " in line).split(" || ")[-1]


def test_make_makes_its_venvs_with_the_distributions_python_when_it_can(tmp_path):
    system = Path("/usr/bin/python3")
    usable = system.exists() and subprocess.run(
        [str(system), "-c", "import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))"],
        capture_output=True).returncode == 0
    expected = str(system) if usable else "python3"
    assert _venv_command(tmp_path) == f"{expected} -m venv {tmp_path / 'v'}"
    assert _venv_command(tmp_path, "PYTHON=python3.12") == f"python3.12 -m venv {tmp_path / 'v'}"
