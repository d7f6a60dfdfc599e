"""The suggested remap through the command line, on fresh data folders: a run against another shape fails and
says to run the suggestion, ``profile --suggest`` writes a patch of the contract alone, applied unedited it
makes ``rebuild`` pass, and the marts then equal, row by row, the marts of the default shape of the same world
(vendor-b: renames and nesting in keywords; vendor-c: renames in keywords, tags and competitors, the position
and the search volume sent as text with sentinels)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from test_vendor_shape_doors import cli

from rank_pipeline.settings import models_dir

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("vendor_shape"), pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def default_marts(tmp_path_factory, published_marts):
    folder = tmp_path_factory.mktemp("default")
    result = cli("run", data_dir=folder)
    assert result.returncode == 0, result.stderr
    return published_marts(folder / "warehouse.duckdb")


@pytest.mark.parametrize("shape", ["vendor-b", "vendor-c"])
def test_the_suggested_patch_applied_unedited_gives_the_default_marts(tmp_path, shape, default_marts, published_marts):
    data, project = tmp_path / "data", tmp_path / "project"
    shutil.copytree(models_dir(), project / "dbt_like_sql")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    models = {"RANK_PIPELINE_MODELS_DIR": str(project / "dbt_like_sql")}

    first = cli("run", data_dir=data, env={"RANK_SANDBOX_SHAPE": shape, **models}, cwd=project)
    out = first.stdout + first.stderr
    assert first.returncode == 1, out
    lines = [x for x in out.splitlines() if x.startswith("vendor shape: ")]
    assert lines and all("`rank-pipeline profile --suggest` writes the edit" in x for x in lines)
    assert not (data / "warehouse.duckdb").exists()

    suggested = cli("profile", "--suggest", data_dir=data, env=models, cwd=project)
    assert suggested.returncode == 0, suggested.stderr
    assert "TIE" not in suggested.stdout
    patch = project / "remap.patch"
    patch.write_text(suggested.stdout)
    touched = [x[6:] for x in suggested.stdout.splitlines() if x.startswith("+++ b/")]
    assert touched == ["dbt_like_sql/sources/vendor_contract.yml"]  # the contract alone
    subprocess.run(["git", "apply", str(patch)], cwd=project, check=True)

    rebuild = cli("rebuild", data_dir=data, env=models, cwd=project)
    assert rebuild.returncode == 0, rebuild.stdout + rebuild.stderr
    got = published_marts(data / "warehouse.duckdb")
    marts = sorted(k for k in default_marts if k.startswith("marts."))
    assert marts and [k for k in got if k.startswith("marts.")] == marts
    for name in marts:
        assert got[name] == default_marts[name], name
