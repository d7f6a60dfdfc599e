"""The blocking ``complete`` asset check: an incomplete snapshot fails it and stops the warehouse load."""

from __future__ import annotations

from datetime import date

import dagster as dg
import pytest

from rank_pipeline.defs.extract_assets import extract_snapshots
from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource
from rank_pipeline.defs.warehouse_assets import load_raw_tables
from rank_pipeline.sandbox import Faults, SandboxServer, World, create_app

DAY = date(2026, 11, 21)


@pytest.mark.parametrize("shifting", [False, True])
def test_complete_check_follows_the_manifest_and_blocks_the_load(tmp_path, shifting, served_source):
    world = World(today=DAY)
    faults = Faults(seed=3, shift_rate=1.0 if shifting else 0.0, shift_inserts=2, shift_deletes=1)
    account = world.account("acme")
    with SandboxServer(create_app(world, faults=faults)) as server:
        with served_source(server.base_url, {"acme": account.api_key}, per_page=10, max_passes=2) as source:
            result = dg.materialize([extract_snapshots, load_raw_tables], partition_key=DAY.isoformat(),
                                resources={"source": source, "warehouse": WarehouseResource(data_dir=str(tmp_path)),
                                           "model_engine": ModelEngineResource()},
                                raise_on_error=False)
    checks = {e.asset_key.to_user_string(): e for e in result.get_asset_check_evaluations()
              if e.check_name == "complete"}
    evaluations = {k: e.passed for k, e in checks.items()}
    if shifting:  # the failed check says what was not proven and what to do
        description = checks["snapshots/keywords"].description
        assert "could not be proven complete" in description and "Run the partition again" in description
        assert checks["snapshots/keywords"].metadata["incomplete_lists"].value["acme"]
    assert evaluations["snapshots/keywords"] is (not shifting)
    assert evaluations["snapshots/domains"] is True  # domains are not written to during the read
    loaded = [e.asset_key.to_user_string() for e in result.get_asset_materialization_events()]
    assert ("raw/keywords" in loaded) is (not shifting)
