"""Warehouse raw layer and publishing (docs/concepts/architecture.md, "Warehouse and the dbt-like runner")."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import date, timedelta

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rank_pipeline.snapshots.schema import ENDPOINTS, SnapshotError, arrow_schema, partition_dir
from rank_pipeline.snapshots.writer import SnapshotWriter
from rank_pipeline.warehouse.errors import LoadError, PublishError, SnapshotMissingError, WarehouseError
from rank_pipeline.warehouse.raw_load import (
    KEYWORDS_FILE,
    load_partition,
    raw_columns,
    reload_raw_from_snapshots,
)
from rank_pipeline.warehouse.warehouse_file import Warehouse

DAY1 = date(2026, 11, 20)
DAY2 = DAY1 + timedelta(days=1)


def _records(resource: str, day: date, n: int) -> list[dict]:
    """n JSON:API records of ``resource`` whose attributes depend on the day (so days are distinguishable)."""
    out = []
    for i in range(n):
        if resource == "domains":
            attrs = {"domain": f"ex{i}.com", "host": f"www.ex{i}.com", "matchType": "any", "projectName": f"P{i}"}
        elif resource == "keywords":
            attrs = {"keyword": f"kw {i}", "location": {"code": str(2840 + i)},
                     "results": {"organic": {"position": (i + day.day) % 100 + 1}}}
        elif resource == "usage":
            attrs = {"apiEnabled": True, "keywords": {"usage": i, "limit": 100, "remaining": 100 - i},
                     "dataRows": {"usage": 2 * i, "limit": 500, "remaining": 500 - 2 * i}}
        else:
            attrs = {"code": f"c{i}", "name": f"{resource} {i}"}
        out.append({"id": f"{resource[:3]}-{i}", "type": resource.rstrip("s"), "attributes": attrs})
    return out


def write_day(root, day: date, sizes: dict[str, int] | None = None, resources=ENDPOINTS) -> dict[str, int]:
    """Commit one snapshot per resource for ``day`` with the lead's SnapshotWriter; returns rows per resource."""
    sizes = sizes or {}
    counts = {}
    for resource in resources:
        n = sizes.get(resource, 3)
        w = SnapshotWriter(root, resource, day)
        w.write("acme", _records(resource, day, n), parent_id="d-1" if resource == "keywords" else None)
        w.set_report("acme", {"complete": True, "expected": n, "delivered": n})
        w.commit()
        counts[resource] = n
    return counts


def _state(con) -> dict:
    """Everything observable in the raw layer: rows per (table, date) and a content checksum."""
    out = {}
    for resource in ENDPOINTS:
        rows = con.execute(
            f"select snapshot_date, count(*), sum(hash(id, attributes::varchar)) from raw.{resource} "
            "group by 1 order by 1"
        ).fetchall()
        out[resource] = rows
    return out


def test_load_creates_raw_tables_with_contract_columns_and_json_attributes(tmp_path):
    snaps = tmp_path / "snapshots"
    expected = write_day(snaps, DAY1, {"keywords": 5, "tags": 0})
    con = Warehouse(tmp_path / "b.duckdb", tmp_path / "p.duckdb").connect()
    counts = load_partition(con, snaps, DAY1)
    assert counts == expected
    cols = dict(con.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_schema = 'raw' and table_name = 'keywords' order by ordinal_position").fetchall())
    assert list(cols) == [*arrow_schema("keywords").names, "loaded_at"]
    assert cols["attributes"] == "JSON" and cols["snapshot_date"] == "DATE"
    assert cols["extracted_at"] == "TIMESTAMP WITH TIME ZONE"
    # attributes is queryable JSON, whole: every field survives, none is copied into a column of its own
    rows = con.execute(
        "select id, attributes->>'$.location.code', attributes->>'$.keyword' from raw.keywords "
        "order by id").fetchall()
    assert rows == [(f"key-{i}", str(2840 + i), f"kw {i}") for i in range(5)]
    usage = con.execute("select (attributes->>'$.keywords.remaining')::int, (attributes->>'$.dataRows.usage')::int "
                        "from raw.usage order by id").fetchall()
    assert usage == [(100, 0), (99, 2), (98, 4)]
    assert con.execute("select count(*) from raw.tags").fetchone() == (0,)


def test_raw_columns_are_the_loaded_tables_columns_and_an_unknown_table_is_a_snapshot_error(tmp_path):
    """:func:`raw_columns` (every table's columns made once a process) gives each raw table's columns as a load
    creates them, and refuses a name that is neither an endpoint nor the keywords file's table, every time."""
    snaps = tmp_path / "snapshots"
    write_day(snaps, DAY1, {"keywords": 2})
    con = Warehouse(tmp_path / "b.duckdb", tmp_path / "p.duckdb").connect()
    load_partition(con, snaps, DAY1)
    for table in (*ENDPOINTS, KEYWORDS_FILE):
        loaded = con.execute("select column_name, data_type from information_schema.columns where "
                             "table_schema = 'raw' and table_name = ? order by ordinal_position", [table]).fetchall()
        assert list(raw_columns(table)) == loaded and loaded, table
    for _ in range(2):  # the cache of the known tables does not answer for an unknown one
        with pytest.raises(SnapshotError, match="unknown resource 'rankings'; expected one of domains"):
            raw_columns("rankings")


def test_reload_is_idempotent_and_other_partitions_are_untouched(tmp_path):
    snaps = tmp_path / "snapshots"
    write_day(snaps, DAY1)
    write_day(snaps, DAY2, {"keywords": 4})
    con = Warehouse(tmp_path / "b.duckdb", tmp_path / "p.duckdb").connect()
    load_partition(con, snaps, DAY1)
    load_partition(con, snaps, DAY2)
    before = _state(con)
    load_partition(con, snaps, DAY2)
    load_partition(con, snaps, DAY2)
    assert _state(con) == before
    assert con.execute("select count(*) from raw.keywords where snapshot_date = ?", [DAY2]).fetchone() == (4,)
    # a re-extracted day (new content) replaces exactly that partition
    write_day(snaps, DAY2, {"keywords": 2}, resources=["keywords"])
    assert load_partition(con, snaps, DAY2, resources=["keywords"]) == {"keywords": 2}
    after = _state(con)
    assert after["keywords"][0] == before["keywords"][0]
    assert after["keywords"][1][1] == 2
    assert after["domains"] == before["domains"]


def test_corrupt_file_rolls_back_every_table_and_names_the_file(tmp_path):
    snaps = tmp_path / "snapshots"
    write_day(snaps, DAY1)
    con = Warehouse(tmp_path / "b.duckdb", tmp_path / "p.duckdb").connect()
    load_partition(con, snaps, DAY1)
    before = _state(con)
    write_day(snaps, DAY1, {r: 7 for r in ENDPOINTS})  # new content for the same day ...
    bad = partition_dir(snaps, "tags", DAY1) / "part-acme-0000.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")  # ... but one file is damaged
    with pytest.raises(LoadError) as err:
        load_partition(con, snaps, DAY1)
    assert str(bad) in str(err.value) and "re-extract tags" in str(err.value)
    # domains and keywords were loaded before tags in the same transaction: rolled back too
    assert _state(con) == before


def test_file_with_rows_of_another_date_or_wrong_row_count_is_refused(tmp_path):
    snaps = tmp_path / "snapshots"
    write_day(snaps, DAY1, resources=["tags"])
    folder = partition_dir(snaps, "tags", DAY1)
    manifest = json.loads((folder / "_manifest.json").read_text())
    con = Warehouse(tmp_path / "b.duckdb", tmp_path / "p.duckdb").connect()
    load_partition(con, snaps, DAY1, ["tags"])

    manifest["row_count"] = 99
    (folder / "_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(LoadError, match="manifest says 99"):
        load_partition(con, snaps, DAY1, ["tags"])

    table = pq.read_table(folder / manifest["files"][0])
    moved = table.set_column(0, "snapshot_date", pa.array([DAY2] * table.num_rows, pa.date32()))
    pq.write_table(moved, folder / manifest["files"][0])
    manifest["row_count"] = table.num_rows
    (folder / "_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(LoadError, match="another snapshot_date"):
        load_partition(con, snaps, DAY1, ["tags"])
    assert con.execute("select count(*), min(snapshot_date) from raw.tags").fetchone() == (3, DAY1)


def test_missing_snapshot_is_a_clear_error_naming_the_path(tmp_path):
    snaps = tmp_path / "snapshots"
    write_day(snaps, DAY1, resources=[r for r in ENDPOINTS if r != "competitors"])
    con = Warehouse(tmp_path / "b.duckdb", tmp_path / "p.duckdb").connect()
    with pytest.raises(SnapshotMissingError) as err:
        load_partition(con, snaps, DAY1)
    assert str(partition_dir(snaps, "competitors", DAY1) / "_manifest.json") in str(err.value)
    # no snapshot table was created (raw.keywords_file, the keywords file's table, exists from connect on)
    assert con.execute("select count(*) from information_schema.tables where table_schema = 'raw' "
                       "and table_name <> 'keywords_file'").fetchone() == (0,)
    # an explicit subset loads
    assert load_partition(con, snaps, DAY1, ["domains"]) == {"domains": 3}
    with pytest.raises(WarehouseError, match="unknown resource"):
        load_partition(con, snaps, DAY1, ["serps"])


def _as_version_1(folder, copies: dict[str, pa.Array]) -> None:
    """Rewrite the committed day in ``folder`` as version 1 wrote it: ``copies`` (flattened copies of fields of
    ``attributes``) after the common columns, ``schema_version`` 1 in the manifest."""
    manifest = json.loads((folder / "_manifest.json").read_text())
    (name,) = manifest["files"]
    table = pq.read_table(folder / name)
    for column, values in copies.items():
        table = table.append_column(column, values)
    pq.write_table(table, folder / name)
    (folder / "_manifest.json").write_text(json.dumps({**manifest, "schema_version": 1}))


def test_a_version_1_snapshot_loads_without_its_flattened_copies(tmp_path):
    """Version 1 flattened fields of ``attributes`` into columns of their own; they load as the same rows, into
    the same raw table (the copies left out), and a raw table an earlier version made loses them."""
    snaps = tmp_path / "snapshots"
    write_day(snaps, DAY1, resources=["domains"])
    write_day(snaps, DAY2, resources=["domains"])
    _as_version_1(partition_dir(snaps, "domains", DAY1),
                  {"domain": pa.array([f"ex{i}.com" for i in range(3)]), "match_type": pa.array(["any"] * 3)})
    con = Warehouse(tmp_path / "b.duckdb", tmp_path / "p.duckdb").connect()
    con.execute("create schema if not exists raw")
    # the table as version 1 created it, with a copy in a column of its own
    con.execute("create table raw.domains (snapshot_date date, account varchar, id varchar, type varchar, "
                "parent_id varchar, extracted_at timestamptz, attributes json, match_type varchar, "
                "loaded_at timestamptz)")
    assert load_partition(con, snaps, DAY1, ["domains"]) == {"domains": 3}
    assert load_partition(con, snaps, DAY2, ["domains"]) == {"domains": 3}
    columns = [c for (c,) in con.execute("select column_name from information_schema.columns where "
                                         "table_schema = 'raw' and table_name = 'domains' order by ordinal_position")
               .fetchall()]
    assert columns == [*arrow_schema("domains").names, "loaded_at"]
    rows = con.execute("select snapshot_date, id, attributes->>'$.matchType', attributes->>'$.domain' "
                       "from raw.domains order by 1, 2").fetchall()
    assert rows == [(day, f"dom-{i}", "any", f"ex{i}.com") for day in (DAY1, DAY2) for i in range(3)]


def test_a_snapshot_of_a_later_version_fails_its_load_naming_it(tmp_path):
    snaps = tmp_path / "snapshots"
    write_day(snaps, DAY1, resources=["tags"])
    folder = partition_dir(snaps, "tags", DAY1)
    manifest = json.loads((folder / "_manifest.json").read_text())
    (folder / "_manifest.json").write_text(json.dumps({**manifest, "schema_version": 99}))
    con = Warehouse(tmp_path / "b.duckdb", tmp_path / "p.duckdb").connect()
    with pytest.raises(LoadError, match="schema_version 99 .* written by a later version; upgrade rank-pipeline"):
        load_partition(con, snaps, DAY1, ["tags"])


def test_reload_raw_from_snapshots_equals_the_loaded_state_and_drops_stale_rows(tmp_path):
    snaps = tmp_path / "snapshots"
    write_day(snaps, DAY1)
    write_day(snaps, DAY2, {"keywords": 6})
    wh = Warehouse(tmp_path / "b.duckdb", tmp_path / "p.duckdb")
    with wh.connect() as con:
        load_partition(con, snaps, DAY1)
        load_partition(con, snaps, DAY2)
        loaded = _state(con)
        con.execute("insert into raw.tags (snapshot_date, id) values (date '2020-01-01', 'stale')")
    other = Warehouse(tmp_path / "b2.duckdb", tmp_path / "p2.duckdb")
    assert other.reload_raw_from_snapshots(snaps)[DAY2]["keywords"] == 6
    with other.connect() as con:
        assert _state(con) == loaded
    assert wh.reload_raw_from_snapshots(snaps)[DAY1]["domains"] == 3
    with wh.connect() as con:
        assert _state(con) == loaded
        # a failure rolls the whole rebuild back
        (partition_dir(snaps, "usage", DAY2) / "part-acme-0000.parquet").write_bytes(b"junk")
        with pytest.raises(LoadError):
            reload_raw_from_snapshots(con, snaps)
        assert _state(con) == loaded


def test_publish_and_read_only_errors(tmp_path):
    wh = Warehouse(tmp_path / "b.duckdb", tmp_path / "pub" / "p.duckdb")
    with pytest.raises(WarehouseError, match="no published warehouse"):
        wh.read_only_connect()
    with pytest.raises(PublishError, match="nothing to publish"):
        wh.publish()
    with pytest.raises(WarehouseError, match="same file"):
        Warehouse(tmp_path / "x.duckdb", tmp_path / "x.duckdb")
    con = wh.connect()
    con.execute("create table marts.t as select 1 as a")
    con.begin()
    con.execute("insert into marts.t values (2)")
    with pytest.raises(PublishError, match="transaction"):
        wh.publish(con)
    con.rollback()
    wh.publish(con)
    with wh.read_only_connect() as ro:
        assert ro.execute("select * from marts.t").fetchall() == [(1,)]
        with pytest.raises(duckdb.Error):
            ro.execute("insert into marts.t values (3)")
    assert not [p for p in (tmp_path / "pub").iterdir() if p.name.endswith(".tmp")]


READER = textwrap.dedent(
    """
    import sys, duckdb
    con = duckdb.connect(sys.argv[1], read_only=True)
    query = ("select count(*), count(distinct snapshot_date), max(snapshot_date)::varchar, "
             "sum(hash(id, attributes::varchar)) from raw.keywords")
    con.begin()
    # touch only raw.domains now, so raw.keywords' data blocks are first read from disk AFTER the publish
    print("before", *con.execute("select count(*) from raw.domains").fetchone(), flush=True)
    sys.stdin.readline()                       # held open, mid-transaction, while the parent loads and publishes
    print("during", *con.execute(query).fetchone(), flush=True)
    con.commit()
    print("after-commit", *con.execute(query).fetchone(), flush=True)
    """
)


def test_reader_in_another_process_never_blocks_load_and_sees_only_complete_states(tmp_path):
    snaps = tmp_path / "snapshots"
    write_day(snaps, DAY1, {"keywords": 5})
    write_day(snaps, DAY2, {"keywords": 8})
    wh = Warehouse(tmp_path / "b.duckdb", tmp_path / "p.duckdb")
    with wh.connect() as con:
        load_partition(con, snaps, DAY1)
        wh.publish(con)
        (old_checksum,) = con.execute("select sum(hash(id, attributes::varchar)) from raw.keywords").fetchone()
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(wh.published_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert reader.stdout.readline().split() == ["before", "3"]
        # the reader holds the published file open with a transaction: the load and publish must not fail
        with wh.connect() as con:
            assert load_partition(con, snaps, DAY2)["keywords"] == 8
            wh.publish(con)
            # a second cycle lets DuckDB reuse the blocks freed by the first one in the build file
            con.execute("delete from raw.keywords where snapshot_date = ?", [DAY1])
            con.execute("checkpoint")
            assert load_partition(con, snaps, DAY1)["keywords"] == 5
            wh.publish(con)
        with wh.read_only_connect() as fresh:
            assert fresh.execute("select count(*), count(distinct snapshot_date) from raw.keywords").fetchone() == (13, 2)
        out, err = reader.communicate("go\n", timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
    assert reader.returncode == 0, err
    lines = [line.split() for line in out.splitlines()]
    # the old connection keeps its old, complete file: never a half state
    old = ["5", "1", str(DAY1), str(old_checksum)]
    assert lines == [["during", *old], ["after-commit", *old]]
