"""The one module using Dagster's private API (``rank_pipeline.defs.sqlite_storage``) and what it relies on.

Fails with a line naming the moved name when a Dagster upgrade moves what the pooled SQLite event log
uses, and when any other file of the project imports ``dagster._core``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import dagster as dg
import pytest

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


DAY = "2026-11-01"
_daily = dg.DailyPartitionsDefinition(start_date="2026-01-01")


@dg.asset(partitions_def=_daily, check_specs=[dg.AssetCheckSpec("positive", asset="upstream", blocking=True),
                                              dg.AssetCheckSpec("small", asset="upstream")])
def upstream():
    yield dg.MaterializeResult(metadata={"rows": 3})
    yield dg.AssetCheckResult(check_name="positive", passed=True)
    yield dg.AssetCheckResult(check_name="small", passed=False, severity=dg.AssetCheckSeverity.WARN)


@dg.asset(partitions_def=_daily, deps=[upstream], check_specs=[dg.AssetCheckSpec("unique", asset="downstream")])
def downstream():
    yield dg.MaterializeResult(metadata={"rows": 2})
    yield dg.AssetCheckResult(check_name="unique", passed=True)


@dg.asset(check_specs=[dg.AssetCheckSpec("fresh", asset="whole", blocking=True)])
def whole(context):
    context.log.info("a log line of the step")
    yield dg.MaterializeResult()
    yield dg.AssetCheckResult(check_name="fresh", passed=False)


def _run_logs(day: str | None = DAY, last: str | None = None) -> list:
    """The event log of one run of a small daily job whose assets report asset checks (``day`` None: of an
    unpartitioned asset whose blocking check fails; ``last``: a run of the partitions ``day .. last``, as a
    single-run backfill launches it)."""
    with dg.DagsterInstance.ephemeral() as instance:
        if day is None:
            result = dg.materialize([whole], instance=instance, raise_on_error=False)
        elif last is not None:
            result = dg.materialize([upstream, downstream], instance=instance, tags={
                "dagster/asset_partition_range_start": day, "dagster/asset_partition_range_end": last})
        else:
            result = dg.materialize([upstream, downstream], partition_key=day, instance=instance)
        return list(instance.all_logs(result.run_id))


def _store(storage, logs: list) -> None:
    """Store a run's events as Dagster does with ``DAGSTER_EVENT_BATCH_SIZE`` set: the planned events in one
    batch, the materializations of one output (one per partition of the run) in one batch, the others one by
    one."""
    planned = {dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED, dg.DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED}
    storage.store_event_batch([e for e in logs if e.dagster_event_type in planned])
    batch: list = []
    for entry in [e for e in logs if e.dagster_event_type not in planned]:
        if batch and (entry.dagster_event_type != dg.DagsterEventType.ASSET_MATERIALIZATION
                      or entry.dagster_event.asset_key != batch[0].dagster_event.asset_key):
            storage.store_event_batch(batch)
            batch = []
        if entry.dagster_event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
            batch.append(entry)
        else:
            storage.store_event(entry)
    if batch:
        storage.store_event_batch(batch)


def _dump(folder: Path) -> dict:
    """Every row of every table of every SQLite file in ``folder``, without the columns the database
    fills with the time of writing."""
    import sqlite3

    out = {}
    for path in sorted(folder.glob("*.db")):
        with sqlite3.connect(path) as con:
            for (table,) in con.execute("select name from sqlite_master where type = 'table' order by name"):
                columns = [f'"{c[1]}"' for c in con.execute(f'pragma table_info("{table}")')
                           if c[1] not in ("create_timestamp", "update_timestamp", "migration_completed")]
                out[path.name, table] = con.execute(f'select {", ".join(columns)} from "{table}" order by 1').fetchall()
    return out


def test_the_pooled_event_log_stores_runs_as_dagsters_own_does(tmp_path):
    runs = [_run_logs(), _run_logs(None), _run_logs("2026-11-02"), _run_logs("2026-11-03", "2026-11-05")]
    kinds = {e.dagster_event_type for logs in runs for e in logs}
    assert kinds >= {dg.DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED, dg.DagsterEventType.ASSET_CHECK_EVALUATION,
                     dg.DagsterEventType.STEP_FAILURE, None}  # None: a log line
    pooled = sqlite_storage.PooledSqliteEventLogStorage(str(tmp_path / "pooled"))
    stock = sqlite_storage.SqliteEventLogStorage(str(tmp_path / "stock"))
    try:
        for logs in runs:
            _store(pooled, logs)
            for entry in logs:
                stock.store_event(entry)
    finally:
        pooled.dispose()
        stock.dispose()
    pooled_rows, stock_rows = _dump(tmp_path / "pooled"), _dump(tmp_path / "stock")
    assert pooled_rows == stock_rows
    checks = pooled_rows["index.db", "asset_check_executions"]
    # the partitioned runs' results are rows of their own (Dagster's planned rows name the partitions, the
    # unpartitioned checks' results do not); the unpartitioned run's result replaced its planned row
    assert sorted(r[5] for r in checks if r[2] == "fresh") == ["FAILED"]
    assert sorted(r[5] for r in checks if r[2] == "small") == ["FAILED"] * 3 + ["PLANNED"] * 5
    ranged = [r for r in pooled_rows["index.db", "event_logs"] if r[1] == runs[3][0].run_id and r[3] ==
              "ASSET_MATERIALIZATION"]
    assert sorted(r[7] for r in ranged) == ["2026-11-03", "2026-11-03", "2026-11-04", "2026-11-04", "2026-11-05",
                                            "2026-11-05"]


def test_a_batch_that_fails_leaves_nothing_stored(tmp_path):
    logs = _run_logs()
    storage = sqlite_storage.PooledSqliteEventLogStorage(str(tmp_path))
    try:
        with pytest.raises(Exception):  # noqa: B017 - whatever Dagster raises for a non-event
            storage.store_event_batch([*logs[:5], "not an event"])
        assert storage.get_logs_for_run(logs[0].run_id) == []
        storage.store_event_batch(logs[:5])
        assert len(storage.get_logs_for_run(logs[0].run_id)) == 5
    finally:
        storage.dispose()


def test_the_newest_materialization_is_dagsters_answer_after_new_runs_wipes_and_deletions(tmp_path, monkeypatch):
    asked = []
    stock_fetch = sqlite_storage.SqliteEventLogStorage.fetch_materializations

    def counting_fetch(self, *args, **kwargs):
        asked.append(args)
        return stock_fetch(self, *args, **kwargs)

    storage = sqlite_storage.PooledSqliteEventLogStorage(str(tmp_path))
    monkeypatch.setattr(sqlite_storage.SqliteEventLogStorage, "fetch_materializations", counting_fetch)
    filters = [dg.AssetRecordsFilter(asset_key=dg.AssetKey(name), asset_partitions=[DAY])
               for name in ("upstream", "downstream")]

    def same_as_dagster() -> None:
        for records_filter in filters:
            for _ in range(3):
                assert storage.fetch_materializations(records_filter, limit=1) == \
                    stock_fetch(storage, records_filter, limit=1)

    try:
        first, second = _run_logs(), _run_logs()
        _store(storage, first)
        same_as_dagster()
        assert len(asked) == 2  # each asked of Dagster once, then remembered
        _store(storage, second)  # a newer materialization of the same partitions
        same_as_dagster()
        assert storage.fetch_materializations(filters[0], limit=1).records[0].run_id == second[0].run_id
        storage.delete_events(second[0].run_id)  # the newest gone: the older one again
        same_as_dagster()
        assert storage.fetch_materializations(filters[0], limit=1).records[0].run_id == first[0].run_id
        storage.wipe_asset(dg.AssetKey("upstream"))
        same_as_dagster()
        assert storage.fetch_materializations(filters[0], limit=1).records == []
        other_day = dg.AssetRecordsFilter(asset_key=dg.AssetKey("upstream"), asset_partitions=["2026-11-02"])
        assert storage.fetch_materializations(other_day, limit=1) == stock_fetch(storage, other_day, limit=1)
    finally:
        storage.dispose()


def test_opening_the_pooled_event_log_lets_dagster_batch_events(tmp_path, monkeypatch):
    monkeypatch.delenv(sqlite_storage.EVENT_BATCH_SIZE_ENV, raising=False)
    sqlite_storage.PooledSqliteEventLogStorage(str(tmp_path)).dispose()
    assert os.environ[sqlite_storage.EVENT_BATCH_SIZE_ENV] == str(sqlite_storage.EVENT_BATCH_SIZE)
    monkeypatch.setenv(sqlite_storage.EVENT_BATCH_SIZE_ENV, "7")
    sqlite_storage.PooledSqliteEventLogStorage(str(tmp_path)).dispose()
    assert os.environ[sqlite_storage.EVENT_BATCH_SIZE_ENV] == "7"


def test_a_changed_record_layout_is_named_in_one_line(tmp_path, monkeypatch):
    """Should an upgrade serialize an ``EventLogRecord`` otherwise, the asset entries go Dagster's own way
    (:func:`sqlite_storage._record_template` finds no layout) and the upgrade check says so."""
    stock = dg.serialize_value

    def storage_id_first(value):  # the record's members in another order
        if isinstance(value, dg.EventLogRecord):
            return f'{{"storage_id": {value.storage_id}, "event_log_entry": {stock(value.event_log_entry)}}}'
        return stock(value)

    monkeypatch.setattr(dg, "serialize_value", storage_id_first)
    sqlite_storage._record_template.cache_clear()
    try:
        assert sqlite_storage._record_template() is None
        (problem,) = sqlite_storage.check_private_api(tmp_path)
        assert problem.startswith(f"Dagster {dg.__version__}: an EventLogRecord's JSON is no longer")
    finally:
        sqlite_storage._record_template.cache_clear()
