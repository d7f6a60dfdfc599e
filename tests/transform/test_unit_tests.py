"""SQL unit tests (``unit_tests:`` in a model's .yml) through ``rank-pipeline test``, as a subprocess."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest
from support import rank_pipeline

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "dbt_like_sql"


@pytest.fixture()
def models_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "models"
    shutil.copytree(MODELS, copy)
    return copy


def test_every_mart_unit_test_passes_each_under_a_second(tmp_path):
    done = rank_pipeline("test", "--unit", "--verbose", data_dir=tmp_path, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    passes = re.findall(r"^PASS unit test (\w+)\.(\w+) \(([\d.]+) s\)$", done.stdout, re.M)
    models = {m for m, _, _ in passes}
    marts = {p.stem for p in (MODELS / "marts").glob("*.sql")}
    assert len(marts) >= 16 and marts <= models  # every mart has unit tests
    assert {"keyword_clean_up_is_not_a_reset", "first_snapshot_projects_nothing"} <= {n for _, n, _ in passes}
    assert all(float(s) < 1.0 for _, _, s in passes), passes
    assert done.stdout.strip().splitlines()[-1] == f"Completed: unit tests {len(passes)} passed / 0 failed"


def test_the_quota_fix_is_what_the_unit_tests_prove(models_copy, tmp_path):
    """The mart as it was (a keyword clean-up read as a reset; a projection without a rate) fails exactly
    the unit tests whose given rows hold those cases, and the differing rows are printed."""
    sql = models_copy / "marts" / "fct_quota_cycle_daily.sql"
    text = sql.read_text()
    old_reset = text.replace(
        "and max(case when metric_kind = 'flow' and fell_by_half then 1 else 0 end) over same_snapshot = 1\n"
        "                and coalesce(keywords_removed, 0) * 2 < previous_usage - usage\n", "\n")
    old_projection = old_reset.replace(
        "case when r.cycle_end is not null and r.burn_rate_median_7d is not null\n            then r.usage + greatest",
        "case when r.cycle_end is not null\n            then r.usage + greatest")
    assert old_projection.count("\n") < text.count("\n") and old_projection != old_reset
    sql.write_text(old_projection)
    done = rank_pipeline("test", "--unit", "--select", "fct_quota_cycle_daily", "--models-dir", str(models_copy),
                         data_dir=tmp_path, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    failed = set(re.findall(r"^FAIL unit test fct_quota_cycle_daily\.(\w+)", done.stdout, re.M))
    # the two written for those cases, and the two later ones whose history starts with a snapshot and no rate
    assert failed == {"keyword_clean_up_is_not_a_reset", "first_snapshot_projects_nothing",
                      "an_overdue_reset_keeps_the_invariants", "a_limit_raised_mid_cycle_is_used_from_that_day"}, \
        done.stdout
    # the differing rows: the clean-up day returned as a reset, the projection returned without a rate
    assert "returned but not expected" in done.stdout and "expected but not returned" in done.stdout
    returned = done.stdout.split("returned but not expected")[1]
    assert re.search(r"acme\s+2026-03-11\s+keywords\s+True\s+-155\s+null\s+2026-03-11\s+monthly_assumed", returned)
    assert re.search(r"dataRows\s+4000\s+null\s+null\s+4000\.0", done.stdout)
    from rank_pipeline.transform import load_project

    declared = len(load_project(models_copy).models["fct_quota_cycle_daily"].unit_tests)
    assert declared > 4 and done.stdout.strip().splitlines()[-1] == (
        f"Failed: unit tests {declared - 4} passed / 4 failed")


def test_csv_fixture_given_and_a_broken_test_reported(models_copy, tmp_path):
    """A model added by an analyst: inputs from a CSV fixture file, an expectation that does not hold."""
    marts = models_copy / "marts"
    (marts / "fixtures").mkdir()
    (marts / "fixtures" / "usage.csv").write_text(
        "account,snapshot_date,keywords_usage,keywords_limit\nacme,2026-03-01,10,100\nbeta,2026-03-01,,100\n")
    (marts / "fct_usage_share.sql").write_text(
        "select account, snapshot_date, keywords_usage * 100.0 / keywords_limit as share_pct\n"
        "from staging.stg_usage\n")
    (marts / "fct_usage_share.yml").write_text(textwrap.dedent("""
        models:
          - name: fct_usage_share
            description: Share of the keyword quota used.
            unit_tests:
              - name: share_from_fixture
                given:
                  - {input: staging.stg_usage, fixture: fixtures/usage.csv}
                expect:
                  rows:
                    - {account: acme, snapshot_date: 2026-03-01, share_pct: 10}
                    - {account: beta, snapshot_date: 2026-03-01, share_pct: null}
              - name: wrong_on_purpose
                given:
                  - {input: staging.stg_usage, fixture: fixtures/usage.csv}
                expect:
                  format: csv
                  rows: |
                    account,share_pct
                    acme,11
                    beta,
        """))
    done = rank_pipeline("test", "--unit", "--select", "fct_usage_share", "--models-dir", str(models_copy),
                         data_dir=tmp_path, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL unit test fct_usage_share.wrong_on_purpose" in done.stdout
    assert "share_from_fixture" not in done.stdout  # passing tests are quiet without --verbose
    expected_part, returned_part = done.stdout.split("returned but not expected")
    assert re.search(r"acme\s+11\.0", expected_part) and re.search(r"acme\s+10\.0", returned_part)
    assert "beta" not in expected_part.split("expected but not returned")[1]  # the equal row is not listed


def test_bad_input_is_one_line_and_status_2(models_copy, tmp_path):
    yml = models_copy / "marts" / "fct_ranking_url_flips.yml"
    yml.write_text(yml.read_text().replace("input: marts.fct_keyword_rankings_daily", "input: staging.stg_usage"))
    done = rank_pipeline("test", "--unit", "--models-dir", str(models_copy), data_dir=tmp_path, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "given staging.stg_usage, which the model does not read" in done.stderr
    done = rank_pipeline("test", "--select", "fct_nothing", data_dir=tmp_path, cwd=tmp_path)
    assert done.returncode == 2 and "no such model" in done.stderr
    done = rank_pipeline("test", "--data", data_dir=tmp_path, cwd=tmp_path)  # no published warehouse yet
    assert done.returncode == 2 and "no warehouse at" in done.stderr and "--unit" in done.stderr
