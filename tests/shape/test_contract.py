"""The contract is the one home of every vendor path: the staging SQL reads names (no JSON path by hand), every
name the contract declares is read, and the compiled models read every declared path (parsed with sqlglot,
reported with file and line)."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from rank_pipeline.settings import models_dir
from rank_pipeline.shape import ContractError, load_contract
from rank_pipeline.shape.sql_paths import paths_read
from rank_pipeline.transform import load_project


def drift(project: Path) -> list[str]:
    """One line per JSON path a staging model reads by hand (``file:line``: the contract alone holds paths),
    per contract name no staging model reads, and per contracted path the compiled models do not read."""
    contract = load_contract(project)
    problems = []
    names_read: dict[str, set[str]] = {}
    for sql in sorted((project / "staging").glob("*.sql")):
        text = sql.read_text()
        for endpoint, paths in paths_read(text).items():
            problems += [f"{sql}:{line}: reads {endpoint} attributes.{p} by hand; declare it in {contract.path} "
                         "and read its name from vendor." + endpoint for p, line in sorted(paths.items())]
        tree = sqlglot.parse_one(text, read="duckdb")
        for table in tree.find_all(exp.Table):
            if table.db == "vendor":
                names_read.setdefault(table.name, set()).update(c.name for c in tree.find_all(exp.Column))
    compiled: dict[str, set[str]] = {}
    for model in load_project(project).models.values():
        for endpoint, paths in paths_read(model.sql).items():
            compiled.setdefault(endpoint, set()).update(paths)
    for endpoint, fields in contract.fields.items():
        problems += [f"{contract.path}: {endpoint}.{f.name} is declared but no staging model reads it"
                     for f in fields if f.name not in names_read.get(endpoint, set())]
        problems += [f"{contract.path}: {endpoint}.{f.path} is not read by the compiled models"
                     for f in fields if f.path not in compiled.get(endpoint, set())]
    return problems


def test_the_shipped_staging_reads_names_and_the_contract_every_path():
    assert drift(models_dir()) == []


@pytest.fixture
def project(tmp_path) -> Path:
    copy = tmp_path / "dbt_like_sql"
    shutil.copytree(models_dir(), copy)
    return copy


def test_a_path_read_by_hand_is_named_with_file_and_line(project):
    sql = project / "staging" / "stg_tags.sql"
    text = (sql.read_text().replace("from vendor.tags", "from vendor.tags join raw.tags using (id)")
            .replace("as color,", "as color,\n        cast(attributes ->> '$.owner.name' as varchar) as owner,"))
    sql.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "owner.name" in t)
    assert drift(project) == [f"{sql}:{line}: reads tags attributes.owner.name by hand; declare it in "
                              f"{project / 'sources' / 'vendor_contract.yml'} and read its name from vendor.tags"]


def test_a_name_declared_but_read_by_no_model_is_named(project):
    sql = project / "staging" / "stg_keywords.sql"
    sql.write_text(sql.read_text().replace("cast(search_volume as bigint) as search_volume",
                                           "null::bigint as search_volume"))
    assert drift(project) == [f"{project / 'sources' / 'vendor_contract.yml'}: keywords.search_volume is declared "
                              "but no staging model reads it"]


def test_the_documented_remap_is_an_edit_of_the_contract_alone(project):
    import subprocess

    patch = Path(__file__).resolve().parents[2] / "examples" / "vendor-b" / "vendor-b.patch"
    touched = [line[6:] for line in patch.read_text().splitlines() if line.startswith("+++ b/")]
    assert touched == ["dbt_like_sql/sources/vendor_contract.yml"]
    subprocess.run(["git", "apply", str(patch)], cwd=project.parent, check=True)
    assert drift(project) == []
    contract = load_contract(project)
    assert contract.named("keywords", "position").path == "serp.rank" and contract.field("keywords", "serp.rank").nullable
    sql = load_project(project).models["stg_keywords"].sql
    assert '"serp"."rank" as position' in sql and "results" not in sql


def test_a_malformed_contract_is_one_line_naming_file_and_entry(project):
    path = project / "sources" / "vendor_contract.yml"
    path.write_text(path.read_text().replace("path: host, type: string,", "path: host, type: text,"))
    with pytest.raises(ContractError) as caught:
        load_contract(project)
    assert str(caught.value).startswith(f"{path}: contract.domains.fields.1.type")
    assert "\n" not in str(caught.value)


def test_a_key_repeated_in_one_contract_entry_is_refused_not_silently_dropped(project):
    path = project / "sources" / "vendor_contract.yml"
    path.write_text(path.read_text().replace("{name: host, path: host, type: string,",
                                             "{name: host, path: host, type: string, type: integer,"))
    with pytest.raises(ContractError) as caught:
        load_contract(project)
    assert str(caught.value).startswith(f"{path}: not valid YAML")
    assert "duplicate key 'type'" in str(caught.value) and "\n" not in str(caught.value)


def test_the_tutorial_walks_through_the_steps_the_door_tests_run():
    from rank_pipeline.sandbox.shapes import SHAPES

    section = (Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "vendor-shape.md").read_text()
    for step in ("rank-pipeline init my-rank", "RANK_SANDBOX_SHAPE=vendor-d rank-pipeline run",
                 "RANK_SANDBOX_SHAPE=vendor-e rank-pipeline run", "rank-pipeline profile --endpoint keywords",
                 "rank-pipeline profile --suggest > remap.patch", "git apply remap.patch", "rank-pipeline diff",
                 "rank-pipeline rebuild"):
        assert step in section, step
    assert {"vendor-d", "vendor-e"} <= set(SHAPES)
    doors = (Path(__file__).parent / "test_suggest_doors.py").read_text()
    for door in ('cli("run", "--date", DAY, data_dir=data', 'cli("profile", "--suggest"', '"git", "apply", str(patch)',
                 'cli("rebuild"'):
        assert door in doors, door
    assert 'cli("diff"' in (Path(__file__).parent / "test_vendor_shape_doors.py").read_text()


def test_what_the_contract_reads_of_an_observed_path():
    contract = load_contract(models_dir())
    assert contract.reads("keywords", "results.organic.position", {"integer"})
    assert contract.reads("keywords", "results.organic", {"object"})  # on the way to a read field
    assert contract.reads("keywords", "tagIds[*]", {"string"})  # an element of a read array
    assert not contract.reads("keywords", "language", {"string"})  # a string where an object is read
    assert not contract.reads("keywords", "serp.rank", {"integer"})


def test_after_the_remap_python_reads_the_fields_by_name_and_the_lookups_ask_one_engine(project):
    import subprocess

    from rank_pipeline.api.fields import keyword_combination, keyword_search_engines
    from rank_pipeline.sandbox.assumptions import keyword_record
    from rank_pipeline.sandbox.shapes import parse_shape

    default = keyword_record(
        "k1", keyword="red shoes", search_engine="bing", device="mobile",
        location={"code": "2840", "name": "United States", "variant": "Country"}, language_code="en",
        frequency="daily", tag_ids=[], search_volume=10, created_at="2025-01-01T00:00:00Z", position=3,
        url="https://example.com/", captured="2026-11-01T06:00:00Z")
    attributes = parse_shape("vendor-b").keyword(default, date(2026, 11, 1))["attributes"]
    before = load_contract(project)
    assert keyword_combination(attributes, before) is None
    assert keyword_search_engines(attributes, before) == ("google", "bing", "yahoo")
    patch = Path(__file__).resolve().parents[2] / "examples" / "vendor-b" / "vendor-b.patch"
    subprocess.run(["git", "apply", str(patch)], cwd=project.parent, check=True)
    after = load_contract(project)
    assert keyword_combination(attributes, after) == ("red shoes", "bing", "mobile", "2840", "en")
    assert keyword_search_engines(attributes, after) == ("bing",)
    assert keyword_combination(default["attributes"], before) == keyword_combination(attributes, after)
