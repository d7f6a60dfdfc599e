"""The keywords file: its pydantic schema, its JSON Schema (``examples/keywords.schema.json``) and its loading
with line numbers (:func:`load_keywords_file`); format: docs/concepts/keywords.md, "The keywords file".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints
from pydantic import ValidationError as PydanticValidationError

from rank_pipeline.errors import EXIT_USAGE, RankPipelineError

__all__ = [
    "FILE_VERSION",
    "DomainEntry",
    "KeywordGroup",
    "KeywordsFile",
    "KeywordsFileError",
    "LoadedFile",
    "json_schema",
    "load_keywords_file",
]

FILE_VERSION = 1
LOCATION_PATTERN = r"^\s*([0-9]+|[A-Za-z]{2})\s*$"
"""A geo-target id (digits) or an ISO 3166-1 alpha-2 country code (spec: never a place name)."""


class KeywordsFileError(RankPipelineError, ValueError):
    """The keywords file cannot be read or does not fit the schema: ``problems`` holds one
    ``<file>:<line>: <field>: <what to do>`` line each; ``str()`` is the first and how many more.
    """

    exit_status = EXIT_USAGE

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        more = f" (and {len(self.problems) - 1} more problem(s))" if len(self.problems) > 1 else ""
        super().__init__(self.problems[0] + more)


def _id_as_text(value: Any) -> Any:
    """YAML reads ``2826`` as an integer: a geo-target id is sent as a string (spec), so take its digits."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    return value


Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Location = Annotated[
    str,
    BeforeValidator(_id_as_text),
    StringConstraints(strip_whitespace=True, pattern=LOCATION_PATTERN),
    Field(description="A geo-target id as a string (e.g. \"2840\") or an ISO 3166-1 alpha-2 country "
                      "code (e.g. \"US\"); place names are not accepted. Look ids up with "
                      "GET /v1/locations."),
]
Language = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, pattern=r"^\S+$"),
                     Field(description="A language code of the engine (e.g. \"en\"), quoted in YAML. The "
                                       "Global language \"0000\" cannot be tracked.")]


class KeywordGroup(BaseModel):
    """Words tracked on every combination of engines x devices x locations x languages, at one frequency."""

    model_config = ConfigDict(extra="forbid", title="Keyword group")

    name: Text | None = Field(default=None, description="An optional label shown in the plan.")
    words: list[Text] = Field(min_length=1, description="The search terms (non-blank).")
    engines: list[Text] = Field(min_length=1, description="Search engines, e.g. google, bing, yahoo.")
    devices: list[Text] = Field(min_length=1, description="Devices, e.g. desktop, mobile.")
    locations: list[Location] = Field(min_length=1)
    languages: list[Language] = Field(min_length=1)
    frequency: Text = Field(description="How often the vendor checks the SERP, e.g. daily; the values "
                                        "the API accepts are listed in its errors' meta.allowed.")
    tags: list[Text] = Field(default_factory=list, description="Tag names kept with the group (the spec "
                                                               "shows no tagging endpoint: not sent).")


class DomainEntry(BaseModel):
    """One domain of the account and the keyword groups it should track."""

    model_config = ConfigDict(extra="forbid", title="Domain")

    domain: Text = Field(description="The domain's name as the API reports it (attributes.domain), "
                                     "e.g. acme-shop.com; resolved to its id.")
    account: Text | None = Field(default=None, description="The configured account holding the domain "
                                                           "(needed only when several accounts hold "
                                                           "a domain of this name).")
    groups: list[KeywordGroup] = Field(min_length=1)


class KeywordsFile(BaseModel):
    """A keywords file (docs/concepts/keywords.md, "The keywords file")."""

    model_config = ConfigDict(
        extra="forbid", title="rank-pipeline keywords file",
        json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"})

    version: int = Field(default=FILE_VERSION, ge=FILE_VERSION, le=FILE_VERSION,
                         description="The file format version: 1.")
    domains: list[DomainEntry] = Field(min_length=1)


@dataclass(frozen=True)
class LoadedFile:
    """A valid keywords file: ``model`` and the line (1-based) of every node, by its path of keys and
    indexes (``("domains", 0, "groups", 1, "words", 2)``); :meth:`line` falls back to the nearest parent."""

    path: Path
    model: KeywordsFile
    lines: dict[tuple, int]

    def line(self, loc: Sequence) -> int:
        loc = tuple(loc)
        while loc and loc not in self.lines:
            loc = loc[:-1]
        return self.lines.get(loc, 1)

    def where(self, loc: Sequence) -> str:
        """``<file>:<line>: <field>`` for the node at ``loc``."""
        return f"{self.path}:{self.line(loc)}: {field_name(loc)}"


def field_name(loc: Sequence) -> str:
    """``("domains", 0, "groups", 1, "words")`` -> ``domains[0].groups[1].words``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _node_lines(node: yaml.Node, loc: tuple, lines: dict[tuple, int]) -> None:
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else str(key.start_mark.line)
            _node_lines(value, (*loc, name), lines)
            lines[(*loc, name)] = key.start_mark.line + 1  # a field is named on its key's line
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _node_lines(item, (*loc, i), lines)


_HINTS = {
    "extra_forbidden": "is not a field of the keywords file; remove it or check its spelling",
    "missing": "is required",
}


def _message(error: Mapping[str, Any]) -> str:
    """One line for one of pydantic's error details (``type``, ``loc``, ``input``, ``msg``)."""
    kind = error["type"]
    if kind in _HINTS:
        return _HINTS[kind]
    if kind == "string_pattern_mismatch" and "locations" in error["loc"]:
        return (f"{json.dumps(error['input'])} is not a location: a location is a geo-target id as a string "
                "(e.g. \"2840\") or an ISO 3166-1 alpha-2 country code (e.g. \"US\"), never a place name; "
                "look ids up with GET /v1/locations?q=<name>")
    if kind == "string_type" and "languages" in error["loc"]:
        return (f"{error['input']!r} is not a string: quote language codes in YAML (e.g. \"en\"; an unquoted "
                "0000 reads as a number)")
    return error["msg"][0].lower() + error["msg"][1:]


def load_keywords_file(path: Path | str) -> LoadedFile:
    """Read and validate a keywords file; returns a :class:`LoadedFile` (the model and the line of every node).

    Raises KeywordsFileError: missing, unreadable, not YAML, or not fitting the schema; one problem per line,
    each naming the file, line and field.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KeywordsFileError([f"{path}: cannot read the keywords file ({exc.__class__.__name__}: "
                                 f"{getattr(exc, 'strerror', None) or exc}); pass the path of a YAML file"]) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise KeywordsFileError([f"{path}:{line}: (YAML): {problem}; fix the YAML syntax"]) from None
    if node is None or not isinstance(data, dict):
        raise KeywordsFileError([f"{path}:1: (top level): the file must be a mapping with a `domains:` list "
                                 "(see examples/keywords.yml)"])
    lines: dict[tuple, int] = {}
    _node_lines(node, (), lines)
    probe = LoadedFile(path, KeywordsFile.model_construct(domains=[]), lines)  # for its where() only
    try:
        model = KeywordsFile.model_validate(data)
    except PydanticValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = tuple(part for part in error["loc"] if not (isinstance(part, str) and part.startswith("function-")))
            problems.append(f"{probe.where(loc)}: {_message(error)}")
        raise KeywordsFileError(problems) from None
    problems = []
    for di, entry in enumerate(model.domains):
        for gi, group in enumerate(entry.groups):
            for field in ("words", "engines", "devices", "locations", "languages"):
                seen: dict[str, int] = {}
                for i, value in enumerate(getattr(group, field)):
                    key = value if field == "words" else value.lower()
                    if key in seen:
                        loc = ("domains", di, "groups", gi, field, i)
                        problems.append(f"{probe.where(loc)}: {value!r} is listed twice in this group "
                                        f"(also item {seen[key]}); list it once")
                    seen.setdefault(key, i)
    if problems:
        raise KeywordsFileError(problems)
    return LoadedFile(path, model, lines)


def json_schema() -> dict:
    """The keywords file's JSON Schema (draft 2020-12), as published in ``examples/keywords.schema.json``."""
    return KeywordsFile.model_json_schema()


if __name__ == "__main__":
    print(json.dumps(json_schema(), indent=2))
