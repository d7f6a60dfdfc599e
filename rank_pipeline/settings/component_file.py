"""The project's component file: the pipeline component's attributes in ``defs.yaml`` (under
``src/<root_module>/defs/``, as ``dg`` finds it), their schema (:class:`ComponentAttributes`), and their
reading without Dagster, a wrong attribute refused at its line (:func:`read_component_file`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from croniter import croniter
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
)

from rank_pipeline.settings.engine import ENGINES
from rank_pipeline.settings.project_folder import defs_folder, project_root
from rank_pipeline.settings.values import ConfigurationError

__all__ = ["COMPONENT_TYPE", "Account", "Alerts", "ComponentAttributes", "ComponentFile", "Schedule",
           "defs_yaml_text", "find_component_file", "read_component_file", "variable_name"]

COMPONENT_TYPE = "rank_pipeline.defs.component.RankPipelineComponent"
"""The component's type as ``defs.yaml`` names it."""

VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""An environment variable's name, the only form a secret takes in ``defs.yaml``."""
_ACCOUNT_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TEMPLATE = re.compile(r"\{\{\s*env(?:\.([A-Za-z_][A-Za-z0-9_]*)|\(\s*['\"]([A-Za-z_][A-Za-z0-9_]*)['\"]\s*\))\s*\}\}")
"""Dagster's environment template in an attribute (``{{ env.NAME }}`` or ``{{ env('NAME') }}``), the one kind
the command line renders as ``dg`` does."""


def variable_name(value: str, attribute: str) -> str:
    """``value`` if it is an environment variable's name; else ConfigurationError naming ``attribute``, never
    repeating ``value`` (it may be a key written in clear, so it is checked here rather than by the schema,
    whose errors quote the input)."""
    if not VARIABLE_NAME.match(value):
        raise ConfigurationError(f"{attribute} is not an environment variable's name: give the name of the "
                                 "variable that holds the secret (letters, digits and _), never the secret itself")
    return value


def _engine(value: str | None) -> str | None:
    if value is not None and value not in ENGINES:
        raise ValueError(f"engine {value!r} is not one of {', '.join(ENGINES)}")
    return value


def _partition_start(value: object) -> str | None:
    """A date written bare in YAML (``2026-03-01``) or quoted, as ``YYYY-MM-DD``."""
    if value is None:
        return None
    try:
        if isinstance(value, datetime) or not _DAY.match(str(value)):
            raise ValueError(value)
        return date.fromisoformat(str(value)).isoformat()
    except ValueError:
        raise ValueError(f"partition_start {value!r} is not a date: write it as YYYY-MM-DD, e.g. 2026-03-01 "
                         "(the first daily partition, UTC)") from None


def _base_url(value: str | None) -> str | None:
    if value is not None and not re.match(r"^https?://[^/\s]", value.strip()):
        raise ValueError(f"base_url {value!r} is not an http(s) address, e.g. https://api.example.com")
    return value


def _cron(value: str) -> str:
    if len(value.split()) != 5 or not croniter.is_valid(value):
        raise ValueError(f"cron {value!r} is not a 5-field cron expression (minute hour day month weekday), "
                         "e.g. '15 6 * * *'")
    return value


def _timezone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"timezone {value!r} is not a known time zone: an IANA name such as UTC or "
                         "Europe/Berlin") from None
    return value


def _account_name(value: str) -> str:
    if not _ACCOUNT_NAME.match(value):
        raise ValueError(f"name {value!r} is not 1 to 64 letters, digits, _ and -")
    return value


class _Attributes(BaseModel):
    """A model of ``defs.yaml`` attributes: an unknown key is refused (``dg.Model``'s rule)."""

    model_config = ConfigDict(extra="forbid")


class Account(_Attributes):
    """One account: its name (in snapshots and the warehouse) and the variable holding its key(s)."""

    name: str = Field(description="the account's name: letters, digits, _ and -")
    api_key_env: str = Field(description="the environment variable holding the account's key (or keys, "
                                         "comma-separated); never the key itself")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _account_name(value)


class Schedule(_Attributes):
    """When the daily job runs (``RANK_PIPELINE_SCHEDULE_CRON`` and ``_TIMEZONE`` override it)."""

    cron: str = Field("15 6 * * *", description="5-field cron expression")
    timezone: str = Field("UTC", description="IANA time zone name")

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        return _cron(value)

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        return _timezone(value)


class Alerts(_Attributes):
    """Where alerts go: the variable holding the comma-separated Apprise URLs (they carry tokens)."""

    urls_env: str = Field(description="the environment variable holding the Apprise URLs; never the URLs")


_ENGINE_SCHEMA = {"enum": [*ENGINES], "description": "the model engine: " + " or ".join(ENGINES)}
_DAY_SCHEMA = {"anyOf": [{"type": "string", "pattern": _DAY.pattern}, {"type": "null"}],
               "description": "the first daily partition, YYYY-MM-DD (UTC)"}


class ComponentAttributes(_Attributes):
    """The attributes of the pipeline's component in ``defs.yaml``, every one optional. The environment
    overrides each (``RANK_PIPELINE_DATA_DIR`` the data folder, and so on: docs/reference/settings.md); one
    left out and not in the environment takes its default. Paths are relative to the project's root. Secrets
    are named by their environment variable, never written here."""

    accounts: list[Account] | None = Field(None, description="the accounts to extract; RANK_TRACKER_ACCOUNTS "
                                           "overrides them; omitted: one account 'default'")
    base_url: Annotated[str | None, AfterValidator(_base_url)] = Field(
        None, description="the vendor's base URL; RANK_TRACKER_BASE_URL overrides it; omitted: the embedded sandbox")
    data_dir: str | None = Field(None, description="the data folder; RANK_PIPELINE_DATA_DIR overrides it; "
                                 "omitted: data")
    models_dir: str | None = Field(None, description="your models folder, laid over the package's models; "
                                   "RANK_PIPELINE_MODELS_DIR overrides it; omitted: the project's "
                                   "[tool.rank_pipeline] models_dir, else the package's models")
    keywords_file: str | None = Field(None, description="a keywords file; RANK_PIPELINE_KEYWORDS_FILE overrides it")
    engine: Annotated[str | None, AfterValidator(_engine), WithJsonSchema(_ENGINE_SCHEMA)] = Field(
        None, description="the model engine, duckdb or spark; RANK_PIPELINE_ENGINE overrides it; omitted: duckdb")
    schedule: Schedule | None = Field(None, description="the daily schedule; RANK_PIPELINE_SCHEDULE_CRON and "
                                      "_TIMEZONE override it")
    partition_start: Annotated[str | None, BeforeValidator(_partition_start), WithJsonSchema(_DAY_SCHEMA)] = Field(
        None, description="the first daily partition, YYYY-MM-DD (UTC); RANK_PIPELINE_PARTITION_START overrides "
        "it; omitted: the data folder's first snapshot day, else the project's init day, else today. A day after "
        "the first snapshot day is refused")
    alerts: Alerts | None = Field(None, description="where alerts go; RANK_PIPELINE_ALERT_URLS overrides it")


DEFS_YAML = """\
# The rank pipeline as a Dagster component. Paths are relative to the project's root; secrets are given as
# the names of the environment variables holding them, never their values. The environment overrides each
# attribute (RANK_PIPELINE_DATA_DIR the data folder, RANK_PIPELINE_ENGINE the engine, ...), for rank-pipeline's
# commands as for dg; an attribute left out takes its default.
type: {type}
attributes:
  data_dir: {data_dir}
  engine: duckdb
  schedule:
    cron: "15 6 * * *"
    timezone: UTC
  # partition_start: {started}               # the first daily partition (UTC); left out: the first
  #                                           # snapshot day in data_dir, else init's day, else today
  # base_url: https://api.vendor.example      # left out: the embedded sandbox
  # accounts:
  #   - {{name: default, api_key_env: RANK_TRACKER_API_KEY}}
  # keywords_file: keywords.yml               # once it lists the keywords you track
  # alerts: {{urls_env: RANK_PIPELINE_ALERT_URLS}}
"""


def defs_yaml_text(started: date, data_dir: str = "data") -> str:
    """The component's ``defs.yaml`` as ``rank-pipeline init`` and ``dg scaffold defs`` write it: the documented
    attributes, the optional ones as comments (``started``: the day shown for ``partition_start``)."""
    return DEFS_YAML.format(type=COMPONENT_TYPE, data_dir=data_dir, started=started.isoformat())


@dataclass(frozen=True)
class ComponentFile:
    """The component's ``defs.yaml`` in a project: ``path``, the project's ``root`` (the attributes' paths are
    relative to it) and its ``attributes``."""

    path: Path
    root: Path
    attributes: ComponentAttributes


def _is_component(doc: object) -> bool:
    kind = doc.get("type") if isinstance(doc, dict) else None
    return isinstance(kind, str) and (kind == COMPONENT_TYPE or (
        kind.startswith("rank_pipeline.") and kind.rsplit(".", 1)[-1] == COMPONENT_TYPE.rsplit(".", 1)[-1]))


def _component_docs(path: Path) -> list[tuple[int, dict]]:
    """``(index, document)`` of each document of ``path`` naming the pipeline's component; [] for a file that is
    not YAML (``dg`` reports it)."""
    try:
        return [(i, doc) for i, doc in enumerate(yaml.safe_load_all(path.read_text())) if _is_component(doc)]
    except (OSError, yaml.YAMLError):
        return []


def find_component_file(start: Path | None = None, env: Mapping[str, str] | None = None) -> ComponentFile | None:
    """The component file of the project holding ``start`` (default: the working folder), read; None outside a
    project or without the component; with several, the one whose folder holds ``start``.

    Raises ConfigurationError: a wrong attribute (at its line), or several components none of which holds ``start``.
    """
    found = project_root(start)
    if found is None:
        return None
    root, table = found
    folder = defs_folder(root, table)
    if not folder.is_dir():
        return None
    files = [p for p in sorted(folder.rglob("defs.y*ml")) if p.name in ("defs.yaml", "defs.yml")
             and _component_docs(p)]
    if not files:
        return None
    if len(files) > 1:
        here = (start or Path.cwd()).resolve()
        holding = [p for p in files if here.is_relative_to(p.parent)]
        if len(holding) != 1:
            names = ", ".join(str(p.relative_to(root)) for p in files)
            raise ConfigurationError(f"{root} has {len(files)} rank-pipeline components ({names}): run the command "
                                     "from the folder of the one it is for")
        files = holding
    return read_component_file(files[0], root, env)


def read_component_file(path: Path, root: Path, env: Mapping[str, str] | None = None) -> ComponentFile:
    """The component's attributes in ``path`` (its first document of the component's type), checked, with
    ``{{ env.NAME }}`` rendered from ``env`` (default ``os.environ``).

    Raises ConfigurationError: ``<path>:<line>: <attribute> ...``: an attribute the schema refuses, or a
    secret's attribute that is not a variable's name (never repeating the value).
    """
    import os

    env = os.environ if env is None else env
    text = path.read_text()
    shown = _shown(path)
    try:
        docs = list(yaml.safe_load_all(text))
        nodes = list(yaml.compose_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigurationError(f"{shown}{line}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    index = next(i for i, doc in enumerate(docs) if _is_component(doc))
    raw = docs[index].get("attributes") or {}
    node = _child(nodes[index], "attributes")
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{shown}:{_line(node, nodes[index])}: attributes is not a mapping of the "
                                 "component's attributes")
    rendered = _render(raw, env, shown, node)
    try:
        attributes = ComponentAttributes.model_validate(rendered)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(error["loc"])
        where = _node_at(node, loc) or node or nodes[index]
        raise ConfigurationError(f"{shown}:{_line(where)}: {_problem(loc, error)}") from None
    for i, account in enumerate(attributes.accounts or ()):
        _secret(account.api_key_env, f"accounts[{i}].api_key_env", shown, node, ("accounts", i, "api_key_env"))
    if attributes.alerts is not None:
        _secret(attributes.alerts.urls_env, "alerts.urls_env", shown, node, ("alerts", "urls_env"))
    return ComponentFile(path, root, attributes)


def _shown(path: Path) -> str:
    """``path`` relative to the working folder when it is under it (as a user would type it), else absolute."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _secret(value: str, attribute: str, shown: str, node: yaml.Node | None, loc: tuple) -> None:
    try:
        variable_name(value, attribute)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{shown}:{_line(_node_at(node, loc) or node)}: {exc}") from None


def _render(value: Any, env: Mapping[str, str], shown: str, node: yaml.Node | None, loc: tuple = ()) -> Any:
    """``value`` with each ``{{ env.NAME }}`` replaced by the variable's value (an unset one: ``dg`` renders None,
    and so does this when it is the whole value); another template is refused at its line."""
    if isinstance(value, dict):
        return {k: _render(v, env, shown, node, (*loc, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, env, shown, node, (*loc, i)) for i, v in enumerate(value)]
    if not isinstance(value, str) or "{{" not in value:
        return value
    whole = _TEMPLATE.fullmatch(value.strip())
    if whole is not None:
        return env.get(whole.group(1) or whole.group(2))
    rendered = _TEMPLATE.sub(lambda m: env.get(m.group(1) or m.group(2)) or "", value)
    if "{{" in rendered:
        raise ConfigurationError(f"{shown}:{_line(_node_at(node, loc) or node)}: {_dotted(loc)} holds a template "
                                 "the command line does not render: use {{ env.NAME }} or write the value")
    return rendered


def _dotted(loc: Sequence) -> str:
    """``('accounts', 0, 'name')`` as ``accounts[0].name``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _problem(loc: tuple, error: Mapping[str, Any]) -> str:
    """One line for a schema error at ``loc``: the validator's own words (they name the attribute), else the
    attribute and pydantic's message; an unknown attribute with the known ones."""
    name = _dotted([p for p in loc if not isinstance(p, str) or not p.startswith(("function-", "list["))])
    message = str(error.get("msg", ""))
    if error.get("type") == "extra_forbidden":
        parent: type[BaseModel] = ComponentAttributes
        if len(loc) > 1:
            nested: dict[str, type[BaseModel]] = {"schedule": Schedule, "alerts": Alerts, "accounts": Account}
            parent = nested.get(str(loc[0]), parent)
        owner = "the component" if parent is ComponentAttributes else str(loc[0])
        return f"{name} is not an attribute of {owner}; its attributes are {', '.join(parent.model_fields)}"
    if error.get("type") == "value_error":  # the validator's words start with the attribute's own name
        text, last = message.removeprefix("Value error, "), re.split(r"[.\[]", name)[-1]
        return f"{name}{text[len(last):]}" if last and text.startswith(last + " ") else f"{name}: {text}"
    return f"{name}: {message[:1].lower()}{message[1:]}"


def _child(node: yaml.Node | None, key: object) -> yaml.Node | None:
    """The value node of ``key`` in a mapping node, or item ``key`` of a sequence node; None when absent."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == str(key):
                return v
    elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
        return node.value[key]
    return None


def _node_at(node: yaml.Node | None, loc: Sequence) -> yaml.Node | None:
    """The deepest node of ``node`` along ``loc`` (the value's node; for a key absent, the nearest parent)."""
    for part in loc:
        child = _child(node, part)
        if child is None:
            key = _key_node(node, part)
            return key if key is not None else node
        node = child
    return node


def _key_node(node: yaml.Node | None, key: object) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, _ in node.value:
            if k.value == str(key):
                return k
    return None


def _line(*nodes: yaml.Node | None) -> int:
    """The 1-based line of the first node given that is not None (1 when none is)."""
    node = next((n for n in nodes if n is not None), None)
    return node.start_mark.line + 1 if node is not None else 1
