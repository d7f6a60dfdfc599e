"""A first ``run`` against the sandbox's ``vendor-d`` and ``vendor-e`` shapes, as a subprocess on a fresh data
folder: it exits 1, names exactly the contract paths each shape changes (rank_pipeline/sandbox/shapes.py), one
``vendor shape:`` line each, fails the blocking check of each endpoint concerned, publishes nothing and keeps
the snapshots."""

from __future__ import annotations

import pytest
from test_vendor_shape_doors import cli

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("vendor_shape"), pytest.mark.timeout(900)]

CHANGED = {
    "vendor-d": {("keywords", "createdAt"), ("keywords", "tagIds"), ("keywords", "searchVolume"),
                 ("keywords", "results.organic.capturedAt"), ("tags", "createdAt"),
                 ("usage", "dataRows.usage"), ("usage", "dataRows.limit"), ("usage", "dataRows.remaining")},
    "vendor-e": {("keywords", "results.organic.position"), ("keywords", "results.organic.url"),
                 ("keywords", "results.organic.capturedAt"), ("keywords", "device")},
}
"""Shape -> the ``(endpoint, contract path)`` pairs whose values it no longer sends as the contract reads them."""


@pytest.mark.parametrize("shape", sorted(CHANGED))
def test_the_first_run_names_the_paths_the_shape_changed_and_publishes_nothing(tmp_path, shape):
    result = cli("run", data_dir=tmp_path, env={"RANK_SANDBOX_SHAPE": shape})
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    named = set()
    for line in out.splitlines():
        if line.startswith("vendor shape: "):
            endpoint, _, rest = line.removeprefix("vendor shape: ").partition(": ")
            named.add((endpoint, rest.split(" ")[0]))
    assert named == CHANGED[shape], out
    for endpoint in {e for e, _ in CHANGED[shape]}:
        assert f"raw/{endpoint} matches_contract [ERROR (blocking)]" in out, endpoint
    assert "nothing was published" in out
    assert not (tmp_path / "warehouse.duckdb").exists()
    for endpoint in ("keywords", "tags", "usage"):
        assert any((tmp_path / "snapshots" / endpoint).glob("snapshot_date=*/*.parquet")), endpoint
