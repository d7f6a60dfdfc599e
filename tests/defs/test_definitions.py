"""The Dagster layer: definitions load from workspace.yaml; assets, checks, no pools, schedule, secrets."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from rank_pipeline.defs.resources import source_from_env
from rank_pipeline.settings import Settings
from rank_pipeline.snapshots.schema import ENDPOINTS
from rank_pipeline.transform import load_project

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_definitions_load_from_workspace_yaml(tmp_path):
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "RANK_PIPELINE_DATA_DIR": str(tmp_path / "data")}
    env.pop("RANK_TRACKER_BASE_URL", None)
    dagster = Path(sys.executable).parent / "dagster"
    proc = subprocess.run([str(dagster), "definitions", "validate", "-w", "workspace.yaml"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_resource_and_model_is_an_asset_and_every_test_a_check():
    from rank_pipeline.defs.definitions import defs

    keys = {k.to_user_string() for k in defs.resolve_all_asset_keys()}
    project = load_project(ROOT / "dbt_like_sql")
    for resource in ENDPOINTS:
        assert f"snapshots/{resource}" in keys and f"raw/{resource}" in keys
    for model in project.models.values():
        assert f"{model.schema}/{model.name}" in keys
    assert "warehouse/published" in keys
    graph = defs.resolve_asset_graph()
    check_keys = {(c.asset_key.to_user_string(), c.name) for c in graph.asset_check_keys}
    for model in project.models.values():
        for test in model.tests:
            assert (f"{model.schema}/{model.name}", test.name) in check_keys
    for resource in ENDPOINTS:
        assert (f"snapshots/{resource}", "complete") in check_keys


def test_no_asset_depends_on_a_pool_and_every_writer_holds_the_data_folder_lock():
    """A pool slot of a killed run stayed claimed and wedged every later run: no pools; the
    writer lock comes with the ``warehouse`` resource, which every asset that writes files requires."""
    from rank_pipeline.defs.definitions import defs
    from rank_pipeline.defs.resources import WarehouseResource

    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        op = graph.get(key).assets_def.op
        assert op.pool is None, key
        assert "warehouse" in op.required_resource_keys, key
    assert "yield_for_execution" in WarehouseResource.__dict__


def test_daily_job_schedule_and_partitions_include_today():
    from rank_pipeline.defs.definitions import defs
    from rank_pipeline.settings import find_project
    from rank_pipeline.snapshots.partition_start import partition_start

    job = defs.resolve_job_def("daily_rank_pipeline")
    now = datetime.now(UTC)  # one reading of the clock, Dagster's and the test's
    keys = job.partitions_def.get_partition_keys(current_time=now)
    schedule = defs.resolve_schedule_def("daily_rank_pipeline_schedule")
    assert schedule.cron_schedule == "15 6 * * *"
    assert keys[-1] == now.date().isoformat()
    assert keys[0] == partition_start(Settings.from_env(), find_project()).day.isoformat()


def test_keys_never_reach_dagster_only_their_variable_names():
    env = {"RANK_TRACKER_BASE_URL": "https://api.example.com", "RANK_TRACKER_ACCOUNTS": "acme,globex",
           "RANK_TRACKER_API_KEY_ACME": "secret-acme-123", "RANK_TRACKER_API_KEY_GLOBEX": "secret-globex-456"}
    settings = Settings.from_env(env)
    resource = source_from_env(settings)
    text = repr(resource) + str(resource.accounts) + resource.describe()
    assert "secret" not in text
    # the settings' accounts reach the source as they are: names and key variables, no key
    assert resource.accounts == settings.accounts
    assert [a.name for a in resource.accounts] == ["acme", "globex"]
    assert [a.api_key_env for a in resource.accounts] == ["RANK_TRACKER_API_KEY_ACME", "RANK_TRACKER_API_KEY_GLOBEX"]
    # the keys are read when a run opens the source, from the environment (the one place)
    opened = resource.open(date(2026, 11, 22), env=env)
    assert {a.name: a.api_key for a in opened.accounts} == {"acme": "secret-acme-123", "globex": "secret-globex-456"}
    assert "secret" not in repr(opened)


def test_the_model_engine_is_a_resource_setting_read_from_the_environment(tmp_path):
    """The engine, the Spark master and the warehouse URI are the ``model_engine``
    resource's settings; a bad value is one line naming what to set."""
    import pytest

    from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource, model_engine_from_env
    from rank_pipeline.settings import ConfigurationError

    env = {"RANK_PIPELINE_DATA_DIR": str(tmp_path), "RANK_PIPELINE_ENGINE": "Spark",
           "RANK_PIPELINE_SPARK_MASTER": "spark://host:7077"}
    resource = model_engine_from_env(env=env)
    assert (resource.engine, resource.spark_master, resource.spark_warehouse_uri) == (
        "spark", "spark://host:7077", str(tmp_path / "spark_warehouse"))
    assert resource.settings().engine == "spark" and "spark on spark://host:7077" in resource.describe()
    assert model_engine_from_env(env={"RANK_PIPELINE_DATA_DIR": str(tmp_path)}).settings().engine == "duckdb"
    with pytest.raises(ConfigurationError, match="RANK_PIPELINE_ENGINE='sparkk' is not one of duckdb, spark"):
        model_engine_from_env(env={**env, "RANK_PIPELINE_ENGINE": "sparkk"})
    with pytest.raises(ConfigurationError, match="RANK_PIPELINE_SPARK_WAREHOUSE_URI"):
        ModelEngineResource(engine="spark").settings()
    with pytest.raises(RuntimeError, match="open run"):
        ModelEngineResource(engine="spark", spark_warehouse_uri="x").open(WarehouseResource(data_dir=str(tmp_path)))
