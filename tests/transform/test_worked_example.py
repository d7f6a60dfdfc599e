"""The docs' worked example (keyword cannibalisation), run as written: the ``sh`` block of its section
is taken from docs/how-to/changing-models.md and run by bash in a folder holding copies of ``dbt_like_sql/`` and
``examples/``, against a demo data folder (its days the last ones to hold a keyword-day with two URLs, 2 or
more), each command's exit status recorded.

Then checked against ground truth computed here from the published ``marts.fct_keyword_rankings_daily``
(the keyword-days whose ranking variants show two or more URLs): the unit test passed, ``diff`` named
the new model with that many rows, the docs site has its page with its lineage, Dagster materialized
the asset (its row count and column lineage read back from the instance), and the published table after
``rank-pipeline rebuild`` holds exactly those keyword-days with exactly those URLs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from support import command_env, extracted_keywords

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e_worked_example")]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
KEY = dg.AssetKey(["marts", "fct_keyword_cannibalisation_daily"])


def readme_block() -> list[str]:
    """The command lines of the worked example's ``sh`` block in docs/how-to/changing-models.md."""
    text = (ROOT / "docs" / "how-to" / "changing-models.md").read_text()
    section = text.split("## Worked example: keyword cannibalisation", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _env(**extra: str) -> dict[str, str]:
    env = command_env(drop=("DAGSTER_",))
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def demo_days(today: date) -> int:
    """Days of demo ending ``today`` (at least 2) whose sandbox world has a keyword-day ranking with two URLs
    of its domain, plus one day in case the demo starts after midnight, UTC: the world has none on about half
    its days, eight in a row at most in 2026-27 (the worked example's model would be checked on nothing)."""
    from rank_pipeline.sandbox.world import World

    world = World(today=today)
    for back in range(31):
        day = today - timedelta(days=back)
        urls = defaultdict(set)  # (domain, keyword text) -> its ranking URLs that day
        for domain_id, keyword_id in extracted_keywords(world, day):
            url = world.ranking_url(keyword_id, day)
            if url is not None:
                urls[(domain_id, world.keyword(keyword_id, day)["attributes"]["keyword"])].add(url)
        if any(len(u) > 1 for u in urls.values()):
            return max(2, back + 1) + 1
    raise AssertionError(f"the sandbox world has no keyword-day with two URLs of its domain in the 31 days to {today}")


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The demo, then the docs' block run as written: ``(data, work, home, lines, outputs, statuses, stderr)``.

    The block's ``--partition $(date -u +%F)`` and the demo's last day are both today (UTC): when midnight falls
    between the demo's start and the block's end, the two disagree, and the whole example is run again on fresh
    folders (it then runs within one day)."""
    for _ in range(2):
        started = datetime.now(UTC).date()
        ran = _run_example(tmp_path_factory, started)
        if datetime.now(UTC).date() == started:
            return ran
    raise AssertionError("the worked example crossed midnight (UTC) twice in a row")


def _run_example(tmp_path_factory, today: date):
    data = tmp_path_factory.mktemp("example_data")
    days = demo_days(today)
    demo = subprocess.run([str(BIN / "rank-pipeline"), "demo", "--days", str(days), "--in-memory"], capture_output=True,
                          text=True, timeout=1200, env=_env(RANK_PIPELINE_DATA_DIR=str(data)), cwd=data)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    work = tmp_path_factory.mktemp("example_work")
    shutil.copytree(ROOT / "dbt_like_sql", work / "dbt_like_sql")
    shutil.copytree(ROOT / "examples", work / "examples")
    home = tmp_path_factory.mktemp("dagster_home")
    lines = readme_block()
    script = "\n".join(f"echo '@@ {i}'; {line}\necho \"@@ {i} status $?\"" for i, line in enumerate(lines))
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=1800, cwd=work,
                          env=_env(RANK_PIPELINE_DATA_DIR=str(data), DAGSTER_HOME=str(home)))
    outputs, statuses = {}, {}
    for i in range(len(lines)):
        outputs[i] = done.stdout.split(f"@@ {i}\n", 1)[1].split(f"@@ {i} status ", 1)[0]
        statuses[i] = int(re.match(r"\d+", done.stdout.split(f"@@ {i} status ", 1)[1]).group())
    return data, work, home, lines, outputs, statuses, done.stderr


def _line(lines: list[str], words: str) -> int:
    return next(i for i, line in enumerate(lines) if words in line)


def _truth(con) -> dict[tuple, list[str]]:
    urls = defaultdict(set)
    for domain, keyword, day, url in con.execute(
            "select domain_id, keyword, snapshot_date, ranking_url from marts.fct_keyword_rankings_daily").fetchall():
        if url is not None:
            urls[(domain, keyword, day)].add(url)
    return {k: sorted(v) for k, v in urls.items() if len(v) > 1}


def test_every_command_of_the_example_succeeds_as_written(example):
    _, _, _, lines, outputs, statuses, stderr = example
    assert len(lines) >= 8
    diff = _line(lines, "rank-pipeline diff")
    for i, line in enumerate(lines):
        assert statuses[i] == (1 if i == diff else 0), (line, outputs[i], stderr)
    unit = outputs[_line(lines, "rank-pipeline test --unit")]
    assert unit.strip().splitlines()[-1] == "Completed: unit tests 1 passed / 0 failed"


def test_the_example_agrees_with_ground_truth(example):
    data, work, home, lines, outputs, _, _ = example
    with duckdb.connect(str(data / "warehouse.duckdb"), read_only=True) as con:
        truth = _truth(con)
        published = {(d, k, day): list(u) for d, k, day, u in con.execute(
            "select domain_id, keyword, snapshot_date, urls from marts.fct_keyword_cannibalisation_daily").fetchall()}
        last_day = con.execute("select max(snapshot_date) from marts.fct_keyword_rankings_daily").fetchone()[0]
    assert truth, "the demo world has a keyword ranking with two URLs of its domain: the check is not vacuous"
    assert published == truth  # the keyword-days and their URLs, as a set: the published model is right
    diff = outputs[_line(lines, "rank-pipeline diff")]
    assert f"+ marts.fct_keyword_cannibalisation_daily: new model ({len(truth)} rows)" in diff
    from rank_pipeline.settings import models_dir
    from rank_pipeline.transform import load_project

    shipped = load_project(models_dir())
    n = len(shipped.models) + len(shipped.seeds) + 1  # and the example's model
    assert re.search(rf"^changed: 1 of {n} relation\(s\) differ", diff, re.M)

    page = (work / "my_docs" / "marts.fct_keyword_cannibalisation_daily.html").read_text()
    assert "raw.keywords.attributes.results.organic.url" in page and "several_urls_of_one_domain" in page
    assert 'href="marts.fct_keyword_cannibalisation_daily.html"' in (work / "my_docs" / "index.html").read_text()

    with dg.DagsterInstance.from_config(str(home)) as instance:
        event = instance.get_latest_materialization_event(KEY)
        assert event is not None
        meta = event.asset_materialization.metadata
        assert event.asset_materialization.partition == last_day.isoformat()
        # dagster/row_count is the whole table's (rank_pipeline.defs.table_metadata), every day's rows: the
        # test used to count the last day's only, which held while the demo world had rows on one day alone
        assert meta["dagster/row_count"].value == len(truth)
        deps = {(d.asset_key.to_user_string(), d.column_name)
                for d in meta["dagster/column_lineage"].column_lineage.deps_by_column["urls"]}
        assert ("raw/keywords", "attributes.results.organic.url") in deps
        assert ("marts/fct_keyword_rankings_daily", "ranking_url") in deps
        checks = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [dg.AssetCheckKey(KEY, "unique_domain_keyword_day")])
        assert checks, "the model's tests ran as asset checks"
    query = outputs[_line(lines, "rank-pipeline query")]
    if truth:
        first = max(truth, key=lambda k: (k[2], k[1]))
        assert first[1] in query
