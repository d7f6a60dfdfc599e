"""The publish step names the dashboards and the storage version.

``warehouse/published`` materialized by Dagster links the dashboards' address
(``RANK_PIPELINE_DASHBOARD_URL``, default http://127.0.0.1:8088) and writes the published file in the
storage version of ``RANK_PIPELINE_STORAGE_VERSION`` (default v1.0.0: storage format 64, which every
DuckDB 1.x opens); a version DuckDB does not know fails the publish with one clear line and leaves the
previously published file intact.
"""

from __future__ import annotations

import struct
from datetime import date

import dagster as dg
import duckdb
import pytest

from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource
from rank_pipeline.defs.warehouse_assets import PUBLISHED_KEY, build_publish_asset
from rank_pipeline.warehouse.errors import PublishError, WarehouseError
from rank_pipeline.warehouse.warehouse_file import Warehouse

DAY = date(2026, 11, 1)


def storage_format(path) -> int:
    """The storage version number in a DuckDB file's main header."""
    head = path.read_bytes()[:20]
    assert head[8:12] == b"DUCK", path
    return struct.unpack("<Q", head[12:20])[0]


def _build_file(data_dir):
    wh = Warehouse(data_dir / "warehouse.build.duckdb", data_dir / "warehouse.duckdb")
    with wh.connect() as con:
        con.execute("create table marts.t as select 1 as a, {'k': 'v'}::json as j, now() as ts")
    return wh


def _publish(data_dir) -> dg.ExecuteInProcessResult:
    return dg.materialize([build_publish_asset([])], partition_key=DAY.isoformat(),
                          resources={"warehouse": WarehouseResource(data_dir=str(data_dir)),
                                     "model_engine": ModelEngineResource()})


def _materializations(result: dg.ExecuteInProcessResult) -> list[dg.AssetMaterialization]:
    return [e.event_specific_data.materialization for e in result.get_asset_materialization_events()
            if e.asset_key == PUBLISHED_KEY]


def test_publish_metadata_links_the_dashboards(tmp_path, monkeypatch):
    _build_file(tmp_path)
    monkeypatch.delenv("RANK_PIPELINE_STORAGE_VERSION", raising=False)
    monkeypatch.setenv("RANK_PIPELINE_DASHBOARD_URL", "https://bi.example.test/")
    result = _publish(tmp_path)
    assert result.success
    (mat,) = _materializations(result)
    assert mat.metadata["dashboards"].value == "https://bi.example.test/dashboard/list/"
    assert mat.metadata["storage_version"].value == "v1.0.0"
    assert storage_format(tmp_path / "warehouse.duckdb") == 64
    monkeypatch.delenv("RANK_PIPELINE_DASHBOARD_URL")
    (mat,) = _materializations(_publish(tmp_path))
    assert mat.metadata["dashboards"].value == "http://127.0.0.1:8088/dashboard/list/"


def test_storage_version_setting(tmp_path, monkeypatch):
    wh = _build_file(tmp_path)
    monkeypatch.setenv("RANK_PIPELINE_STORAGE_VERSION", "v1.4.0")
    Warehouse(wh.build_path, wh.published_path).publish()
    assert storage_format(wh.published_path) == 67
    with duckdb.connect(str(wh.published_path), read_only=True) as con:
        assert con.execute("select a, j->>'k' from marts.t").fetchall() == [(1, "v")]
    before = wh.published_path.read_bytes()
    monkeypatch.setenv("RANK_PIPELINE_STORAGE_VERSION", "1.4")
    with pytest.raises(WarehouseError, match="RANK_PIPELINE_STORAGE_VERSION='1.4' is not a DuckDB release"):
        Warehouse(wh.build_path, wh.published_path)
    with pytest.raises(PublishError, match="storage version v9.9.9"):
        Warehouse(wh.build_path, wh.published_path, storage_version="v9.9.9").publish()
    assert wh.published_path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".tmp.wal"))] == []
    monkeypatch.setenv("RANK_PIPELINE_STORAGE_VERSION", "latest")
    Warehouse(wh.build_path, wh.published_path).publish()
    duckdb.connect(str(tmp_path / "new.duckdb")).close()  # the running DuckDB's own format
    assert storage_format(wh.published_path) == storage_format(tmp_path / "new.duckdb") != 64


def test_a_build_file_in_the_published_version_is_published_as_a_byte_copy(tmp_path, monkeypatch):
    """The build file is created in the published storage version, so publishing streams a file copy
    (memory that does not grow with the warehouse) instead of COPY FROM DATABASE; a build file made in
    another version is still published in the set one."""
    monkeypatch.delenv("RANK_PIPELINE_STORAGE_VERSION", raising=False)
    wh = Warehouse(tmp_path / "warehouse.build.duckdb", tmp_path / "warehouse.duckdb")
    with wh.connect() as first, wh.connect() as second:  # a new file, then a second connection of the process
        first.execute("create table marts.t as select 1 as a, {'k': 'v'}::json as j")
        assert second.execute("select a from marts.t").fetchall() == [(1,)]
    assert storage_format(wh.build_path) == 64
    wh.publish()
    assert wh.published_path.read_bytes() == wh.build_path.read_bytes()
    with duckdb.connect(str(wh.published_path), read_only=True) as con:
        assert con.execute("select a, j->>'k' from marts.t").fetchall() == [(1, "v")]
    # a build file from before (the running DuckDB's own format) is copied through DuckDB into v1.0.0
    old = tmp_path / "old"
    old.mkdir()
    with duckdb.connect(str(old / "warehouse.build.duckdb")) as con:
        con.execute("create schema marts; create table marts.t as select 2 as a")
    Warehouse(old / "warehouse.build.duckdb", old / "warehouse.duckdb").publish()
    assert storage_format(old / "warehouse.build.duckdb") != 64
    assert storage_format(old / "warehouse.duckdb") == 64
    with duckdb.connect(str(old / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("select a from marts.t").fetchall() == [(2,)]
