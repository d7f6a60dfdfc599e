"""The contract and the staging SQL cannot drift apart: every path a staging model reads is declared, and
every declared path is read (parsed with sqlglot, reported with file and line)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rank_pipeline.settings import models_dir
from rank_pipeline.shape import ContractError, load_contract
from rank_pipeline.shape.sql_paths import paths_read


def drift(project: Path) -> list[str]:
    """One line per path read but not declared (``file:line``) or declared but not read (the contract)."""
    contract = load_contract(project)
    read: dict[str, dict[str, str]] = {}
    for sql in sorted((project / "staging").glob("*.sql")):
        for endpoint, paths in paths_read(sql.read_text()).items():
            for path, line in paths.items():
                read.setdefault(endpoint, {}).setdefault(path, f"{sql}:{line}")
    problems = []
    for endpoint, paths in sorted(read.items()):
        declared = {f.path for f in contract.fields.get(endpoint, ())}
        problems += [f"{where}: reads {endpoint} attributes.{p}, which {contract.path} does not declare"
                     for p, where in sorted(paths.items()) if p not in declared]
    for endpoint, fields in contract.fields.items():
        problems += [f"{contract.path}: {endpoint}.{f.path} is declared but no staging model reads it"
                     for f in fields if f.path not in read.get(endpoint, {})]
    return problems


def test_the_shipped_contract_lists_exactly_the_paths_staging_reads():
    assert drift(models_dir()) == []


@pytest.fixture
def project(tmp_path) -> Path:
    copy = tmp_path / "dbt_like_sql"
    shutil.copytree(models_dir(), copy)
    return copy


def test_a_path_read_but_not_declared_is_named_with_file_and_line(project):
    sql = project / "staging" / "stg_tags.sql"
    text = sql.read_text().replace("as color,", "as color,\n        cast(attributes ->> '$.owner.name' as varchar) as owner,")
    sql.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "owner.name" in t)
    assert drift(project) == [f"{sql}:{line}: reads tags attributes.owner.name, which "
                              f"{project / 'sources' / 'vendor_contract.yml'} does not declare"]


def test_a_path_declared_but_read_by_no_model_is_named(project):
    sql = project / "staging" / "stg_keywords.sql"
    sql.write_text(sql.read_text().replace('            "searchVolume": "BIGINT",\n', "")
                   .replace("attrs.searchVolume as search_volume", "null::bigint as search_volume"))
    assert drift(project) == [f"{project / 'sources' / 'vendor_contract.yml'}: keywords.searchVolume is declared "
                              "but no staging model reads it"]


def test_the_documented_edit_keeps_contract_and_sql_together(project):
    import subprocess

    patch = Path(__file__).resolve().parents[2] / "examples" / "vendor-b" / "vendor-b.patch"
    subprocess.run(["git", "apply", str(patch)], cwd=project.parent, check=True)
    assert drift(project) == []
    assert load_contract(project).field("keywords", "serp.rank").nullable


def test_a_malformed_contract_is_one_line_naming_file_and_entry(project):
    path = project / "sources" / "vendor_contract.yml"
    path.write_text(path.read_text().replace("{path: host, type: string,", "{path: host, type: text,"))
    with pytest.raises(ContractError) as caught:
        load_contract(project)
    assert str(caught.value).startswith(f"{path}: contract.domains.fields.1.type")
    assert "\n" not in str(caught.value)


def test_the_readme_walks_through_the_steps_the_door_test_runs():
    section = (Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "vendor-shape.md").read_text()
    for step in ("RANK_SANDBOX_SHAPE=vendor-b .venv/bin/rank-pipeline run", "rank-pipeline profile",
                 "git apply examples/vendor-b/vendor-b.patch", "rank-pipeline diff", "rank-pipeline rebuild"):
        assert step in section, step
    doors = (Path(__file__).parent / "test_vendor_shape_doors.py").read_text()
    for door in ('cli("run", data_dir=vendor, env=shape)', 'cli("profile"', '"git", "apply", str(PATCH)',
                 'cli("diff"', 'cli("rebuild"'):
        assert door in doors, door


def test_what_the_contract_reads_of_an_observed_path():
    contract = load_contract(models_dir())
    assert contract.reads("keywords", "results.organic.position", {"integer"})
    assert contract.reads("keywords", "results.organic", {"object"})  # on the way to a read field
    assert contract.reads("keywords", "tagIds[*]", {"string"})  # an element of a read array
    assert not contract.reads("keywords", "language", {"string"})  # a string where an object is read
    assert not contract.reads("keywords", "serp.rank", {"integer"})
