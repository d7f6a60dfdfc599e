"""The days the raw tables hold (``<data folder>/raw_days.json``, docs/concepts/shape-check.md): an engine that
reads the snapshots in place is handed those days only, so a committed day that failed its shape check (never
loaded) is never read; the ledger follows every load on every engine, and DuckDB's raw tables are what they were."""

from __future__ import annotations

import shutil
from datetime import timedelta

import duckdb
import pytest

from rank_pipeline.settings import DataPaths, EngineSettings
from rank_pipeline.warehouse.engines import load_partitions, open_engine, reload_raw
from rank_pipeline.warehouse.errors import LoadError
from rank_pipeline.warehouse.raw_days import RAW_DAYS_FILE, RawDays
from rank_pipeline.warehouse.raw_load import load_partition, load_raw, restore_raw
from tests.warehouse.test_warehouse import DAY1, write_day

DAY2, DAY3 = DAY1 + timedelta(days=1), DAY1 + timedelta(days=2)


class InPlace:
    """An engine that reads the snapshots in place: it records the days each load hands it."""

    name = "in_place"
    reads_raw_in_place = True
    raw_loaded = False

    def __init__(self, ledger: RawDays | None = None):
        self.handed: list[set] = []
        self.raw_ledger = ledger

    def load_raw(self, tables, first, last, *, count=True):
        self.handed.append({d.day for t in tables for d in t.days})
        return {}


def test_an_engine_reading_in_place_is_handed_only_the_days_loaded(tmp_path):
    root, ledger = tmp_path / "snapshots", RawDays.of(tmp_path)
    engine = InPlace(ledger)
    write_day(root, DAY1)
    load_raw(engine, root, None, None)  # a full refresh: every committed day, each checked
    assert engine.handed[-1] == {DAY1} and ledger.read() == {DAY1}
    write_day(root, DAY2)  # committed, but its shape check failed: never loaded
    write_day(root, DAY3)
    load_raw(engine, root, DAY3, DAY3, strict=True)  # the next daily run
    assert engine.handed[-1] == {DAY1, DAY3} and ledger.read() == {DAY1, DAY3}
    load_raw(engine, root, DAY1, DAY1)  # a rebuild of day 1
    assert engine.handed[-1] == {DAY1, DAY3} and ledger.read() == {DAY1, DAY3}
    written = (tmp_path / RAW_DAYS_FILE).stat().st_mtime_ns
    restore_raw(engine, root)  # a new session: the days held, nothing recorded
    assert engine.handed[-1] == {DAY1, DAY3} and (tmp_path / RAW_DAYS_FILE).stat().st_mtime_ns == written
    load_raw(engine, root, DAY2, DAY3)  # the contract fixed, the range rebuilt
    assert engine.handed[-1] == {DAY1, DAY2, DAY3} and ledger.read() == {DAY1, DAY2, DAY3}
    for folder in root.glob(f"*/snapshot_date={DAY3.isoformat()}"):
        shutil.rmtree(folder)
    load_raw(engine, root, DAY3, DAY3)  # a range whose day has no snapshot any more
    assert engine.handed[-1] == {DAY1, DAY2} and ledger.read() == {DAY1, DAY2}


def test_a_folder_without_the_ledger_reads_every_committed_day_until_a_load_writes_it(tmp_path, caplog):
    root, ledger = tmp_path / "snapshots", RawDays.of(tmp_path)
    engine = InPlace(ledger)
    for day in (DAY1, DAY2):
        write_day(root, day)
    restore_raw(engine, root)
    assert engine.handed[-1] == {DAY1, DAY2} and ledger.read() is None
    write_day(root, DAY3)
    load_raw(engine, root, DAY3, DAY3, strict=True)
    assert engine.handed[-1] == {DAY1, DAY2, DAY3} == ledger.read()
    (tmp_path / RAW_DAYS_FILE).write_text("{not json")  # damaged: read as absent, rewritten by the next load
    assert ledger.read() is None and RAW_DAYS_FILE in caplog.text
    load_raw(engine, root, DAY1, DAY1)
    assert ledger.read() == {DAY1, DAY2, DAY3}
    # an engine made outside open_engine records nothing and reads every committed day, as before the ledger
    engine.raw_ledger = None
    load_raw(engine, root, DAY3, DAY3, strict=True)
    assert engine.handed[-1] == {DAY1, DAY2, DAY3}


def test_a_failed_load_leaves_the_ledger_as_it_was(tmp_path):
    root, ledger = tmp_path / "snapshots", RawDays.of(tmp_path)
    write_day(root, DAY1)
    load_raw(InPlace(ledger), root, None, None)
    write_day(root, DAY2)
    next(p for p in (root / "keywords" / f"snapshot_date={DAY2.isoformat()}").iterdir()
         if p.suffix == ".parquet").write_bytes(b"not parquet")
    with duckdb.connect(":memory:") as con:
        from rank_pipeline.transform.duckdb_engine import DuckDBEngine

        duck = DuckDBEngine(con)
        duck.raw_ledger = ledger
        with pytest.raises(LoadError):
            load_raw(duck, root, DAY2, DAY2, strict=True)
    assert ledger.read() == {DAY1}


def test_duckdb_records_its_loads_and_keeps_its_raw_tables_as_before(tmp_path):
    """On DuckDB the ledger is only written (for a folder later read by an engine that reads in place): the raw
    tables hold what they held before it, and the ledger holds the same days."""
    paths = DataPaths(tmp_path)
    root = paths.snapshot_store_uri
    with open_engine(EngineSettings(), paths) as engine:
        assert engine.raw_ledger == RawDays.of(tmp_path)
        write_day(root, DAY1)
        load_partitions(engine, root, DAY1, DAY1)
        for day in (DAY2, DAY3):  # day 2 failed its check: never loaded
            write_day(root, day)
        load_partitions(engine, root, DAY3, DAY3)
        reload_raw(engine, root, DAY1, DAY1)
    assert engine.raw_ledger is None  # recorded while open only
    with duckdb.connect(str(paths.build_db), read_only=True) as con:
        held = {d for (d,) in con.execute("select distinct snapshot_date from raw.keywords").fetchall()}
    assert held == {DAY1, DAY3} == RawDays.of(tmp_path).read()


def test_a_duckdb_folder_from_before_the_ledger_records_the_days_its_raw_tables_hold(tmp_path):
    """Without the ledger, DuckDB's build file tells the days held, so the folder switched to an engine that reads
    in place is handed them, never a committed day the raw load refused."""
    paths = DataPaths(tmp_path)
    root = paths.snapshot_store_uri
    for day in (DAY1, DAY2, DAY3):
        write_day(root, day)
    with duckdb.connect(str(paths.build_db)) as con:  # loaded before the ledger existed; day 2 failed its check
        for day in (DAY1, DAY3):
            load_partition(con, root, day)
    with open_engine(EngineSettings(), paths) as engine:
        assert engine.raw_ledger.read() is None and engine.raw_ledger.held() == {DAY1, DAY3}
        reload_raw(engine, root, DAY1, DAY1)
    assert RawDays.of(tmp_path).read() == {DAY1, DAY3}
    engine = InPlace(RawDays.of(tmp_path))
    restore_raw(engine, root)
    assert engine.handed == [{DAY1, DAY3}]
