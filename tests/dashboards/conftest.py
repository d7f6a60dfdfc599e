"""Fixtures for the dashboards' tests: a short demo run into a test data folder, and the dashboards' tools.

The demo is the user's door (``rank-pipeline demo --days 2`` as a subprocess with
``RANK_PIPELINE_DATA_DIR`` set), then one ``dagster job execute`` of the daily job over the three days closing a
billing cycle (the quota's forecasts are scored once a cycle ended); every test here reads the warehouse they
publish. The dashboards' tools
live outside the pipeline's venv: Superset and playwright in ``.venv-superset`` (``make dashboard-env``,
which ``make test`` runs first), DuckDB 1.x in ``.venv-duckdb1`` (created here on first use, then cached),
and Debian's ``chromium``.
"""

from __future__ import annotations

import shutil
import subprocess
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pytest
from support import PARTITION_START, dagster_job, rank_pipeline, require

REPO = Path(__file__).resolve().parents[2]
SUPERSET_PY = REPO / ".venv-superset" / "bin" / "python"
CHROMIUM = Path("/usr/bin/chromium")
DEMO_DAYS = 2
CLOSING_DAYS = 3


def run_pipeline(data_dir: Path, *args: str, timeout: float = 900,
                 extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # the partitions' first day this process holds (tests/conftest.py), which these commands were always given
    proc = rank_pipeline(*args, data_dir=data_dir, env={**PARTITION_START, **(extra_env or {})}, timeout=timeout)
    assert proc.returncode == 0, f"rank-pipeline {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def run_daily_job_over(data_dir: Path, first: date, last: date, **extra_env: str) -> subprocess.CompletedProcess:
    """``dagster job execute`` of the daily job as ONE run over ``first .. last`` (a single-run backfill, as the
    UI launches one) on the data folder's instance, against the embedded sandbox."""
    tags = {"dagster/asset_partition_range_start": first.isoformat(),
            "dagster/asset_partition_range_end": last.isoformat()}
    proc = dagster_job(data_dir, "daily_rank_pipeline", tags, env=extra_env, timeout=900)
    assert proc.returncode == 0, f"the daily job over {first}..{last} failed:\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="session")
def pipeline():
    """``pipeline(data_dir, *args)`` runs ``rank-pipeline *args`` as a subprocess on that data folder."""
    return run_pipeline


def closing_days(first_day: date) -> list[date]:
    """The last two days of a billing cycle and the next one's first day (the 1st of a month), before
    ``first_day - 1`` (the day test_dashboards_browser publishes while Superset runs): played in one run of
    the daily job so that the quota forecasts of a cycle that ended can be scored."""
    reset = (first_day - timedelta(days=2)).replace(day=1)
    return [reset - timedelta(days=2), reset - timedelta(days=1), reset]


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory) -> Path:
    """A data folder after ``rank-pipeline demo --days 2`` (snapshots and the published warehouse), then one
    run of the daily job over the :data:`CLOSING_DAYS` :func:`closing_days` (:func:`run_daily_job_over`): a
    billing cycle that ended, for the quota's forecast-accuracy panel."""
    data_dir = tmp_path_factory.mktemp("dashboards_demo")
    run_pipeline(data_dir, "demo", "--days", str(DEMO_DAYS))
    assert (data_dir / "warehouse.duckdb").is_file()
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as con:
        (first_day,) = con.execute("select min(snapshot_date) from raw.keywords").fetchone()
    days = closing_days(first_day)
    assert len(days) == CLOSING_DAYS
    # days before the folder's first snapshot day: the partitions must start earlier
    run_daily_job_over(data_dir, days[0], days[-1], RANK_PIPELINE_PARTITION_START=days[0].isoformat())
    return data_dir


@pytest.fixture(scope="session")
def dashboard_tools() -> Path:
    """The dashboards' Python (Superset + playwright); skips, saying why, when they are not installed (fails
    under CI=true: :func:`support.require`). Its tests are marked ``browser`` (tests/conftest.py)."""
    missing = []
    if not SUPERSET_PY.is_file():
        missing.append(f"the Superset venv ({SUPERSET_PY.parent.parent})")
    elif subprocess.run([str(SUPERSET_PY), "-c", "import superset, playwright, prison"],
                        capture_output=True).returncode != 0:
        missing.append("superset/playwright in .venv-superset")
    if not CHROMIUM.is_file() and not shutil.which("chromium"):
        missing.append("Debian's chromium (/usr/bin/chromium)")
    require(not missing, f"{' and '.join(missing)} could not be installed: run `make dashboard-env` "
                         "(needs PyPI and, for chromium, root with apt)")
    return SUPERSET_PY
