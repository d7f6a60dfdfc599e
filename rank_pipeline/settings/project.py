"""One source of each setting in a project: the component's attributes in ``defs.yaml``, the environment
overriding each (:func:`component_settings_from_env` for the component, :func:`project_settings_from_env` for
the command line, which reads the environment alone outside a project).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from datetime import date
from pathlib import Path

from rank_pipeline.settings.accounts import BASE_URL_ENV, AccountConfig, normalise_base_url
from rank_pipeline.settings.at_use import named_variable
from rank_pipeline.settings.component_file import ComponentAttributes, find_component_file, variable_name
from rank_pipeline.settings.engine import ENGINE_ENV
from rank_pipeline.settings.environment import Settings
from rank_pipeline.settings.paths import MODELS_DIR_ENV, models_dir
from rank_pipeline.settings.values import ConfigurationError

__all__ = ["ACCOUNTS_ENV", "component_settings_from_env", "project_settings_from_env"]

ACCOUNTS_ENV = "RANK_TRACKER_ACCOUNTS"

PARTITION_START_ATTRIBUTE = "defs.yaml partition_start"
"""Where a partition start set by the component's attribute comes from, in messages."""


def _set(env: Mapping[str, str], name: str) -> bool:
    """The variable ``name`` is set to something other than blanks (a blank one is unset, as every reader has it)."""
    return bool((env.get(name) or "").strip())


def component_settings_from_env(attributes: ComponentAttributes, project_root: Path | None,
                                env: Mapping[str, str] | None = None) -> Settings:
    """The settings of a component with ``attributes`` in the project at ``project_root``, each overridden by its
    variable in ``env`` (default ``os.environ``); relative paths under ``project_root`` (None: the working folder).

    Raises ConfigurationError: as :meth:`Settings.from_env`; a secret's attribute that is not a variable's name
    (never repeated); an account's key variable unset while a base URL is configured.
    """
    for i, account in enumerate(attributes.accounts or ()):
        variable_name(account.api_key_env, f"defs.yaml attribute accounts[{i}].api_key_env")
    if attributes.alerts is not None:
        variable_name(attributes.alerts.urls_env, "defs.yaml attribute alerts.urls_env")
    env = dict(os.environ if env is None else env)
    root = project_root or Path.cwd()
    given: dict[str, str] = {}
    if attributes.data_dir is not None:
        given["RANK_PIPELINE_DATA_DIR"] = str(root / attributes.data_dir)
    if attributes.keywords_file is not None:
        given["RANK_PIPELINE_KEYWORDS_FILE"] = str(root / attributes.keywords_file)
    if attributes.engine is not None:
        given[ENGINE_ENV] = attributes.engine
    if attributes.schedule is not None:
        given |= {"RANK_PIPELINE_SCHEDULE_CRON": attributes.schedule.cron,
                  "RANK_PIPELINE_SCHEDULE_TIMEZONE": attributes.schedule.timezone}
    if attributes.alerts is not None:
        given["RANK_PIPELINE_ALERT_URLS"] = named_variable(attributes.alerts.urls_env, env)
    if attributes.base_url is not None:
        given[BASE_URL_ENV] = attributes.base_url
    merged = given | {name: value for name, value in env.items() if name not in given or _set(env, name)}
    if attributes.accounts is None or _set(env, ACCOUNTS_ENV):
        settings = Settings.from_env(merged)
    else:  # the key variables are the attributes'; their presence is checked here
        settings = Settings.from_env({k: v for k, v in merged.items() if k != BASE_URL_ENV})
        base_url = normalise_base_url(merged.get(BASE_URL_ENV))
        missing = [a.api_key_env for a in attributes.accounts if not named_variable(a.api_key_env, env)]
        if base_url is not None and missing:
            raise ConfigurationError(f"the vendor's base URL is set but {', '.join(missing)} is not: export "
                                     "each account's key in the variable its api_key_env names")
        settings = replace(settings, base_url=base_url,
                           accounts=tuple(AccountConfig(a.name, a.api_key_env) for a in attributes.accounts))
    if attributes.partition_start is not None and settings.ops.partition_start is None:
        settings = replace(settings, ops=replace(settings.ops, partition_start=date.fromisoformat(
            attributes.partition_start), partition_start_from=PARTITION_START_ATTRIBUTE))
    if project_root is None:
        return settings
    return replace(settings, models_dir=_models_folder(attributes, project_root, env))


def _models_folder(attributes: ComponentAttributes, project_root: Path, env: Mapping[str, str]) -> Path:
    """``RANK_PIPELINE_MODELS_DIR`` when set; else the ``models_dir`` attribute laid over the package's models;
    else the project's own (``[tool.rank_pipeline]``), else the package's (:func:`models_dir`)."""
    if attributes.models_dir is not None and not _set(env, MODELS_DIR_ENV):
        from rank_pipeline.settings.user_project import UserProject

        return UserProject(project_root, (project_root / attributes.models_dir).resolve()).composed()
    return models_dir(env, start=project_root, component=False)


def project_settings_from_env(env: Mapping[str, str] | None = None, start: Path | None = None, *,
                              demo: bool = False) -> Settings:
    """The command line's settings: inside a project (found from ``start``), its component's attributes with
    ``env`` overriding each; elsewhere :meth:`Settings.from_env`. ``demo`` leaves out ``base_url`` and an engine
    other than ``duckdb``.

    Raises ConfigurationError: an attribute refused at its line of ``defs.yaml``, or as
    :func:`component_settings_from_env`.
    """
    env = os.environ if env is None else env
    component = find_component_file(start, env)
    if component is None:
        return Settings.from_env(env)
    attributes = component.attributes
    if demo:
        attributes = attributes.model_copy(update={"base_url": None, "engine": None})  # None: the default, DuckDB
    return component_settings_from_env(attributes, component.root, env)
