"""A user's history is never stranded by an upgrade: snapshots written by the version before snapshot
``schema_version`` 2 (the fields the spec shows flattened into columns of their own) rebuild, through
``rank-pipeline rebuild`` in a subprocess, into the same marts as the same records written by today's code.

The old snapshots are written by the old code itself: the package at :data:`OLD` (the last commit that wrote
``schema_version`` 1), taken from this repository's history with ``git archive`` and run with ``python -m`` and
``PYTHONPATH`` pointing at it, its own embedded sandbox extracting two days. Today's snapshots of the same
records are written by today's :class:`~rank_pipeline.snapshots.writer.SnapshotWriter`; a history holding both
versions rebuilds the same too, also when its incremental models are rebuilt a day at a time
(``RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS=1``). A warehouse the old version built (its raw tables with those columns) takes the
next day from today's ``rank-pipeline run`` and loses the copies.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support import assert_same_marts, command_env, rank_pipeline, require

from rank_pipeline.snapshots.manifest import SnapshotManifest
from rank_pipeline.snapshots.schema import ENDPOINTS, arrow_schema, partition_dir
from rank_pipeline.snapshots.writer import SnapshotWriter

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
OLD = "89dfc3c0ae1307186c9fefd440cae69b2a85a24f"
"""The last commit whose snapshots are ``schema_version`` 1 (the next one, aae38ff, made them version 2)."""


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    return command_env({"RANK_PIPELINE_DATA_DIR": str(data_dir), **extra}, drop=("PYTHONPATH",))


cli = functools.partial(rank_pipeline, drop=("PYTHONPATH",), timeout=600)
"""Today's ``rank-pipeline *args`` with settings in the environment (:func:`support.rank_pipeline`: ``data_dir``,
``env`` added), this process's ``PYTHONPATH`` dropped as :func:`_env` drops it, killed past 600 s."""


def old_cli(code: Path, *args: str, data_dir: Path) -> subprocess.CompletedProcess:
    """The ``rank-pipeline`` of :data:`OLD` (its package and models in ``code``)."""
    return subprocess.run([sys.executable, "-m", "rank_pipeline.cli.main", *args], cwd=code,
                          env=_env(data_dir, PYTHONPATH=str(code)), capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def old_code(tmp_path_factory) -> Path:
    """The package and the models of :data:`OLD`, unpacked into a new folder."""
    dest = tmp_path_factory.mktemp("old") / "code"
    known = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{OLD}^{{commit}}"], capture_output=True)
    require(known.returncode == 0, f"the repository's history lacks {OLD[:7]} (a shallow clone?): the old "
                                   "version that writes the snapshots is taken from it")
    dest.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", OLD, "rank_pipeline", "dbt_like_sql"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def _rewrite_today(old: Path, new: Path, days: list) -> None:
    """Every committed snapshot of ``old`` for ``days`` written again into ``new`` by today's writer: the same
    rows (the columns both versions have, plain pyarrow) and each account's report."""
    for resource in ENDPOINTS:
        for day in days:
            folder = partition_dir(old, resource, day)
            manifest = SnapshotManifest.from_json((folder / "_manifest.json").read_text())
            rows = pa.concat_tables(pq.ParquetFile(folder / name).read().select(arrow_schema(resource).names)
                                    for name in manifest.files)
            writer = SnapshotWriter(new, resource, day)
            for account, report in manifest.accounts.items():
                writer.append_table(account, rows.filter(pc.equal(rows["account"], account)))
                writer.set_report(account, report)
            writer.commit()


def _raw_columns(warehouse: Path, table: str) -> list[str]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return [c for (c,) in con.execute("select column_name from information_schema.columns where "
                                          "table_schema = 'raw' and table_name = ? order by ordinal_position",
                                          [table]).fetchall()]


def _assert_built_in_two_steps(home: Path, relation: str, days: list) -> None:
    """The last run of the Dagster instance at ``home`` logged each of ``relation``'s two steps of a day and
    recorded ``build_steps`` 2 on its materialization of each day."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs(limit=1)
        messages = [record.user_message for record in instance.all_logs(run.run_id)]
        for number, day in enumerate(days, start=1):
            assert any(m.startswith(f"{relation}: full refresh, days {day} .. {day} built (step {number} of 2;")
                       for m in messages if m), (number, [m for m in messages if m and "full refresh" in m])
        key = dg.AssetKey(relation.split("."))
        events = [r.dagster_event for r in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
                  if r.dagster_event.asset_key == key]
        assert sorted((e.partition, e.materialization.metadata["build_steps"].value) for e in events) == [
            (day.isoformat(), 2) for day in days]  # one materialization per partition of the range


def test_snapshots_of_schema_version_1_rebuild_into_the_marts_of_todays_snapshots(tmp_path, old_code,
                                                                                published_marts):
    code = old_code
    history = tmp_path / "history"
    today = datetime.now(UTC).date()
    days = [today - timedelta(days=2), today - timedelta(days=1)]
    for day in days:
        done = old_cli(code, "extract", "--date", day.isoformat(), data_dir=history)
        assert done.returncode == 0, done.stdout + done.stderr
    # the old version wrote version 1: the spec's fields copied out of attributes into columns of their own
    for resource, copy in (("usage", "data_rows_remaining"), ("domains", "match_type"), ("keywords", "location_code")):
        folder = partition_dir(history / "snapshots", resource, days[0])
        manifest = json.loads((folder / "_manifest.json").read_text())
        assert manifest["schema_version"] == 1
        assert copy in pq.read_schema(folder / manifest["files"][0]).names, resource

    today_format = tmp_path / "today"
    _rewrite_today(history / "snapshots", today_format / "snapshots", days)
    mixed = tmp_path / "mixed"  # the first day as the old version wrote it, the second as today's
    _rewrite_today(history / "snapshots", mixed / "snapshots", days[1:])
    for resource in ENDPOINTS:
        old_day = partition_dir(history / "snapshots", resource, days[0])
        subprocess.run(["cp", "-r", str(old_day), str(partition_dir(mixed / "snapshots", resource, days[0]))],
                       check=True)

    marts = {}
    for folder in (history, today_format, mixed):
        # the mixed folder's incremental models are rebuilt a day at a time: the same marts as one build
        steps = {"RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS": "1"} if folder is mixed else {}
        rebuilt = cli("rebuild", data_dir=folder, env=steps)
        assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
        if steps:  # each step in the run's log, their number in the asset's metadata (the folder's Dagster)
            _assert_built_in_two_steps(folder / "dagster_home", "marts.fct_keyword_rankings_daily", days)
        assert "published" in rebuilt.stdout
        assert _raw_columns(folder / "warehouse.duckdb", "usage") == [*arrow_schema("usage").names, "loaded_at"]
        marts[folder.name] = published_marts(folder / "warehouse.duckdb")
    assert json.loads((partition_dir(today_format / "snapshots", "usage", days[0]) / "_manifest.json")
                      .read_text())["schema_version"] == 2
    with duckdb.connect(str(history / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("select count(*), count(position) from marts.fct_keyword_rankings_daily").fetchone()[1] > 0
        assert con.execute("select count(keywords_remaining) from staging.stg_usage").fetchone()[0] > 0
    assert_same_marts(marts["history"], marts["today"])
    assert_same_marts(marts["mixed"], marts["today"])


def test_a_warehouse_the_old_version_built_takes_the_next_day_from_todays_run(tmp_path, old_code):
    today = datetime.now(UTC).date()
    first, second = today - timedelta(days=2), today - timedelta(days=1)
    done = old_cli(old_code, "run", "--date", first.isoformat(), data_dir=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "data_rows_remaining" in _raw_columns(tmp_path / "warehouse.duckdb", "usage")  # the old raw table
    done = cli("run", "--date", second.isoformat(), data_dir=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for table in ENDPOINTS:
        assert _raw_columns(tmp_path / "warehouse.duckdb", table) == [*arrow_schema(table).names, "loaded_at"]
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        days = con.execute("select snapshot_date, count(position) from marts.fct_keyword_rankings_daily "
                           "group by 1 order by 1").fetchall()
        usage = con.execute("select snapshot_date, count(data_rows_remaining) from staging.stg_usage "
                            "group by 1 order by 1").fetchall()
    assert [d for d, _ in days] == [first, second] and all(n > 0 for _, n in days)
    assert [d for d, _ in usage] == [first, second] and all(n > 0 for _, n in usage)
