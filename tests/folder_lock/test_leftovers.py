"""rank_pipeline.folder_lock.leftovers against what the writers really leave: a snapshot writer and a publish killed
mid-way (their own names, not names written by hand), removed or restored by the next holder of the writer lock."""

from __future__ import annotations

import os
from datetime import date

import pytest

from rank_pipeline.folder_lock import hold_writer, remove_leftovers
from rank_pipeline.settings import DataPaths
from rank_pipeline.snapshots.writer import SnapshotWriter
from rank_pipeline.warehouse import Warehouse

DAY = date(2026, 11, 20)


class _Killed(BaseException):
    """Stands for the process dying: no ``except Exception`` or ``except OSError`` of the writers catches it."""


def _commit(root, marker: str, *, killed_at_replace: int | None = None, monkeypatch=None) -> None:
    writer = SnapshotWriter(root, "keywords", DAY)
    writer.write("acme", [{"id": "kw-1", "type": "keyword", "attributes": {"keyword": marker}}], parent_id="d-1")
    writer.set_report("acme", {"complete": True, "expected": 1, "delivered": 1})
    if killed_at_replace is None:
        writer.commit()
        return
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append(src)
        if len(calls) == killed_at_replace:
            raise _Killed
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(_Killed):
        writer.commit()
    monkeypatch.setattr(os, "replace", real)


def test_a_writer_killed_between_the_commits_two_renames_leaves_what_the_next_holder_restores(tmp_path, monkeypatch):
    paths = DataPaths(tmp_path)
    root = paths.snapshot_store_uri
    _commit(root, "first")
    # the commit's renames: the manifest into the staging folder, the day aside, the staging folder into place
    _commit(root, "second", killed_at_replace=3, monkeypatch=monkeypatch)
    resource_dir = root / "keywords"
    left = sorted(p.name for p in resource_dir.iterdir())
    assert [name.split("=")[0] for name in left] == [".replaced-snapshot_date", ".staging-snapshot_date"], left

    with hold_writer(tmp_path) as lock:
        assert not lock.reentered

    assert sorted(p.name for p in resource_dir.iterdir()) == ["snapshot_date=2026-11-20"]
    assert b"first" in b"".join(p.read_bytes() for p in (resource_dir / "snapshot_date=2026-11-20").iterdir())


def test_a_writer_that_died_before_its_commit_leaves_a_staging_folder_that_is_removed(tmp_path):
    root = DataPaths(tmp_path).snapshot_store_uri
    SnapshotWriter(root, "keywords", DAY)  # staged, never committed nor aborted: its process died
    assert [p.name.split("=")[0] for p in (root / "keywords").iterdir()] == [".staging-snapshot_date"]
    handled = remove_leftovers(tmp_path)
    assert [p.name.split("=")[0] for p in handled] == [".staging-snapshot_date"]
    assert list((root / "keywords").iterdir()) == []


def test_a_publish_killed_after_its_copy_leaves_a_copy_that_is_removed(tmp_path, monkeypatch):
    paths = DataPaths(tmp_path)
    warehouse = Warehouse(paths.build_db, paths.published_db)
    warehouse.connect().close()
    warehouse.publish()
    before = paths.published_db.read_bytes()
    real = os.replace

    def replace(src, dst):
        if os.fspath(dst) == os.fspath(paths.published_db):
            raise _Killed
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(_Killed):
        warehouse.publish()
    monkeypatch.setattr(os, "replace", real)
    copies = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp"))
    assert len(copies) == 1 and copies[0].startswith(".warehouse.duckdb."), copies

    assert [p.name for p in remove_leftovers(tmp_path)] == copies
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
    assert paths.published_db.read_bytes() == before
