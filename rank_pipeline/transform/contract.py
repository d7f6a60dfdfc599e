"""The vendor's contract (``<models>/sources/vendor_contract.yml``), its one parser: every field of a raw
table's ``attributes`` the models read (:func:`load_contract`, :meth:`Contract.value`;
:class:`ContractError`). Field keys, paths, encodings: docs/reference/vendor-contract.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rank_pipeline.transform.errors import ModelConfigError
from rank_pipeline.transform.json_paths import ABSENT, Step, locate, observed_path, parse_path
from rank_pipeline.transform.timestamps import (
    EPOCH_MILLISECONDS,
    EPOCH_SECONDS,
    ISO8601,
    ISO_TIMESTAMP,
    check_timestamp_format,
    decode_timestamp,
)
from rank_pipeline.transform.yaml_loader import StrictLoader

__all__ = [
    "CONTRACT_FILE",
    "Contract",
    "ContractError",
    "ContractField",
    "Encoding",
    "load_contract",
    "loaded_contract",
]

CONTRACT_FILE = Path("sources") / "vendor_contract.yml"
"""The contract's place in the models folder."""

JsonType = Literal["string", "integer", "number", "boolean", "object", "array"]
FieldType = Literal["string", "integer", "number", "boolean", "object", "array", "timestamp"]
Scalar = str | int | float | bool

_INTEGER_TEXT = re.compile(r"^\s*[+-]?\d+\s*$")
_NUMBER_TEXT = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")
class ContractError(ModelConfigError, ValueError):
    """The contract cannot be read (one line: file, entry, what is wrong); exit 2."""


class Encoding(BaseModel):
    """How the vendor sends a field when not as its ``type`` (docs/reference/vendor-contract.md, "Encodings"):
    ``sent_as`` (the JSON type sent), ``null_values`` (sentinels, compared as sent), ``true_values`` and
    ``false_values`` (a boolean as text), ``timestamp_format`` (``iso8601``, ``epoch_seconds``,
    ``epoch_milliseconds`` or a ``strptime`` format taken as UTC; a ``string`` field: ``strptime`` only).
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    sent_as: JsonType | None = None
    null_values: tuple[Scalar, ...] = Field((), strict=False)
    true_values: tuple[str, ...] = Field((), strict=False)
    false_values: tuple[str, ...] = Field((), strict=False)
    timestamp_format: str | None = None

    def describe(self, field_type: str) -> str:
        """In words: ``integer sent as string, "-" means null``."""
        parts = [f"{field_type} sent as {self.sent_as}"] if self.sent_as not in (None, field_type) else []
        if self.null_values:
            parts.append(", ".join(_show(v) for v in self.null_values) + " means null")
        if self.true_values or self.false_values:
            parts.append("true: " + ", ".join(map(_show, self.true_values)) + "; false: "
                         + ", ".join(map(_show, self.false_values)))
        if self.timestamp_format is not None:
            parts.append(f"a timestamp as {_show(self.timestamp_format)} (UTC)")
        return "; ".join(parts) or f"{field_type} as is"


def _show(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)


class ContractField(BaseModel):
    """One field of one endpoint's records (docs/reference/vendor-contract.md, "Field keys")."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: str = Field(pattern=r"^[a-z_][a-z0-9_]*$")
    path: str
    type: FieldType
    items: JsonType | None = None
    shown: bool
    nullable: bool = False
    null_means: str | None = None
    range: tuple[float, float] | None = Field(None, strict=False)
    values: list[Scalar] | dict[Scalar, Scalar] | None = None
    fold_case: bool = False
    description: str = ""
    examples: tuple[Scalar, ...] = Field((), strict=False)
    encoding: Encoding | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ContractField:
        steps = parse_path(self.path)
        if any(s.every for s in steps) and (self.type != "array" or sum(s.every for s in steps) > 1):
            raise ValueError("[*] projects an array: one [*], in a field of type: array")
        if any(s.selects and not s.every for s in steps) and not self.nullable:
            raise ValueError("a path with [N] or [?key=value] needs nullable: true (an empty array, or no "
                             "element matching, is a null) and its null_means")
        if self.null_means and not self.nullable:
            raise ValueError("null_means needs nullable: true")
        if self.items is not None and self.type != "array":
            raise ValueError("items is for type: array")
        if self.values is not None and (self.type in ("object", "array") or not self.values):
            raise ValueError("values (an enum or a value map) is for a scalar field, with one value at least")
        if self.fold_case and self.values is None:
            raise ValueError("fold_case is for a field with values")
        e = self.encoding
        if e is not None:
            sent = e.sent_as or self.type
            if (e.true_values or e.false_values) and (self.type != "boolean" or sent != "string"):
                raise ValueError("true_values and false_values are for a boolean sent as string")
            if sent != self.type and not (sent == "string" and self.type in ("integer", "number", "boolean")) \
                    and not (self.type == "timestamp" and sent in ("string", "integer", "number")):
                raise ValueError(f"a {self.type} cannot be decoded from {sent}; encodings decode an integer, a "
                                 "number or a boolean sent as string, and sentinels of any type")
            if self.null_values_meaning_null and not self.nullable:
                raise ValueError("null_values need nullable: true (they mean null)")
            if e.timestamp_format is not None:
                check_timestamp_format(e.timestamp_format, self.type, self.sent_as)
        return self

    @cached_property
    def steps(self) -> tuple[Step, ...]:
        """The parsed :attr:`path` (:func:`parse_path`)."""
        return parse_path(self.path)

    @property
    def observed(self) -> str:
        """:attr:`path` as a profile names it (``results.serp[*].rank``; :func:`observed_path`)."""
        return observed_path(self.steps)

    @property
    def selects(self) -> bool:
        """Whether :attr:`path` takes an element of an array (``[N]``, ``[?k=v]`` or ``[*]``)."""
        return any(s.selects for s in self.steps)

    @property
    def null_values_meaning_null(self) -> tuple[Scalar, ...]:
        """The sentinel values the vendor sends for null (:attr:`encoding`'s ``null_values``; () when none)."""
        return self.encoding.null_values if self.encoding is not None else ()

    @property
    def timestamp_format(self) -> str | None:
        """The timestamp format (``iso8601`` by default for a ``timestamp``; None for a field that is none)."""
        declared = self.encoding.timestamp_format if self.encoding is not None else None
        return declared or (ISO8601 if self.type == "timestamp" else None)

    @property
    def sent_as(self) -> str:
        """The JSON type the vendor sends: :attr:`encoding`'s ``sent_as``, else the type of a value map's keys,
        else for a ``timestamp`` a ``number`` in an epoch format and a ``string`` otherwise, else ``type``."""
        declared = self.encoding.sent_as if self.encoding is not None else None
        if declared:
            return declared
        if isinstance(self.values, dict):
            keys = list(self.values)
            if all(isinstance(k, bool) for k in keys):
                return "boolean"
            if all(isinstance(k, int | float) and not isinstance(k, bool) for k in keys):
                return "integer" if all(isinstance(k, int) for k in keys) else "number"
            return "string"
        if self.type == "timestamp":
            return "number" if self.timestamp_format in (EPOCH_SECONDS, EPOCH_MILLISECONDS) else "string"
        return self.type

    @property
    def decoded(self) -> bool:
        """Whether a value as sent is decoded before it is typed (an encoding, values, or a timestamp)."""
        return self.encoding is not None or self.values is not None or self.type == "timestamp"

    @cached_property
    def value_map(self) -> dict[Scalar, Scalar] | None:
        """``{value as sent (case-folded when fold_case): our value}`` of :attr:`values` (an enum maps each
        value to itself); None without values."""
        if self.values is None:
            return None
        pairs = self.values.items() if isinstance(self.values, dict) else ((v, v) for v in self.values)
        return {_folded(k, self.fold_case): v for k, v in pairs}

    def describe_decoding(self) -> str:
        """In words, how a value as sent decodes (for the shape check's lines)."""
        parts = [self.encoding.describe(self.type)] if self.encoding is not None else []
        if self.type == "timestamp" and (self.encoding is None or self.encoding.timestamp_format is None):
            parts.append(f"a timestamp as {_show(ISO8601)}")
        if self.values is not None:
            shown = (", ".join(f"{_show(k)} -> {_show(v)}" for k, v in self.values.items())
                     if isinstance(self.values, dict) else ", ".join(map(_show, self.values)))
            parts.append(f"one of {shown}" + (" (case aside)" if self.fold_case else ""))
        return "; ".join(parts) or f"{self.type} as is"

    def locate(self, attributes: Any) -> tuple[bool, Any]:
        """``(present, value as sent)`` at :attr:`path` in one record's ``attributes``: a missing key (or a
        non-object on the way) is absent; an empty array or no element matching a selector is present and
        None; ``[*]`` gives the list of each element's value (absent in an element: None in the list)."""
        return locate(self.steps, attributes)

    @cached_property
    def array_base(self) -> tuple[tuple[str, ...], int]:
        """The keys up to and including the first that selects (``("results", "serp")``), and its step's index:
        where :meth:`locate_in` starts (ValueError for a path without a selector)."""
        first = next((i for i, s in enumerate(self.steps) if s.selects), None)
        if first is None:
            raise ValueError(f"{self.path} selects no array element")
        return tuple(s.key for s in self.steps[:first + 1]), first

    def locate_in(self, value: Any) -> tuple[bool, Any]:
        """:meth:`locate` from the value found at :attr:`array_base`'s keys (:data:`ABSENT` when nothing is there)."""
        if value is ABSENT:
            return False, None
        first = self.array_base[1]
        return locate(self.steps[first:], {self.steps[first].key: value})

    def decode(self, value: Any) -> tuple[bool, Any]:
        """``(decodes, decoded value)`` of one value as sent (None for a JSON null): a sentinel decodes to
        None; a value outside :attr:`values` does not decode, one inside decodes to our value; a value of
        another type than :attr:`sent_as` (or text that is no integer, number, boolean or timestamp where one
        is sent as text) does not decode. A ``timestamp`` decodes to an aware UTC ``datetime``."""
        if value is None:
            return True, None
        if self.encoding is not None and any(_same(value, n) for n in self.encoding.null_values):
            return True, None
        mapping = self.value_map
        if mapping is not None:
            key = _folded(value, self.fold_case)
            found = next((v for k, v in mapping.items() if _same(key, k)), _MISSING)
            return (False, value) if found is _MISSING else (True, found)
        if not _is_type(value, self.sent_as):
            return False, value
        fmt = self.timestamp_format
        if fmt is not None:
            decoded = decode_timestamp(value, fmt)
            if decoded is None:
                return False, value
            return True, decoded if self.type == "timestamp" else decoded.strftime(ISO_TIMESTAMP)
        if self.sent_as == self.type:
            return True, value
        text = str(value)
        if self.type == "integer":
            return (True, int(text)) if _INTEGER_TEXT.match(text) else (False, value)
        if self.type == "number":
            return (True, float(text)) if _NUMBER_TEXT.match(text) else (False, value)
        assert self.encoding is not None  # a boolean sent as string: sent_as differs from type
        if text in self.encoding.true_values:
            return True, True
        if text in self.encoding.false_values:
            return True, False
        return False, value


_MISSING = object()
def _folded(value: Any, fold: bool) -> Any:
    return value.lower() if fold and isinstance(value, str) else value


def _same(value: Any, sentinel: Scalar) -> bool:
    return type(value) is type(sentinel) and value == sentinel or (
        isinstance(value, int | float) and not isinstance(value, bool) and isinstance(sentinel, int | float)
        and not isinstance(sentinel, bool) and value == sentinel)


def _is_type(value: Any, json_type: str) -> bool:
    if json_type == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if json_type == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, {"string": str, "boolean": bool, "object": Mapping, "array": list}[json_type])


class _EndpointEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    endpoint: str
    fields: list[ContractField]


class _ContractDoc(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    version: int
    contract: dict[str, _EndpointEntry]


@dataclass(frozen=True)
class Contract:
    """Every endpoint's contracted fields (``fields[endpoint]``, in file order), and the file they come from."""

    path: Path
    fields: dict[str, tuple[ContractField, ...]]
    endpoints: dict[str, str]

    def field(self, endpoint: str, path: str) -> ContractField | None:
        """The contracted field at ``path`` of ``endpoint``, or None."""
        return next((f for f in self.fields.get(endpoint, ()) if f.path == path), None)

    @cached_property
    def _by_name(self) -> dict[tuple[str, str], ContractField]:
        return {(e, f.name): f for e, fields in self.fields.items() for f in fields}

    def named(self, endpoint: str, name: str) -> ContractField:
        """The field ``name`` of ``endpoint``. Raises ContractError: no such field (naming the contract's names)."""
        found = self._by_name.get((endpoint, name))
        if found is None:
            names = ", ".join(f.name for f in self.fields.get(endpoint, ())) or "none"
            raise ContractError(f"{self.path}: {endpoint} has no field named {name!r} (its names: {names})")
        return found

    def value(self, endpoint: str, name: str, attributes: Mapping[str, Any]) -> Any:
        """The decoded value of field ``name`` in one record's ``attributes``: None when absent, null, a sentinel or
        undecodable. Raises ContractError: ``endpoint`` has no field ``name``.
        """
        spec = self.named(endpoint, name)
        _, value = spec.locate(attributes)
        if spec.type == "array":
            return value if isinstance(value, list) else None
        decodes, decoded = spec.decode(value)
        return decoded if decodes else None

    def paths(self, endpoint: str) -> set[str]:
        """The observed paths (as a profile names them) the contracted fields of ``endpoint`` account for: each
        field's, its ancestors (``results``, ``results.organic``), the arrays on the way and their elements
        (``results.serp``, ``results.serp[*]``), a matched element's key (``engines[*].name``) and, for arrays,
        their elements (``tagIds[*]``)."""
        out: set[str] = set()
        for f in self.fields.get(endpoint, ()):
            out.add(f.path)
            prefix = ""
            for step in f.steps:
                prefix = f"{prefix}.{step.key}" if prefix else step.key
                out.add(prefix)
                if step.selects:
                    prefix += "[*]"
                    out.add(prefix)
                    if step.match is not None:
                        out.add(f"{prefix}.{step.match[0]}")
            if f.type == "array":
                out.add(f"{prefix}[*]")
        return out

    def reads(self, endpoint: str, path: str, types: set[str] | frozenset[str] = frozenset()) -> bool:
        """Whether the contract reads the observed ``path`` (of JSON ``types``) of ``endpoint``: a contracted
        field, an element of a contracted array, or an ancestor object on the way to one (an ancestor
        holding anything but an object, such as a string ``language`` where ``language.code`` is read, is
        not read)."""
        if self.field(endpoint, path) is not None or any(f.observed == path for f in self.fields.get(endpoint, ())):
            return True
        if path not in self.paths(endpoint):
            return False
        return path.endswith("[*]") or set(types) <= {"object"}


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])


def load_contract(models_dir: Path | str, endpoints: tuple[str, ...] | None = None) -> Contract:
    """The contract of the models folder ``models_dir`` (:data:`CONTRACT_FILE`); ``endpoints``: those extracted
    (another is refused), None: any.

    Raises:
        ContractError: the file is missing, not YAML, or an entry is malformed; an unknown endpoint, a path or
            name twice, or a path inside another field's path.
    """
    path = Path(models_dir) / CONTRACT_FILE
    try:
        doc = yaml.load(path.read_text(), Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except FileNotFoundError:
        raise ContractError(f"{path}: missing; the vendor's contract is declared there (see the project's "
                            "dbt_like_sql/sources/vendor_contract.yml)") from None
    except yaml.YAMLError as exc:
        raise ContractError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    try:
        parsed = _ContractDoc.model_validate(doc)
    except ValidationError as exc:
        raise ContractError(f"{path}: {_problems(exc)}") from None
    unknown = sorted(set(parsed.contract) - set(endpoints)) if endpoints is not None else []
    if unknown:
        raise ContractError(f"{path}: no endpoint {', '.join(unknown)}; the endpoints are {', '.join(endpoints or ())}")
    for endpoint, entry in parsed.contract.items():
        paths: set[str] = set()
        names: set[str] = set()
        for f in entry.fields:
            if f.path in paths:
                raise ContractError(f"{path}: {endpoint}: path {f.path} is declared twice")
            if f.name in names:
                raise ContractError(f"{path}: {endpoint}: name {f.name} is given to two fields")
            paths.add(f.path)
            names.add(f.name)
        for f in entry.fields:
            inner = next((p for p in paths if p.startswith(f.path + ".") or p.startswith(f.path + "[")), None)
            if inner is not None:
                raise ContractError(f"{path}: {endpoint}: {f.path} holds {inner}; a field is a leaf")
        arrays = {observed_path(f.steps[:i + 1])[:-3] for f in entry.fields for i, s in enumerate(f.steps) if s.selects}
        objects = {observed_path(f.steps[:i + 1]) for f in entry.fields for i, s in enumerate(f.steps[:-1])
                   if not s.selects}
        both = sorted(arrays & objects)
        if both:
            raise ContractError(f"{path}: {endpoint}: {both[0]} is read as an array (a selector) and as an object")
    return Contract(path=path, fields={e: tuple(v.fields) for e, v in parsed.contract.items()},
                    endpoints={e: v.endpoint for e, v in parsed.contract.items()})


_LOADED: dict[Path, tuple[bytes, Contract]] = {}


def loaded_contract(models_dir: Path | str) -> Contract:
    """:func:`load_contract` of ``models_dir``, parsed again only when the file changed; the result is shared.
    Raises ContractError as :func:`load_contract`.
    """
    path = (Path(models_dir) / CONTRACT_FILE).resolve()
    try:
        content = path.read_bytes()
    except OSError:
        return load_contract(models_dir)  # raises the one-line error
    cached = _LOADED.get(path)
    if cached is None or cached[0] != content:
        _LOADED[path] = cached = (content, load_contract(models_dir))
    return cached[1]
