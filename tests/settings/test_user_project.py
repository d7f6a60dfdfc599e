"""A user's models folder laid over the package's (rank_pipeline.settings.user_project), the upgrade report
(rank_pipeline.cli.project) and the component's attributes turned into settings (rank_pipeline.defs.component),
the environment overriding each."""

from __future__ import annotations

from pathlib import Path

import pytest

from rank_pipeline.cli.project import scaffold_project, upgrade_report
from rank_pipeline.defs.component import Account, RankPipelineComponent
from rank_pipeline.settings import (
    ConfigurationError,
    compose_models,
    find_project,
    models_dir,
    package_models_dir,
)


def _package(tmp_path: Path) -> Path:
    package = tmp_path / "package"
    (package / "marts").mkdir(parents=True)
    (package / "marts" / "a.sql").write_text("select 1 as a")
    (package / "marts" / "b.sql").write_text("select 2 as b")
    return package


def test_the_users_file_replaces_the_packages_and_adds_its_own(tmp_path):
    package, overlay = _package(tmp_path), tmp_path / "models"
    (overlay / "marts").mkdir(parents=True)
    (overlay / "marts" / "a.sql").write_text("select 10 as a")
    (overlay / "marts" / "c.sql").write_text("select 3 as c")
    (overlay / ".hidden.sql").write_text("ignored")
    composed = compose_models(overlay, tmp_path / "composed", package)
    assert {p.relative_to(composed).as_posix(): p.read_text() for p in composed.rglob("*.sql")} == {
        "marts/a.sql": "select 10 as a", "marts/b.sql": "select 2 as b", "marts/c.sql": "select 3 as c"}
    assert compose_models(overlay, tmp_path / "composed", package) == composed  # same inputs, same folder
    (overlay / "marts" / "a.sql").write_text("select 11 as a")
    assert compose_models(overlay, tmp_path / "composed", package) != composed
    assert (package / "marts" / "a.sql").read_text() == "select 1 as a"


def test_models_dir_inside_a_project_is_the_composed_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("RANK_PIPELINE_MODELS_DIR", raising=False)
    project = scaffold_project(tmp_path / "mine", own=["dim_domains"])
    nested = project.root / "src"
    assert find_project(nested) == project
    composed = models_dir(start=nested)
    assert composed.parent == project.root / ".rank_pipeline" / "composed"
    assert (composed / "marts" / "agg_tag_daily.sql").read_bytes() == (
        package_models_dir() / "marts" / "agg_tag_daily.sql").read_bytes()
    assert find_project(tmp_path) is None


def test_upgrade_reports_an_edited_file_whose_default_changed_and_changes_nothing(tmp_path, monkeypatch):
    project = scaffold_project(tmp_path / "mine", own=["dim_domains"])
    owned = project.models / "marts" / "dim_domains.sql"
    assert upgrade_report(project) == []
    owned.write_text(owned.read_text() + "-- mine\n")
    assert upgrade_report(project) == []  # the default did not change: nothing to tell
    record = project.read_defaults()
    project.record_defaults({"marts/dim_domains.sql": "0" * 64}, "0.0.1")  # as if taken from an older release
    [(rel, what, diff)] = upgrade_report(project)
    assert rel == "marts/dim_domains.sql" and "so did yours" in what
    assert "-- mine\n" in "".join(diff) and owned.read_text().endswith("-- mine\n")
    assert set(record) == set(project.read_defaults())


def test_the_component_turns_its_attributes_into_settings_and_the_environment_overrides_them(tmp_path):
    component = RankPipelineComponent(data_dir="rank_data", engine="spark",
                                      accounts=[Account(name="acme", api_key_env="ACME_KEY")])
    settings = component.settings(tmp_path, env={"RANK_PIPELINE_ENGINE": ""})  # blank: unset
    assert settings.data_dir == tmp_path / "rank_data"
    assert settings.engine.engine == "spark"
    overridden = component.settings(tmp_path, env={"RANK_PIPELINE_ENGINE": "duckdb",
                                                   "RANK_PIPELINE_DATA_DIR": str(tmp_path / "elsewhere"),
                                                   "RANK_TRACKER_ACCOUNTS": "globex"})
    assert (overridden.engine.engine, overridden.data_dir) == ("duckdb", tmp_path / "elsewhere")
    assert [a.name for a in overridden.accounts] == ["globex"]
    assert [(a.name, a.api_key_env) for a in settings.accounts] == [("acme", "ACME_KEY")]
    assert settings.models_dir == package_models_dir() and settings.uses_sandbox
    with pytest.raises(ConfigurationError, match="ACME_KEY is not"):
        RankPipelineComponent(base_url="https://api.example.com", accounts=[Account(name="acme", api_key_env="ACME_KEY")]
                              ).settings(tmp_path, env={})


def test_a_secret_written_in_clear_is_refused_without_repeating_it(tmp_path):
    component = RankPipelineComponent(accounts=[Account(name="acme", api_key_env="sk-live-123")])
    with pytest.raises(ConfigurationError, match=r"accounts\[0\]\.api_key_env") as raised:
        component.settings(tmp_path, env={})
    assert "sk-live-123" not in str(raised.value)
    with pytest.raises(ValueError, match="engine 'sparkk' is not one of duckdb, spark"):
        RankPipelineComponent(engine="sparkk")
