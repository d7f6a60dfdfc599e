"""A failed day's raw rows are never built or published, by any door: the command line's ``rebuild`` (which
runs the Dagster job ``rebuild_from_snapshots`` in process), the same job as Dagster launches it from the
project's ``workspace.yaml``, ``rebuild_full_refresh`` launched for one partition, and the next daily run.

One data folder on the embedded sandbox, commands as subprocesses with settings in the environment: day 1
publishes; day 2 the sandbox sends another shape (``vendor-b``), so its run fails the blocking shape check
and publishes nothing. Then, each on a copy of the folder, ``rank-pipeline rebuild --to <day 1>`` and the
Dagster job for partition day 1 (launched on the code location ``workspace.yaml`` names) publish a warehouse whose raw tables, staging and marts hold day 1 only
(before the shape check gated the raw load, the failed run left day 2 in the build file's raw tables and
both published it).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
import yaml
from support import PARTITION_START, assert_same_marts, dagster_job, rank_pipeline

from rank_pipeline.warehouse.raw_days import RawDays

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("rebuild_job_doors"),
              pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
TODAY = datetime.now(UTC).date()
DAY1, DAY2, DAY3 = (TODAY - timedelta(days=i) for i in (3, 2, 1))


_cli = functools.partial(rank_pipeline, cwd=ROOT, timeout=600)
"""``rank-pipeline *args`` in the clone (:func:`support.rank_pipeline`): ``data_dir``, a clean environment plus
``env`` (each call names :data:`support.PARTITION_START`, as :func:`support.dagster_job` does), killed past 600 s."""


def _dagster(data_dir: Path, job: str, day: date) -> subprocess.CompletedProcess:
    """``dagster job execute -m <the module workspace.yaml loads> -j JOB`` for partition ``day``
    (:func:`support.dagster_job`): the project's code location, the job with its own tags, the run recorded in the
    data folder's instance (the UI's)."""
    (location,) = yaml.safe_load((ROOT / "workspace.yaml").read_text())["load_from"]
    return dagster_job(data_dir, job, {"dagster/partition": day.isoformat()}, module=location["python_module"])


def _days(path: Path) -> dict[str, set[date]]:
    """``{schema: the snapshot days its relations hold}`` of ``raw``, ``staging`` and ``marts`` in ``path``."""
    out: dict[str, set[date]] = {"raw": set(), "staging": set(), "marts": set()}
    with duckdb.connect(str(path), read_only=True) as con:
        dated = con.execute("select table_schema, table_name from information_schema.columns where "
                            "column_name = 'snapshot_date' and table_schema in ('raw', 'staging', 'marts')").fetchall()
        for schema, name in dated:
            out[schema] |= {d for (d,) in con.execute(
                f'select distinct snapshot_date from "{schema}"."{name}" where snapshot_date is not null').fetchall()}
    return out


@pytest.fixture(scope="module")
def failed_day_2(tmp_path_factory):
    """Day 1 published, day 2 failed its shape check; the data folder."""
    data = tmp_path_factory.mktemp("failed_day") / "data"
    day1 = _cli("run", "--date", DAY1.isoformat(), data_dir=data, env=PARTITION_START)
    assert day1.returncode == 0, day1.stdout + day1.stderr
    published = (data / "warehouse.duckdb").read_bytes()
    day2 = _cli("run", "--date", DAY2.isoformat(), data_dir=data,
                env={**PARTITION_START, "RANK_SANDBOX_SHAPE": "vendor-b"})
    assert day2.returncode == 1, day2.stdout + day2.stderr
    assert "matches_contract" in day2.stderr and "nothing was published" in day2.stderr, day2.stderr
    assert (data / "warehouse.duckdb").read_bytes() == published  # nothing published
    assert (data / "snapshots" / "keywords" / f"snapshot_date={DAY2}").is_dir()  # the snapshots are kept
    # the failed day was never loaded: the build file holds day 1 only, as the folder's ledger of the days
    # loaded says (what Spark, reading the snapshots in place, reads: test_backfill_doors.py)
    assert _days(data / "warehouse.build.duckdb")["raw"] == {DAY1} == RawDays.of(data).read()
    return data


def test_rebuild_to_day_1_publishes_no_row_of_the_failed_day_2(failed_day_2, tmp_path, published_marts):
    data = tmp_path / "data"
    shutil.copytree(failed_day_2, data)
    before = published_marts(data / "warehouse.duckdb")

    done = _cli("rebuild", "--to", DAY1.isoformat(), data_dir=data, env=PARTITION_START)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"rebuilt {DAY1} .. {DAY1}: 1 day(s)"), done.stdout
    assert f"published {data / 'warehouse.duckdb'}" in done.stdout
    assert _days(data / "warehouse.duckdb") == {"raw": {DAY1}, "staging": {DAY1}, "marts": {DAY1}}
    assert_same_marts(published_marts(data / "warehouse.duckdb"), before)

    # the range over the failed day is refused with its shape lines, nothing built or published
    published = (data / "warehouse.duckdb").read_bytes()
    refused = _cli("rebuild", "--from", DAY2.isoformat(), data_dir=data, env=PARTITION_START)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "vendor shape: keywords: keyword " in refused.stderr
    assert "the vendor's shape does not match the contract (raw.keywords.matches_contract: " in refused.stderr
    assert (data / "warehouse.duckdb").read_bytes() == published

    # the next daily run: days 1 and 3, never day 2's rows; day 2 is a day without a snapshot, which only
    # the coverage mart's calendar of days shows (has_snapshot false)
    day3 = _cli("run", "--date", DAY3.isoformat(), data_dir=data, env=PARTITION_START)
    assert day3.returncode == 0, day3.stdout + day3.stderr
    days = _days(data / "warehouse.duckdb")
    assert days["raw"] == days["staging"] == days["marts"] - {DAY2} == {DAY1, DAY3} == RawDays.of(data).read()
    with duckdb.connect(str(data / "warehouse.duckdb"), read_only=True) as con:
        dated = [t for (t,) in con.execute("select table_name from information_schema.columns where "
                                           "column_name = 'snapshot_date' and table_schema = 'marts'").fetchall()]
        of_day2 = {t for t in dated if con.execute(
            f'select count(*) from marts."{t}" where snapshot_date = ?', [DAY2]).fetchone()[0]}
        assert of_day2 <= {"fct_account_snapshot_coverage_daily"}, of_day2
        assert con.execute("select bool_or(has_snapshot) from marts.fct_account_snapshot_coverage_daily "
                           "where snapshot_date = ?", [DAY2]).fetchone()[0] in (False, None)


def test_the_dagster_job_for_day_1_publishes_no_row_of_the_failed_day_2(failed_day_2, tmp_path, published_marts):
    data = tmp_path / "data"
    shutil.copytree(failed_day_2, data)
    before = published_marts(data / "warehouse.duckdb")

    done = _dagster(data, "rebuild_from_snapshots", DAY1)
    assert done.returncode == 0, done.stderr[-4000:]
    assert _days(data / "warehouse.duckdb") == {"raw": {DAY1}, "staging": {DAY1}, "marts": {DAY1}}
    assert_same_marts(published_marts(data / "warehouse.duckdb"), before)
    with duckdb.connect(str(data / "warehouse.duckdb"), read_only=True) as con:
        jobs = {j for (j,) in con.execute("select job_name from ops.run_history where status = 'success'").fetchall()}
    assert "rebuild_from_snapshots" in jobs

    # a full refresh reloads every committed day, so it checks every one: refused for day 2, nothing published
    published = (data / "warehouse.duckdb").read_bytes()
    refused = _dagster(data, "rebuild_full_refresh", DAY1)
    assert refused.returncode != 0
    assert "matches_contract" in refused.stdout + refused.stderr
    assert (data / "warehouse.duckdb").read_bytes() == published
    assert _days(data / "warehouse.build.duckdb")["raw"] == {DAY1} == RawDays.of(data).read()
