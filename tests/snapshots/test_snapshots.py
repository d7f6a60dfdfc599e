"""Snapshot writer and reader (docs/concepts/completeness.md, "Snapshots")."""

import json
import subprocess
import sys
from datetime import date

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rank_pipeline.snapshots.reader import list_snapshot_dates, read_manifest, read_snapshot
from rank_pipeline.snapshots.schema import SnapshotError, arrow_schema, partition_dir
from rank_pipeline.snapshots.writer import SnapshotWriter

DAY = date(2026, 11, 21)


def _domain(i):
    return {
        "id": f"d-{i}",
        "type": "domain",
        "attributes": {"domain": f"ex{i}.com", "host": f"www.ex{i}.com", "matchType": "any",
                       "projectName": f"P{i}", "unshownField": {"nested": i}},
    }


def test_write_commit_read_roundtrip_keeps_full_attributes(tmp_path):
    w = SnapshotWriter(tmp_path, "domains", DAY, row_group_size=3)
    w.write("acme", [_domain(i) for i in range(7)])
    w.write("globex", [_domain(100)])
    w.set_report("acme", {"complete": True, "expected": 7, "delivered": 7})
    manifest = w.commit()
    table = read_snapshot(tmp_path, "domains", DAY)
    assert table.num_rows == 8 == manifest.row_count
    assert table.schema == arrow_schema("domains")  # ids, the parent, the attributes JSON: no field copied out
    rows = {r["id"]: r for r in table.to_pylist()}
    assert json.loads(rows["d-3"]["attributes"]) == _domain(3)["attributes"]
    assert '"unshownField":{"nested":3}' in rows["d-3"]["attributes"]
    assert rows["d-100"]["account"] == "globex"
    assert manifest.accounts["acme"].rows == 7 and manifest.complete is True
    # row groups bound memory: 7 acme rows at 3 per group -> at least 3 row groups
    acme_file = partition_dir(tmp_path, "domains", DAY) / manifest.files[0]
    assert pq.ParquetFile(acme_file).num_row_groups >= 3
    assert list_snapshot_dates(tmp_path, "domains") == [DAY]


def test_pages_that_do_not_end_on_a_row_group_s_edge_still_make_whole_row_groups(tmp_path):
    """Pages of 7 rows into row groups of 10: every group of the file holds 10 rows but the last, and the rows
    keep the pages' order (before, each flush wrote a full group and a small one: 10, 4, 10, 1, ...)."""
    w = SnapshotWriter(tmp_path, "domains", DAY, row_group_size=10)
    for page in range(5):
        w.write("acme", [_domain(page * 7 + i) for i in range(7)])
    manifest = w.commit()
    meta = pq.ParquetFile(partition_dir(tmp_path, "domains", DAY) / manifest.files[0]).metadata
    assert [meta.row_group(g).num_rows for g in range(meta.num_row_groups)] == [10, 10, 10, 5]
    assert read_snapshot(tmp_path, "domains", DAY).column("id").to_pylist() == [f"d-{i}" for i in range(35)]


def test_a_version_1_snapshot_reads_as_the_current_schema(tmp_path):
    """Version 1 files hold flattened copies of fields after the common columns: read, they are left out."""
    w = SnapshotWriter(tmp_path, "domains", DAY)
    w.write("acme", [_domain(i) for i in range(2)])
    manifest = w.commit()
    folder = partition_dir(tmp_path, "domains", DAY)
    current = pq.read_table(folder / manifest.files[0])
    old = current.append_column("match_type", pa.array(["any", "any"])).append_column("host", pa.array(["a", "b"]))
    pq.write_table(old, folder / manifest.files[0])
    (folder / "_manifest.json").write_text(json.dumps({**json.loads(manifest.to_json()), "schema_version": 1}))
    assert read_manifest(tmp_path, "domains", DAY).schema_version == 1
    assert read_snapshot(tmp_path, "domains", DAY) == current


def test_a_snapshot_of_a_later_version_is_refused_naming_it(tmp_path):
    w = SnapshotWriter(tmp_path, "tags", DAY)
    w.write("acme", [])
    manifest = w.commit()
    folder = partition_dir(tmp_path, "tags", DAY)
    (folder / "_manifest.json").write_text(json.dumps({**json.loads(manifest.to_json()), "schema_version": 3}))
    with pytest.raises(SnapshotError, match=r"schema_version 3 is not one this rank-pipeline reads \(1, 2\)"):
        read_snapshot(tmp_path, "tags", DAY)


def test_abort_leaves_previous_snapshot_intact(tmp_path):
    first = SnapshotWriter(tmp_path, "domains", DAY)
    first.write("acme", [_domain(1)])
    first.commit()
    second = SnapshotWriter(tmp_path, "domains", DAY)
    second.write("acme", [_domain(2), _domain(3)])
    second.abort()
    assert [r["id"] for r in read_snapshot(tmp_path, "domains", DAY).to_pylist()] == ["d-1"]
    assert not [p for p in (tmp_path / "domains").iterdir() if p.name.startswith(".")]


def test_recommit_same_day_replaces_whole_snapshot(tmp_path):
    for ids in ([1, 2, 3], [4]):
        w = SnapshotWriter(tmp_path, "domains", DAY)
        w.write("acme", [_domain(i) for i in ids])
        w.commit()
    assert [r["id"] for r in read_snapshot(tmp_path, "domains", DAY).to_pylist()] == ["d-4"]


def test_incomplete_account_marks_manifest_incomplete(tmp_path):
    w = SnapshotWriter(tmp_path, "keywords", DAY)
    w.write("acme", [{"id": "k1", "type": "keyword", "attributes": {"location": {"code": "2840"}}}], parent_id="d-1")
    w.set_report("acme", {"complete": False, "expected": 2, "delivered": 1})
    w.commit()
    manifest = read_manifest(tmp_path, "keywords", DAY)
    assert manifest.complete is False
    row = read_snapshot(tmp_path, "keywords", DAY).to_pylist()[0]
    assert json.loads(row["attributes"]) == {"location": {"code": "2840"}} and row["parent_id"] == "d-1"


def test_account_without_records_still_has_a_file(tmp_path):
    w = SnapshotWriter(tmp_path, "tags", DAY)
    w.set_report("acme", {"complete": True, "expected": 0, "delivered": 0})
    manifest = w.commit()
    assert manifest.files == ["part-acme-0000.parquet"]
    assert read_snapshot(tmp_path, "tags", DAY).num_rows == 0
    path = partition_dir(tmp_path, "tags", DAY) / manifest.files[0]
    assert pq.read_schema(path).remove_metadata() == arrow_schema("tags")  # readers see the columns
    described = duckdb.sql(f"describe select * from read_parquet('{path}')").fetchall()
    assert [row[0] for row in described] == arrow_schema("tags").names
    assert duckdb.sql(f"select count(*) from read_parquet('{path}')").fetchall() == [(0,)]


def test_empty_tables_are_made_without_importing_pandas(tmp_path):
    """A run never needs pandas, and pyarrow's ``Schema.empty_table`` imports it (about 0.3 CPU-seconds): an
    account without records written, the raw table created (``raw_columns``) and an empty snapshot read, in a fresh
    interpreter as a run's process is, leave pandas unimported, and each gives the snapshot's columns."""
    script = (
        "import json, sys; from datetime import date; from pathlib import Path\n"
        "from rank_pipeline.snapshots.reader import read_snapshot\n"
        "from rank_pipeline.snapshots.writer import SnapshotWriter\n"
        "from rank_pipeline.warehouse.raw_load import raw_columns\n"
        f"root, day = Path({str(tmp_path)!r}), date(2026, 11, 21)\n"
        "w = SnapshotWriter(root, 'tags', day)\n"
        "w.write('globex', [{'id': 't-1', 'type': 'tag', 'attributes': {'name': 'x'}}])\n"
        "w.set_report('acme', {'complete': True, 'expected': 0, 'delivered': 0})\n"
        "w.commit()\n"
        "SnapshotWriter(root, 'usage', day).commit()\n"
        "print(json.dumps({'raw': [c for c, _ in raw_columns('tags')], 'read': read_snapshot(root, 'usage', day)"
        ".schema.names, 'pandas': 'pandas' in sys.modules}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["pandas"] is False
    assert seen["raw"] == [*arrow_schema("tags").names, "loaded_at"]
    assert seen["read"] == arrow_schema("usage").names
    assert read_snapshot(tmp_path, "tags", DAY).num_rows == 1
    assert read_snapshot(tmp_path, "usage", DAY).num_rows == 0


def test_bad_input_is_a_clear_error(tmp_path):
    with pytest.raises(SnapshotError, match="unknown resource"):
        SnapshotWriter(tmp_path, "serps", DAY)
    w = SnapshotWriter(tmp_path, "tags", DAY)
    with pytest.raises(SnapshotError, match="account name"):
        w.write("../etc", [])
    with pytest.raises(SnapshotError, match="extract that day first"):
        read_manifest(tmp_path, "tags", date(2020, 1, 1))


def test_excluded_ids_are_dropped_at_commit_across_row_groups_and_accounts(tmp_path):
    from datetime import date as _date

    from rank_pipeline.snapshots.reader import read_snapshot
    from rank_pipeline.snapshots.writer import SnapshotWriter

    day = _date(2026, 11, 21)
    writer = SnapshotWriter(tmp_path, "keywords", day, row_group_size=3)
    rows = [{"id": f"k{i}", "type": "keyword", "attributes": {}} for i in range(10)]
    writer.write("acme", rows, parent_id="d1")
    writer.write("acme", rows[:2], parent_id="d2")  # same ids under another parent stay
    writer.write("globex", rows, parent_id="d1")
    writer.exclude("acme", ["k1", "k7"], parent_id="d1")
    writer.set_report("acme", {"complete": True})
    manifest = writer.commit()
    table = read_snapshot(tmp_path, "keywords", day).to_pylist()
    acme = sorted((r["parent_id"], r["id"]) for r in table if r["account"] == "acme")
    assert acme == sorted([("d1", f"k{i}") for i in range(10) if i not in (1, 7)] + [("d2", "k0"), ("d2", "k1")])
    assert sum(r["account"] == "globex" for r in table) == 10
    assert manifest.accounts["acme"].rows == 10 and manifest.row_count == 20


def test_every_snapshot_file_keeps_statistics_on_all_columns_but_the_attributes(tmp_path):
    # the writer's three files: streamed row groups, an account's empty file (no row group), a file filtered at commit
    writer = SnapshotWriter(tmp_path, "keywords", DAY, row_group_size=3)
    rows = [{"id": f"k{i}", "type": "keyword", "attributes": {"keyword": f"kw {i}"}} for i in range(7)]
    writer.write("acme", rows, parent_id="d1")
    writer.write("globex", rows, parent_id="d1")
    writer.write("initech", [], parent_id="d1")
    writer.exclude("globex", ["k2"], parent_id="d1")
    manifest = writer.commit()
    files = [partition_dir(tmp_path, "keywords", DAY) / name for name in manifest.files]
    assert len(files) == 3
    for path in files:
        meta = pq.ParquetFile(path).metadata
        for group in range(meta.num_row_groups):
            stats = {meta.row_group(group).column(c).path_in_schema: meta.row_group(group).column(c).statistics
                     for c in range(meta.num_columns)}
            assert stats.pop("attributes") is None, path
            assert all(s is not None and s.has_min_max for s in stats.values()), (path, stats)
    table = read_snapshot(tmp_path, "keywords", DAY)
    by_account = {(r["account"], r["id"]) for r in table.to_pylist()}
    assert by_account == {("acme", f"k{i}") for i in range(7)} | {("globex", f"k{i}") for i in range(7) if i != 2}
    assert duckdb.connect().execute(f"select count(*) from '{files[0]}' where id = 'k3'").fetchone() == (1,)


@pytest.mark.parametrize("parent", ["d-8a3f", "", "domäne-ü", "x" * 36])
@pytest.mark.parametrize("n", [1, 3, 974, 10_001])
def test_a_pages_constant_columns_hold_their_value_on_every_row(parent, n):
    """``account``, ``type`` and ``parent_id`` repeat one value down a page: built from buffers (the offsets of
    pages as long shared), they read as pyarrow's own array of that value, whatever its length and the page's."""
    from datetime import UTC, datetime

    from rank_pipeline.snapshots.schema import records_table

    records = [{"id": f"k{i}", "type": "keyword", "attributes": {"n": i}} for i in range(n)]
    for _ in range(2):  # the second time from the shared offsets
        table = records_table("keywords", date(2026, 11, 21), "acme", records, parent_id=parent,
                              extracted_at=datetime(2026, 11, 21, tzinfo=UTC))
        table.validate(full=True)
        for name, value in (("parent_id", parent), ("account", "acme"), ("type", "keyword")):
            assert table.column(name).combine_chunks().equals(pa.array([value] * n, pa.string())), name
