"""``rank-pipeline diff`` and ``rank-pipeline test --data`` as a subprocess on a demo data folder."""

from __future__ import annotations

import hashlib
import re
import shutil
import time
from pathlib import Path

import duckdb
import pytest
from support import rank_pipeline

from tests.transform.test_unit_tests import MODELS

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e_diff_door")]


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """A data folder after a 3-day demo: snapshots and a published warehouse."""
    root = tmp_path_factory.mktemp("diff_demo")
    done = rank_pipeline("demo", "--days", "3", "--in-memory", data_dir=root, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def _shipped_relations() -> int:
    """Seeds and models of the shipped project: what diff compares."""
    from rank_pipeline.settings import models_dir
    from rank_pipeline.transform import load_project

    project = load_project(models_dir())
    return len(project.models) + len(project.seeds)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_shipped_models_equal_the_published_warehouse(demo):
    published = demo / "warehouse.duckdb"
    before = _sha(published)
    started = time.monotonic()
    done = rank_pipeline("diff", data_dir=demo, cwd=demo)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    shipped = _shipped_relations()
    assert lines[-1].startswith(f"no difference ({shipped} relations compared")
    assert sum(line.startswith("= ") for line in lines) == shipped
    assert "= marts.fct_quota_cycle_daily: equal" in done.stdout
    assert seconds < 60, seconds  # seconds on the demo data; generous on a loaded machine
    assert _sha(published) == before  # nothing published
    assert sorted(p.name for p in demo.iterdir() if "diff" in p.name) == []  # the scratch file is gone


def test_a_changed_seed_and_a_new_model_are_shown_row_by_row(demo, tmp_path):
    copy = tmp_path / "models"
    shutil.copytree(MODELS, copy)
    (copy / "seeds" / "movement_rules.csv").write_text("significant_move_positions,not_ranking_position\n3,151\n")
    (copy / "marts" / "fct_top3.sql").write_text(
        "select keyword_id, snapshot_date from marts.fct_keyword_rankings_daily where position <= 3\n")
    (copy / "marts" / "fct_top3.yml").write_text(
        "models:\n  - name: fct_top3\n    description: Keyword-days in the top 3.\n")
    with duckdb.connect(str(demo / "warehouse.duckdb"), read_only=True) as con:
        (not_ranking,) = con.execute(
            "select count(*) from marts.fct_keyword_rankings_daily where position is null").fetchone()
        (top3,) = con.execute("select count(*) from marts.fct_keyword_rankings_daily where position <= 3").fetchone()
    assert not_ranking > 0
    done = rank_pipeline("diff", "--models-dir", str(copy), data_dir=demo, cwd=demo)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "~ seeds.movement_rules: 1 added, 1 removed, 0 changed" in out
    block = out.split("~ marts.fct_keyword_rankings_daily: ")[1].split("\n~ ")[0].split("\n= ")[0]
    assert block.startswith("0 added, 0 removed, ")
    assert f"    penalised_position: {not_ranking} value(s) changed" in block
    examples = re.findall(r"^      keyword_id=\S+, snapshot_date=\S+, penalised_position__before=101, "
                          r"penalised_position=151$", block, re.M)
    assert len(examples) == 5
    assert f"+ marts.fct_top3: new model ({top3} rows)" in out
    assert "= marts.fct_quota_cycle_daily: equal" in out  # not downstream of the change
    n = _shipped_relations() + 1  # and the new model
    assert re.match(rf"changed: \d+ of {n} relation\(s\) differ \({n} relations compared in [\d.]+ s\)$",
                    out.strip().splitlines()[-1])


def test_data_tests_on_the_published_warehouse(demo, tmp_path):
    done = rank_pipeline("test", "--data", data_dir=demo, cwd=demo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.fullmatch(r"Completed: data tests \d+ passed / 0 failed", done.stdout.strip().splitlines()[-1])
    copy = tmp_path / "models"
    shutil.copytree(MODELS, copy)
    yml = copy / "marts" / "dim_domains.yml"
    yml.write_text(yml.read_text().replace("    tests:\n", "    tests:\n      - {expression: \"false\", "
                                           "name: never_holds}\n", 1))
    done = rank_pipeline("test", "--select", "dim_domains", "--models-dir", str(copy), data_dir=demo, cwd=demo)
    assert done.returncode == 1, done.stdout + done.stderr
    with duckdb.connect(str(demo / "warehouse.duckdb"), read_only=True) as con:
        (domains,) = con.execute("select count(*) from marts.dim_domains").fetchone()
    assert f"FAIL data test marts.dim_domains.never_holds: {domains} failing row(s)" in done.stdout
    assert re.match(r"Failed: unit tests \d+ passed / 0 failed, data tests \d+ passed / 1 failed",
                    done.stdout.strip().splitlines()[-1])


def test_a_models_folder_that_does_not_build_is_one_line(demo, tmp_path):
    copy = tmp_path / "models"
    shutil.copytree(MODELS, copy)
    (copy / "marts" / "fct_broken.sql").write_text("select no_such_column from marts.dim_domains\n")
    (copy / "marts" / "fct_broken.yml").write_text("models:\n  - name: fct_broken\n    description: Broken.\n"
                                                   "    config: {materialized: table}\n")
    done = rank_pipeline("diff", "--models-dir", str(copy), data_dir=demo, cwd=demo)
    assert done.returncode == 1
    assert "the models folder does not build" in done.stderr and "fct_broken" in done.stderr
    assert done.stderr.strip().count("\n") == 0
