"""The one module using Dagster's private API (``rank_pipeline.defs.sqlite_storage``) and what it relies on.

Fails with a line naming the moved name when a Dagster upgrade moves what the pooled SQLite event log
uses, and when any other file of the project imports ``dagster._core``.
"""

from __future__ import annotations

import re
from pathlib import Path

import dagster as dg

from rank_pipeline.defs import sqlite_storage
from rank_pipeline.defs.instance import instance_config

ROOT = Path(__file__).resolve().parents[2]
CONFINED = ROOT / "rank_pipeline" / "defs" / "sqlite_storage.py"


def test_the_private_api_the_pooled_event_log_uses_is_still_there(tmp_path):
    problems = sqlite_storage.check_private_api(tmp_path)
    assert problems == [], "\n".join(problems)


def test_a_moved_private_name_is_named_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delattr(sqlite_storage.SqliteEventLogStorage, "conn_string_for_shard")
    (problem,) = sqlite_storage.check_private_api(tmp_path)
    assert problem == (f"Dagster {dg.__version__}: SqliteEventLogStorage.conn_string_for_shard is gone "
                       "(SqliteEventLogStorage (methods)); PooledSqliteEventLogStorage in "
                       "rank_pipeline/defs/sqlite_storage.py relies on it")


def test_no_other_file_of_the_project_uses_dagster_private_modules():
    pattern = re.compile(r"dagster\._core")
    offenders = []
    for folder in ("rank_pipeline", "tests", "benchmarks", "dashboards"):
        for path in (ROOT / folder).rglob("*.py"):
            if path not in (CONFINED, Path(__file__).resolve()) and ".work" not in path.parts and pattern.search(path.read_text()):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == [], f"import Dagster's private API only in {CONFINED.relative_to(ROOT)}: {offenders}"


def test_the_sqlite_instance_opens_and_records_a_run_through_the_pooled_event_log(tmp_path):
    (tmp_path / "dagster.yaml").write_text(instance_config(tmp_path))

    @dg.asset
    def one() -> int:
        return 1

    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert isinstance(instance.event_log_storage, sqlite_storage.PooledSqliteEventLogStorage)
        result = dg.materialize([one], instance=instance)
        assert result.success
        assert instance.get_latest_materialization_event(dg.AssetKey("one")) is not None
    assert (tmp_path / "history" / "runs.db").exists() and (tmp_path / "history" / "runs" / "index.db").exists()
