"""A failing data test reports its failing rows, dates included, as asset check metadata.

Before: ``Object of type date is not JSON serializable`` crashed the step instead of reporting.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from rank_pipeline.defs.model_assets import build_model_assets
from rank_pipeline.defs.resources import ModelEngineResource, WarehouseResource

SQL = """
select date '2026-03-01' as snapshot_date, 'k1' as keyword_id, 120 as position, timestamptz '2026-03-01 07:00:00+00' as at
union all
select date '2026-03-01', 'k2', 3, timestamptz '2026-03-01 07:00:00+00'
"""

YML = """
models:
  - name: fct_dates
    description: "A table with a date column and one bad row."
    config: {materialized: table}
    columns:
      - name: position
        description: "Position."
    tests:
      - expression: "position <= 100"
        name: position_in_top_100
"""


def test_a_failing_test_on_a_model_with_dates_reports_its_rows(tmp_path: Path):
    project = tmp_path / "dbt_like_sql"
    (project / "marts").mkdir(parents=True)
    (project / "marts" / "fct_dates.sql").write_text(SQL)
    (project / "marts" / "fct_dates.yml").write_text(YML)
    assets, _ = build_model_assets(project)
    result = dg.materialize(assets, partition_key="2026-03-01", raise_on_error=False,
                            resources={"warehouse": WarehouseResource(data_dir=str(tmp_path / "data")),
                                       "model_engine": ModelEngineResource()})
    assert result.success
    [check] = result.get_asset_check_evaluations()
    assert check.check_name == "position_in_top_100" and not check.passed
    assert check.metadata["failing_rows"].value == 1
    [row] = check.metadata["sample"].value
    assert row == {"snapshot_date": "2026-03-01", "keyword_id": "k1", "position": 120,
                   "at": "2026-03-01T07:00:00+00:00"}
