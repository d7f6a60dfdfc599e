"""The user's cache of results derived from the models' files (:mod:`rank_pipeline.transform.shared_cache`):
a process with a new data folder reads the lineage, the models' compiled SQL and dependencies another process
kept (parsing nothing), equal to what the analysis gives; a changed model, a damaged entry or another version of the code is a miss; a
lineage with errors (whose text may name the project's folder) is not kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rank_pipeline.transform import lineage, load_project, shared_cache
from rank_pipeline.transform.dependencies import condition_error, sql_dependencies
from rank_pipeline.transform.lineage import _analyse, project_lineage

SHIPPED = Path(__file__).resolve().parents[2] / "dbt_like_sql"
MODEL = "with k as (select * from raw.keywords) select k.id from k join seeds.ctr_curve as c on c.position = 1"


@pytest.fixture
def user_cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    shared_cache._code_folder.cache_clear()
    monkeypatch.setattr(lineage, "_MEMO", {})
    yield tmp_path / "xdg" / "rank-pipeline"
    shared_cache._code_folder.cache_clear()


def _entries(root: Path, kind: str) -> list[Path]:
    return sorted(root.glob(f"*/{kind}-*.json"))


def test_another_process_reads_the_lineage_and_dependencies_the_analysis_gives(user_cache, tmp_path):
    project = load_project(SHIPPED)
    kept = project_lineage(project, tmp_path / "data_a" / "cache")
    assert len(_entries(user_cache, "lineage")) == 1
    assert len(_entries(user_cache, "dependencies")) == len(project.models)
    # a new process with a new data folder: read from the user's cache, equal to a fresh analysis here
    code = ("import json, sqlglot\n"
            "from rank_pipeline.transform import lineage, load_project\n"
            "def refused(*args, **kwargs):\n"
            "    raise AssertionError('parsed or analysed again')\n"
            "sqlglot.parse = sqlglot.parse_one = lineage._analyse = refused\n"
            f"p = load_project({str(SHIPPED)!r})\n"
            f"l = lineage.project_lineage(p, {str(tmp_path / 'data_b' / 'cache')!r})\n"
            "print(json.dumps({'lineage': l.to_json(),\n"
            "                  'models': {m.name: [m.sql, sorted(m.depends_on)] for m in p.models.values()}}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "XDG_CACHE_HOME": str(user_cache.parent)})
    assert done.returncode == 0, done.stderr
    other = json.loads(done.stdout)
    assert other["lineage"] == kept.to_json() == _analyse(project, project.topological_order()).to_json()
    # the models' SQL (``vendor.<endpoint>`` compiled) and dependencies equal this process's parse
    assert other["models"] == {m.name: [m.sql, sorted(m.depends_on)] for m in project.models.values()}
    assert list((tmp_path / "data_b" / "cache").glob("lineage-*.json")), "the data folder's copy is written too"


def test_a_changed_model_or_a_damaged_entry_is_analysed_again(user_cache):
    assert sql_dependencies(MODEL) == {"raw.keywords", "seeds.ctr_curve"}
    [entry] = _entries(user_cache, "dependencies")
    assert json.loads(entry.read_text()) == ["raw.keywords", "seeds.ctr_curve"]
    entry.write_text("[not json")
    assert sql_dependencies(MODEL) == {"raw.keywords", "seeds.ctr_curve"}
    assert sql_dependencies(MODEL.replace("raw.keywords", "raw.domains")) == {"raw.domains", "seeds.ctr_curve"}
    assert len(_entries(user_cache, "dependencies")) == 2
    assert condition_error("position between 1 and 10") is None
    assert condition_error("position between") is not None
    assert condition_error("position between") == condition_error("position between")  # the kept answer


def test_another_version_of_the_code_keeps_a_folder_of_its_own_and_old_ones_go(user_cache):
    sql_dependencies(MODEL)
    [current] = [p for p in user_cache.iterdir() if p.is_dir()]
    for i in range(shared_cache.KEEP_CODE_FOLDERS + 2):
        old = user_cache / f"old{i}"
        old.mkdir()
        os.utime(old, (1_000_000 + i, 1_000_000 + i))
    shared_cache._code_folder.cache_clear()
    (current / f"dependencies-{shared_cache.digest(MODEL)}.json").unlink()
    current.rmdir()  # as if this version's folder were new: it is made and the oldest go
    sql_dependencies(MODEL)
    left = sorted(p.name for p in user_cache.iterdir())
    assert len(left) == shared_cache.KEEP_CODE_FOLDERS and current.name in left
    assert "old0" not in left and f"old{shared_cache.KEEP_CODE_FOLDERS + 1}" in left


def test_a_lineage_with_errors_is_not_kept_in_the_users_cache(user_cache, tmp_path, monkeypatch):
    def broken(sql, schema):
        raise ValueError("cannot")

    monkeypatch.setattr(lineage, "_model_lineage", broken)
    result = project_lineage(load_project(SHIPPED))
    assert result.errors and not _entries(user_cache, "lineage")


def test_the_users_cache_folder_follows_xdg_cache_home_when_absolute(tmp_path):
    from rank_pipeline.settings import shared_cache_dir

    assert shared_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "rank-pipeline"
    assert shared_cache_dir({"XDG_CACHE_HOME": "relative"}) == Path.home() / ".cache" / "rank-pipeline"
    assert shared_cache_dir({}) == Path.home() / ".cache" / "rank-pipeline"
