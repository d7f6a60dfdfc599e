"""One source of each setting in a project (rank_pipeline.settings.component_file, .project, .project_folder): the
command line reads the component's attributes in ``defs.yaml``, the environment overriding each; a wrong attribute
is refused at its line; ``dg scaffold defs`` writes the documented attributes; "Open in editor" and messages name
the user's model files, never the composed copy; composing deletes nothing (``folder_lock`` removes stale ones).
"""

from __future__ import annotations

import os
import time
from datetime import date
from pathlib import Path

import pytest
import yaml

from rank_pipeline.cli.args import today
from rank_pipeline.cli.main import main
from rank_pipeline.cli.project import scaffold_project
from rank_pipeline.defs.component import RankPipelineComponent, RankPipelineScaffolder, build_definitions
from rank_pipeline.defs.table_metadata import CODE_REFERENCES
from rank_pipeline.folder_lock import remove_stale_composed
from rank_pipeline.settings import (
    ComponentAttributes,
    ConfigurationError,
    compose_models,
    defs_yaml_text,
    find_component_file,
    find_project,
    load_project_dotenv,
    models_dir,
    package_models_dir,
    project_settings_from_env,
    source_file,
    source_paths,
)
from rank_pipeline.settings.user_project import COMPOSING_PREFIX

CLEAN = {"PATH": os.environ.get("PATH", "")}


def _defs_yaml(project: Path) -> Path:
    return project / "src" / project.name / "defs" / "rank" / "defs.yaml"


def _set(project: Path, line: str, value: str) -> int:
    """Replace the attribute line starting with ``line`` by ``value`` in the project's defs.yaml; returns its line."""
    path = _defs_yaml(project)
    lines = path.read_text().splitlines()
    number = next(i for i, text in enumerate(lines) if text.startswith(line))
    lines[number] = value
    path.write_text("\n".join(lines) + "\n")
    return number + 1


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project made by ``init`` (every model but one read from the package), the working folder inside it."""
    made = scaffold_project(tmp_path / "proj", own=["dim_domains"])
    monkeypatch.chdir(made.root / "src")
    return made.root


def test_init_writes_the_documented_attributes_and_they_pass_the_schema(project):
    text = _defs_yaml(project).read_text()
    assert text == defs_yaml_text(today())
    found = find_component_file()
    assert found is not None and found.root == project
    assert found.attributes == ComponentAttributes.model_validate(yaml.safe_load(text)["attributes"])
    assert (found.attributes.data_dir, found.attributes.engine) == ("data", "duckdb")


def test_the_command_line_reads_defs_yaml_and_the_environment_overrides_it(project):
    _set(project, "  data_dir:", "  data_dir: elsewhere")
    _set(project, "  # keywords_file:", "  keywords_file: keywords.yml")
    _set(project, "  # partition_start:", "  partition_start: 2026-03-01")
    settings = project_settings_from_env(CLEAN)
    assert settings.data_dir == project / "elsewhere"
    assert settings.keywords_file == project / "keywords.yml"
    assert (settings.ops.partition_start, settings.ops.partition_start_from) == (date(2026, 3, 1),
                                                                              "defs.yaml partition_start")
    assert settings.models_dir is not None and source_file(settings.models_dir / "marts" / "dim_domains.sql") == \
        project / "models" / "marts" / "dim_domains.sql"
    env = CLEAN | {"RANK_PIPELINE_DATA_DIR": str(project / "other"), "RANK_PIPELINE_SCHEDULE_CRON": "0 1 * * *",
                   "RANK_PIPELINE_PARTITION_START": "2026-02-01"}
    overridden = project_settings_from_env(env)
    assert overridden.data_dir == project / "other" and overridden.ops.schedule_cron == "0 1 * * *"
    assert overridden.ops.partition_start == date(2026, 2, 1)
    assert project_settings_from_env(CLEAN, start=project.parent).data_dir == Path("data").resolve()  # outside


def test_the_models_dir_attribute_is_the_models_folder_of_every_reader(project):
    (project / "mine" / "marts").mkdir(parents=True)
    (project / "mine" / "marts" / "agg_tag_daily.sql").write_text("select 1 as x\n")
    _set(project, "  engine:", "  engine: duckdb\n  models_dir: mine")
    composed = models_dir(CLEAN)
    assert (composed / "marts" / "agg_tag_daily.sql").read_text() == "select 1 as x\n"
    assert project_settings_from_env(CLEAN).models_dir == composed
    assert source_file(composed / "marts" / "agg_tag_daily.sql") == project / "mine" / "marts" / "agg_tag_daily.sql"
    assert source_file(composed / "marts" / "dim_domains.sql") == package_models_dir() / "marts" / "dim_domains.sql"


@pytest.mark.parametrize(("attribute", "value", "said"), [
    ("  engine:", "  engine: sparkle", "engine 'sparkle' is not one of duckdb, spark"),
    ("  engine:", "  enigne: duckdb", "enigne is not an attribute of the component; its attributes are accounts,"),
    ("  # partition_start:", "  partition_start: 2026-3-1", "partition_start '2026-3-1' is not a date"),
    ("    cron:", "    cron: '15 6 * *'", "schedule.cron '15 6 * *' is not a 5-field cron expression"),
    ("  # accounts:", "  accounts: [{name: acme, api_key_env: sk-live-0123}]",
     "accounts[0].api_key_env is not an environment variable's name"),
])
def test_a_wrong_attribute_is_refused_at_its_line_in_one_line(project, capsys, attribute, value, said):
    line = _set(project, attribute, value)
    with pytest.raises(ConfigurationError) as refused:
        project_settings_from_env(CLEAN)
    assert str(refused.value).startswith(f"proj/defs/rank/defs.yaml:{line}: {said}")
    assert "\n" not in str(refused.value) and "sk-live-0123" not in str(refused.value)
    assert main(["query", "select 1"]) == 2  # any command that reads the settings
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {refused.value}"]


def test_dg_environment_templates_are_rendered_and_other_templates_refused(project):
    _set(project, "  data_dir:", "  data_dir: '{{ env.RANK_DATA }}'")
    assert project_settings_from_env(CLEAN | {"RANK_DATA": str(project / "x")}).data_dir == project / "x"
    _set(project, "  data_dir:", "  data_dir: '{{ project_root }}/x'")
    with pytest.raises(ConfigurationError, match=r"defs.yaml:\d+: data_dir holds a template"):
        project_settings_from_env(CLEAN)


def test_a_create_dagster_project_without_rank_pipelines_table_is_found(tmp_path):
    root = tmp_path / "analytics"
    (root / "src" / "analytics" / "defs" / "rank").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[tool.dg]\ndirectory_type = "project"\n\n[tool.dg.project]\n'
                                         'root_module = "analytics"\n')
    (root / "src" / "analytics" / "defs" / "rank" / "defs.yaml").write_text(defs_yaml_text(date(2026, 3, 1),
                                                                                           "rank_data"))
    (root / ".env").write_text("# the project's\nexport DAGSTER_HOME='/srv/home'  \nRANK_X=1 # note\n")
    settings = project_settings_from_env(CLEAN, start=root / "src")
    assert settings.data_dir == root / "rank_data" and settings.models_dir == package_models_dir()
    env: dict[str, str] = {"RANK_X": "kept"}
    assert load_project_dotenv(env, start=root) == ["DAGSTER_HOME"]
    assert env == {"RANK_X": "kept", "DAGSTER_HOME": "/srv/home"}


def test_dg_scaffold_defs_writes_the_documented_attributes(tmp_path):
    import dagster as dg

    target = tmp_path / "defs" / "rank"
    target.mkdir(parents=True)
    request = dg.ScaffoldRequest(type_name="rank_pipeline.defs.component.RankPipelineComponent", target_path=target,
                                 scaffold_format="yaml", project_root=tmp_path, params=None)
    RankPipelineScaffolder().scaffold(request)
    doc = yaml.safe_load((target / "defs.yaml").read_text())
    assert doc["type"] == "rank_pipeline.defs.component.RankPipelineComponent"
    assert doc["attributes"] == {"data_dir": "data", "engine": "duckdb",
                                 "schedule": {"cron": "15 6 * * *", "timezone": "UTC"}}
    assert "# partition_start:" in (target / "defs.yaml").read_text()
    assert RankPipelineComponent.model_validate(doc["attributes"]).engine == "duckdb"


def test_code_references_point_at_the_users_model_file_never_the_composed_copy(project):
    settings = RankPipelineComponent(data_dir="data").settings(project, env=CLEAN)
    defs = build_definitions(settings, find_project(project))
    references = {}
    for spec in defs.resolve_all_asset_specs():
        value = spec.metadata.get(CODE_REFERENCES)
        if value is not None:
            references["/".join(spec.key.path)] = [r.file_path for r in value.code_references]
    assert references["marts/dim_domains"] == [str(project / "models" / "marts" / "dim_domains.sql")]
    assert references["marts/agg_tag_daily"] == [str(package_models_dir() / "marts" / "agg_tag_daily.sql")]
    assert references["seeds/ctr_curve"] == [str(project / "models" / "seeds" / "ctr_curve.csv")]
    assert not [path for paths in references.values() for path in paths if ".rank_pipeline" in path]
    sql_path = next(s for s in defs.resolve_all_asset_specs() if s.key.path == ["marts", "dim_domains"]).metadata
    assert sql_path["sql_path"].path == str(project / "models" / "marts" / "dim_domains.sql")


def test_messages_name_the_users_file(project):
    composed = project_settings_from_env(CLEAN).models_dir
    assert composed is not None
    message = f"{composed / 'marts' / 'dim_domains.sql'}: references staging.nope; and {composed}/marts/x.yml: bad"
    assert source_paths(message) == (f"{project / 'models' / 'marts' / 'dim_domains.sql'}: references "
                                     f"staging.nope; and {project / 'models' / 'marts' / 'x.yml'}: bad")


def test_composing_deletes_nothing_and_folder_lock_removes_stale_compositions(tmp_path):
    package, overlay, into = tmp_path / "package", tmp_path / "models", tmp_path / ".rank_pipeline" / "composed"
    (package / "marts").mkdir(parents=True)
    (package / "marts" / "a.sql").write_text("select 1 as a")
    (overlay / "marts").mkdir(parents=True)
    first = compose_models(overlay, into, package)
    (overlay / "marts" / "a.sql").write_text("select 2 as a")
    second = compose_models(overlay, into, package)
    leftover = into / f"{COMPOSING_PREFIX}dead"
    leftover.mkdir()
    assert sorted(p.name for p in into.iterdir()) == sorted([first.name, second.name, leftover.name])
    day_ago = time.time() - 2 * 86400
    for old in (first, leftover):
        os.utime(old, (day_ago, day_ago))
    assert remove_stale_composed(tmp_path / "elsewhere" / "models-0") == []  # not a project's composed folder
    assert remove_stale_composed(second) == [leftover, first]
    assert [p.name for p in into.iterdir()] == [second.name]
