"""rank_pipeline.folder_lock: OS-released locks and the removal of dead runs' leftovers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from rank_pipeline.folder_lock import DataFolderLock, LockTimeout, remove_leftovers, writer_lock
from rank_pipeline.settings import ConfigurationError, lock_timeout_from_env

HOLD = textwrap.dedent("""
    import sys, time
    from rank_pipeline.folder_lock import writer_lock
    with writer_lock(sys.argv[1], holder="a test run"):
        print("held", flush=True)
        time.sleep(600)
""")


def _holder(data_dir) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(data_dir)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_lock_held_by_a_killed_process_is_free_at_once(tmp_path):
    proc = _holder(tmp_path)
    try:
        with pytest.raises(LockTimeout, match=r"in use by pid \d+ .*\(a test run\)"):
            writer_lock(tmp_path, timeout_s=0).acquire()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    with writer_lock(tmp_path, timeout_s=0):
        pass


def test_a_waiter_says_what_it_waits_for_then_gives_up_in_one_line(tmp_path):
    proc = _holder(tmp_path)
    notes: list[str] = []
    try:
        t0 = time.monotonic()
        with pytest.raises(LockTimeout) as info:
            writer_lock(tmp_path, timeout_s=0.5, log=notes.append).acquire()
        assert time.monotonic() - t0 >= 0.5
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert len(notes) == 1 and "waiting for the data folder's writer lock" in notes[0]
    assert f"pid {proc.pid}" in notes[0] and "RANK_PIPELINE_LOCK_TIMEOUT_S" in notes[0]
    message = str(info.value)
    assert "\n" not in message and message.startswith("gave up after 0.5 s waiting for")
    assert "RANK_PIPELINE_LOCK_TIMEOUT_S" in message


def test_a_waiter_proceeds_when_the_holder_releases(tmp_path):
    first = writer_lock(tmp_path).acquire()
    acquired = threading.Event()

    def wait() -> None:
        # another open file description: flock conflicts even within one process
        lock = DataFolderLock(tmp_path, "writer", timeout_s=30)
        with lock:
            acquired.set()

    # the waiter runs in another thread, which does not share the holder's re-entrancy
    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.3)
    assert not acquired.is_set()
    first.release()
    thread.join(10)
    assert acquired.is_set()
    assert (tmp_path / ".locks" / "writer.lock").read_text() == "", "the holder line is cleared on release"


def test_the_lock_is_reentrant_for_the_holding_thread(tmp_path):
    with writer_lock(tmp_path, timeout_s=0), writer_lock(tmp_path, timeout_s=0):
        pass
    with writer_lock(tmp_path, timeout_s=0):
        pass


def test_timeout_setting_is_validated():
    assert lock_timeout_from_env({}) == 3600
    assert lock_timeout_from_env({"RANK_PIPELINE_LOCK_TIMEOUT_S": "0"}) == 0
    for bad in ("nan", "-1", "soon", "inf"):
        with pytest.raises(ConfigurationError, match="RANK_PIPELINE_LOCK_TIMEOUT_S"):
            lock_timeout_from_env({"RANK_PIPELINE_LOCK_TIMEOUT_S": bad})


def test_leftovers_are_removed_and_an_interrupted_replacement_is_restored(tmp_path):
    keywords = tmp_path / "snapshots" / "keywords"
    kept = keywords / "snapshot_date=2026-11-19"
    kept.mkdir(parents=True)
    (kept / "_manifest.json").write_text("{}")
    staging = keywords / ".staging-snapshot_date=2026-11-20-0a1b2c3d"
    staging.mkdir()
    (staging / "part-acme-0000.parquet").write_bytes(b"partial")
    # a kill between the two renames of a commit: the day's folder is gone, its old copy remains
    replaced = keywords / ".replaced-snapshot_date=2026-11-18-deadbeef"
    replaced.mkdir()
    (replaced / "_manifest.json").write_text('{"old": true}')
    # a replacement that completed but whose old copy was not yet removed
    stale = keywords / ".replaced-snapshot_date=2026-11-19-cafecafe"
    stale.mkdir()
    tmp_db = tmp_path / ".warehouse.duckdb.0a1b2c3d.tmp"
    tmp_db.write_bytes(b"x" * 1000)
    published = tmp_path / "warehouse.duckdb"
    published.write_bytes(b"db")
    notes: list[str] = []

    with writer_lock(tmp_path):
        handled = remove_leftovers(tmp_path, log=notes.append)

    assert {p.name for p in handled} == {staging.name, replaced.name, stale.name, tmp_db.name}
    assert sorted(p.name for p in keywords.iterdir()) == ["snapshot_date=2026-11-18", "snapshot_date=2026-11-19"]
    assert (keywords / "snapshot_date=2026-11-18" / "_manifest.json").read_text() == '{"old": true}'
    assert (kept / "_manifest.json").read_text() == "{}"
    assert not tmp_db.exists() and published.read_bytes() == b"db"
    assert any("restored" in n for n in notes) and any("leftover" in n for n in notes)
    assert remove_leftovers(tmp_path) == []
