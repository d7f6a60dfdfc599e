"""Meeting the vendor's shape in a project made by ``rank-pipeline init``, through the command line: with the
sandbox's vendor-b shape the failure lines and the suggested patch name the project's own
``models/sources/vendor_contract.yml`` (never the composed copy under ``.rank_pipeline/``), the patch applies
there with ``git apply``, ``rebuild`` passes, and after an unrelated model in ``models/`` is edited
``rebuild`` still passes on the newly composed models."""

from __future__ import annotations

import subprocess

import duckdb
import pytest
from test_vendor_shape_doors import cli

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("vendor_shape"), pytest.mark.timeout(900)]

CONTRACT = "models/sources/vendor_contract.yml"


def test_the_remap_lands_in_the_projects_own_contract(tmp_path):
    project = tmp_path / "my-rank"
    made = cli("init", str(project), data_dir=tmp_path / "unused")
    assert made.returncode == 0, made.stdout + made.stderr
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    data = project / "data"
    shape = {"RANK_SANDBOX_SHAPE": "vendor-b"}

    first = cli("run", data_dir=data, env=shape, cwd=project)
    out = first.stdout + first.stderr
    assert first.returncode == 1, out
    lines = [x for x in out.splitlines() if x.startswith("vendor shape: ")]
    assert lines and all(f"edit {CONTRACT} " in x for x in lines), lines
    assert ".rank_pipeline" not in out
    assert not (data / "warehouse.duckdb").exists()

    suggested = cli("profile", "--suggest", data_dir=data, cwd=project)
    assert suggested.returncode == 0, suggested.stdout + suggested.stderr
    assert ".rank_pipeline" not in suggested.stdout
    touched = [x[6:] for x in suggested.stdout.splitlines() if x.startswith("+++ b/")]
    assert touched == [CONTRACT]
    (project / "remap.patch").write_text(suggested.stdout)
    subprocess.run(["git", "apply", "remap.patch"], cwd=project, check=True)

    rebuild = cli("rebuild", data_dir=data, cwd=project)
    assert rebuild.returncode == 0, rebuild.stdout + rebuild.stderr

    # an unrelated model of the project edited: composed anew, the remapped contract still holds
    composed = set((project / ".rank_pipeline" / "composed").iterdir())
    mart = project / "models" / "marts" / "dim_competitors.sql"
    mart.write_text(mart.read_text().rstrip() + "\n-- edited by the user\n")
    again = cli("rebuild", data_dir=data, cwd=project)
    assert again.returncode == 0, again.stdout + again.stderr
    assert set((project / ".rank_pipeline" / "composed").iterdir()) - composed  # the edit was read
    with duckdb.connect(str(data / "warehouse.duckdb"), read_only=True) as con:
        ranked = con.execute("select count(*) from marts.fct_keyword_rankings_daily where position is not null").fetchone()
        engines = {r[0] for r in con.execute("select distinct search_engine from marts.dim_keywords").fetchall()}
    assert ranked is not None and ranked[0] > 0
    assert engines and engines <= {"google", "bing", "yahoo"}
