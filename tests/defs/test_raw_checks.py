"""The raw tables' blocking check ``one_row_per_record`` passes on a clean day and fails on a repeated account."""

from __future__ import annotations

from datetime import date

import dagster as dg
import pytest

from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource
from rank_pipeline.defs.warehouse_assets import UNIQUE_RECORD_CHECK, load_raw_tables
from rank_pipeline.extract.day import AccountSource, run_extraction
from rank_pipeline.sandbox import SandboxServer, World, create_app

DAY = date(2026, 11, 20)


@pytest.mark.parametrize("repeated", [False, True])
def test_one_row_per_record_fails_when_one_account_is_loaded_under_two_names(tmp_path, repeated):
    world = World(today=DAY)
    acme = world.account("acme")
    accounts = [AccountSource("acme", acme.api_key)]
    if repeated:  # what RANK_TRACKER_ACCOUNTS=acme,acme2 with one key wrote before it was refused
        accounts.append(AccountSource("acme2", acme.api_key))
    with SandboxServer(create_app(world)) as server:
        run_extraction(server.base_url, accounts, DAY, tmp_path / "snapshots")
    result = dg.materialize([load_raw_tables], partition_key=DAY.isoformat(),
                            resources={"warehouse": WarehouseResource(data_dir=str(tmp_path)),
                                       "model_engine": ModelEngineResource()},
                            raise_on_error=False)
    evaluations = {e.asset_key.path[-1]: e for e in result.get_asset_check_evaluations()
                   if e.check_name == UNIQUE_RECORD_CHECK}
    assert len(evaluations) == 7
    # reference rows are per account, so they never repeat; every record an account owns does
    owned = {"domains", "keywords", "competitors", "tags", "usage"}
    failed = {r for r, e in evaluations.items() if not e.passed}
    assert failed == (owned if repeated else set())
    domains = evaluations["domains"]
    assert domains.metadata["partition"].value == DAY.isoformat()
    truth = {str(d["id"]) for d in world.domains(acme.account_id, day=DAY)}
    if repeated:
        assert domains.metadata["failing_rows"].value == len(truth)
        sample = domains.metadata["sample"].value
        assert sample[0]["snapshot_date"] == DAY.isoformat() and sample[0]["accounts"] == ["acme", "acme2"]
        assert {row["id"] for row in sample} <= truth
