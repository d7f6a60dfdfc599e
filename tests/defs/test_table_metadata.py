"""Dagster's standard table metadata, read back from the instance after real daily runs.

Two days of the daily job against the embedded sandbox; then for every raw, seed and model asset the
latest materialization must carry ``dagster/row_count`` equal to ``count(*)`` of the published table,
``dagster/column_schema`` equal to the published table's columns and types (constraints as the
``.yml`` tests state), ``dagster/table_name`` naming a table that exists in the published file opened
as ``warehouse``, and, for a model, ``dagster/column_lineage`` whose every dependency names a column
that exists upstream; ``marts.agg_domain_daily.visibility`` must trace to the keyword's position in
``raw.keywords`` and to the CTR seed. The definitions' kinds name the engine ``RANK_PIPELINE_ENGINE``
selects (loaded in a subprocess, as ``dagster dev`` loads ``workspace.yaml``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from rank_pipeline.defs.extract_assets import extract_snapshots
from rank_pipeline.defs.jobs import daily_job
from rank_pipeline.defs.keywords_assets import build_keywords_file_asset
from rank_pipeline.defs.model_assets import build_model_assets
from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource
from rank_pipeline.defs.run_history_asset import build_run_history_asset
from rank_pipeline.defs.warehouse_assets import RAW_KEYS, build_publish_asset, load_raw_tables
from rank_pipeline.extract.source import Source
from rank_pipeline.transform import load_project

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e_table_metadata")]

ROOT = Path(__file__).resolve().parents[2]
DAYS = [date(2026, 3, 2) + timedelta(days=i) for i in range(2)]
DOMAIN_DAILY = dg.AssetKey(["marts", "agg_domain_daily"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("metadata")
    model_assets, model_keys = build_model_assets(engine="duckdb")
    defs = dg.Definitions(
        assets=[extract_snapshots, load_raw_tables, build_keywords_file_asset(None), *model_assets,
                build_run_history_asset(model_keys, list(RAW_KEYS.values())), build_publish_asset(model_keys)],
        jobs=[daily_job],
        resources={"source": Source(None, ()), "warehouse": WarehouseResource(data_dir=str(data_dir)),
                   "model_engine": ModelEngineResource()})
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_job_def(daily_job.name)
    for day in DAYS:
        assert job.execute_in_process(partition_key=day.isoformat(), instance=instance, raise_on_error=False).success
    keys = [k for k in defs.resolve_asset_graph().get_all_asset_keys() if k.path[0] in ("raw", "seeds", "staging",
                                                                                       "marts")]
    metadata = {k: instance.get_latest_materialization_event(k).asset_materialization.metadata for k in keys}
    return data_dir, defs, metadata


def _published_columns(con, key: dg.AssetKey) -> list[tuple[str, str]]:
    return [(c, t.lower()) for c, t in con.execute(
        "select column_name, data_type from information_schema.columns where table_catalog = 'warehouse' and "
        "table_schema = ? and table_name = ? order by ordinal_position", key.path).fetchall()]


def test_every_table_asset_reports_row_count_schema_and_table_name_of_the_published_table(runs):
    data_dir, _, metadata = runs
    assert len(metadata) > 30
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as con:
        for key, meta in metadata.items():
            table = meta["dagster/table_name"].value
            assert table == f"warehouse.{key.path[0]}.{key.path[1]}"
            (count,) = con.execute(f"select count(*) from {table}").fetchone()
            assert meta["dagster/row_count"].value == count, key
            schema = meta["dagster/column_schema"].schema
            assert [(c.name, c.type) for c in schema.columns] == _published_columns(con, key), key
        # two days loaded: the whole table, not the run's partition
        (day_rows,) = con.execute("select count(*) from raw.keywords where snapshot_date = ?", [DAYS[-1]]).fetchone()
    raw = metadata[dg.AssetKey(["raw", "keywords"])]
    assert raw["rows"].value == day_rows < raw["dagster/row_count"].value


def test_column_constraints_and_descriptions_come_from_the_yml(runs):
    _, _, metadata = runs
    project = load_project(ROOT / "dbt_like_sql")
    checked = 0
    for model in [*project.models.values(), *project.seeds.values()]:
        columns = {c.name: c for c in metadata[dg.AssetKey([model.schema, model.name])]["dagster/column_schema"]
                   .schema.columns}
        for spec in model.columns:
            column = columns[spec.name]
            assert column.description == (spec.description or None)
            kinds = {t.kind for t in spec.tests}
            assert column.constraints.nullable is ("not_null" not in kinds), (model.name, spec.name)
            assert column.constraints.unique is ("unique" in kinds)
            if spec.tests:
                assert set(column.constraints.other) == {t.describe() for t in spec.tests
                                                         if t.kind not in ("not_null", "unique")}
                checked += 1
    assert checked > 50
    stg = {c.name: c for c in metadata[dg.AssetKey(["raw", "keywords"])]["dagster/column_schema"].schema.columns}
    assert "JSON" in stg["attributes"].description


def test_column_lineage_names_existing_upstream_columns_down_to_raw_and_seeds(runs):
    _, defs, metadata = runs
    graph = defs.resolve_asset_graph()
    columns = {k: {c.name for c in m["dagster/column_schema"].schema.columns} for k, m in metadata.items()}
    deps_seen = 0
    for key, meta in metadata.items():
        if key.path[0] not in ("staging", "marts"):
            continue
        lineage = meta["dagster/column_lineage"].column_lineage
        assert set(lineage.deps_by_column) <= columns[key], key
        for column, deps in lineage.deps_by_column.items():
            for dep in deps:
                assert dep.asset_key in graph.get_all_asset_keys(), (key, column, dep)
                assert dep.column_name.split(".", 1)[0] in columns[dep.asset_key], (key, column, dep)
                deps_seen += 1
    assert deps_seen > 500
    visibility = {(d.asset_key.to_user_string(), d.column_name)
                  for d in metadata[DOMAIN_DAILY]["dagster/column_lineage"].column_lineage.deps_by_column["visibility"]}
    assert ("raw/keywords", "attributes.results.organic.position") in visibility
    assert ("seeds/ctr_curve", "ctr") in visibility
    assert ("marts/int_keyword_rankings_rollup_daily", "visibility") in visibility
    # a column read through a filter only is not a dependency: the domain's name is not derived from CTRs
    domain = {d.asset_key.to_user_string()
              for d in metadata[DOMAIN_DAILY]["dagster/column_lineage"].column_lineage.deps_by_column["domain"]}
    assert "seeds/ctr_curve" not in domain and "staging/stg_domains" in domain


def test_definitions_carry_code_references_and_kinds_of_the_engine_in_use(runs, tmp_path):
    _, defs, _ = runs
    spec = next(s for s in defs.resolve_all_asset_specs() if s.key == DOMAIN_DAILY)
    [ref] = spec.metadata["dagster/code_references"].code_references
    assert ref.label == "dbt_like_sql/marts/agg_domain_daily.sql"
    assert Path(ref.file_path).read_text() == (ROOT / ref.label).read_text()
    script = ("import json, rank_pipeline.defs.definitions as d\n"
              "print(json.dumps({s.key.to_user_string(): sorted(s.kinds) for s in d.defs.resolve_all_asset_specs()}))")
    kinds = {}
    for engine in ("duckdb", "spark"):
        env = {**os.environ, "RANK_PIPELINE_ENGINE": engine, "RANK_PIPELINE_DATA_DIR": str(tmp_path / "data")}
        proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        kinds[engine] = json.loads(proc.stdout.strip().splitlines()[-1])
    for engine, other in (("duckdb", "spark"), ("spark", "duckdb")):
        tables = {k: v for k, v in kinds[engine].items() if k.split("/")[0] in ("raw", "seeds", "staging", "marts")}
        assert len(tables) > 30
        assert all(engine in v and other not in v for v in tables.values()), tables
        assert kinds[engine]["warehouse/published"] == [engine]
    assert kinds["spark"]["marts/agg_domain_daily"] == ["spark", "sql"]
