"""The vendor's contract: every field of a raw table's JSON ``attributes`` that the models read, each with
its name, its JSON path, its type and how the vendor sends it.

The contract (``<models>/sources/vendor_contract.yml``) is the one place a vendor path is written. Per
endpoint (raw table), each field has:

- ``name``: the column staging works with (``position``, ``ranking_url``); the relation ``vendor.<endpoint>``
  a staging model reads holds one column per field under this name (:mod:`rank_pipeline.transform.flatten`);
- ``path``: dotted below the record's ``attributes`` (``results.organic.position``);
- ``type``: the JSON type of the decoded value (``items``: an array's element type), ``range`` of a number;
- ``shown`` (the spec shows it, else an assumption), ``nullable`` and ``null_means``, ``description``,
  ``examples`` (values as the vendor sends them, for the candidates of a remap);
- ``encoding`` (optional): how the vendor sends it when not as ``type`` (:class:`Encoding`: an integer as
  text, values that mean null, a boolean as text, a timestamp in another format than ISO 8601).

One parser, here, for every reader: the model runner derives the flattening SQL from it, the shape check
(:mod:`rank_pipeline.shape.check`) measures the records against it, and the Python readers of a record
(:meth:`Contract.value`: the lookups, keywords plan and apply) read a field by its name through it. A remap
of the vendor's shape is an edit of this file alone. Errors: one :class:`ContractError` line naming the file,
the entry and what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rank_pipeline.transform.errors import ModelConfigError
from rank_pipeline.transform.yaml_loader import StrictLoader

__all__ = [
    "CONTRACT_FILE",
    "Contract",
    "ContractError",
    "ContractField",
    "Encoding",
    "ISO_TIMESTAMP",
    "load_contract",
    "loaded_contract",
]

CONTRACT_FILE = Path("sources") / "vendor_contract.yml"
"""The contract's place in the models folder."""

JsonType = Literal["string", "integer", "number", "boolean", "object", "array"]
Scalar = str | int | float | bool

_INTEGER_TEXT = re.compile(r"^\s*[+-]?\d+\s*$")
_TIMESTAMP_FORMAT = re.compile(r"(?:[^%]|%[YmdHMS%])*")
ISO_TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"
"""The text a field with a ``timestamp_format`` decodes to (ISO 8601, UTC, to the second)."""
_NUMBER_TEXT = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")


class ContractError(ModelConfigError, ValueError):
    """The contract cannot be read (one line: file, entry, what is wrong); exit 2."""


class Encoding(BaseModel):
    """How the vendor sends a field when not as its declared ``type``.

    Attributes:
        sent_as: the JSON type of the values sent (``string`` for an integer sent as text; default the
            field's own type, for a field whose only encoding is a sentinel).
        null_values: values that mean null (a sentinel such as ``"-"`` or ``-1``), compared as sent.
        true_values, false_values: a boolean sent as text (``["yes"]``, ``["no"]``).
        timestamp_format: a timestamp (a ``string`` field) sent in another format than the ISO 8601 the
            staging models cast, as a ``strptime`` format of ``%Y %m %d %H %M %S`` and literal text
            (``"%d.%m.%Y %H:%M"``), the time taken as UTC; it decodes to ``YYYY-MM-DDTHH:MM:SSZ``
            (:data:`ISO_TIMESTAMP`), in Python and in the generated SQL alike.
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
    """One field of one endpoint's records (module doc)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: str = Field(pattern=r"^[a-z_][a-z0-9_]*$")
    path: str = Field(pattern=r"^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$")
    type: JsonType
    items: JsonType | None = None
    shown: bool
    nullable: bool = False
    null_means: str | None = None
    range: tuple[float, float] | None = Field(None, strict=False)
    description: str = ""
    examples: tuple[Scalar, ...] = Field((), strict=False)
    encoding: Encoding | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ContractField:
        if self.null_means and not self.nullable:
            raise ValueError("null_means needs nullable: true")
        if self.items is not None and self.type != "array":
            raise ValueError("items is for type: array")
        e = self.encoding
        if e is not None:
            sent = e.sent_as or self.type
            if (e.true_values or e.false_values) and (self.type != "boolean" or sent != "string"):
                raise ValueError("true_values and false_values are for a boolean sent as string")
            if sent != self.type and not (sent == "string" and self.type in ("integer", "number", "boolean")):
                raise ValueError(f"a {self.type} cannot be decoded from {sent}; encodings decode an integer, a "
                                 "number or a boolean sent as string, and sentinels of any type")
            if self.null_values_meaning_null and not self.nullable:
                raise ValueError("null_values need nullable: true (they mean null)")
            if e.timestamp_format is not None:
                _check_timestamp_format(e.timestamp_format, self.type, sent)
        return self

    @property
    def null_values_meaning_null(self) -> tuple[Scalar, ...]:
        """The sentinel values the vendor sends for null (:attr:`encoding`'s ``null_values``; () when none)."""
        return self.encoding.null_values if self.encoding is not None else ()

    @property
    def sent_as(self) -> str:
        """The JSON type the vendor sends (the declared ``type`` unless :attr:`encoding` says otherwise)."""
        return (self.encoding.sent_as if self.encoding is not None else None) or self.type

    def keys(self) -> list[str]:
        """The JSON keys of :attr:`path` below the record's ``attributes``, outermost first."""
        return self.path.split(".")

    def decode(self, value: Any) -> tuple[bool, Any]:
        """``(decodes, decoded value)`` of one value as sent (None for a JSON null): a sentinel decodes to
        None; a value of another type than :attr:`sent_as` (or text that is no integer, number or boolean
        where one is sent as text) does not decode."""
        if value is None:
            return True, None
        if self.encoding is not None and any(_same(value, n) for n in self.encoding.null_values):
            return True, None
        if not _is_type(value, self.sent_as):
            return False, value
        if self.encoding is not None and self.encoding.timestamp_format is not None:
            try:
                return True, datetime.strptime(value, self.encoding.timestamp_format).strftime(ISO_TIMESTAMP)
            except ValueError:
                return False, value
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


def _check_timestamp_format(fmt: str, field_type: str, sent: str) -> None:
    """Raises ValueError unless ``fmt`` is a timestamp format Python and DuckDB read alike, of a string field."""
    if field_type != "string" or sent != "string":
        raise ValueError("timestamp_format is for a timestamp: a field of type string, sent as string")
    if not _TIMESTAMP_FORMAT.fullmatch(fmt) or not all(d in fmt for d in ("%Y", "%m", "%d")):
        raise ValueError(f"timestamp_format {fmt!r}: a date (%Y, %m, %d) and optionally %H, %M, %S with literal "
                         "text between them (the time is taken as UTC)")


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
        """The contracted field named ``name`` of ``endpoint``.

        Raises:
            ContractError: no such field (the line names the contract and the names it has).
        """
        found = self._by_name.get((endpoint, name))
        if found is None:
            names = ", ".join(f.name for f in self.fields.get(endpoint, ())) or "none"
            raise ContractError(f"{self.path}: {endpoint} has no field named {name!r} (its names: {names})")
        return found

    def value(self, endpoint: str, name: str, attributes: Mapping[str, Any]) -> Any:
        """The decoded value of the field ``name`` in one record's ``attributes``: None when the key is absent,
        null, a sentinel, or does not decode (a reader never guesses).

        Raises:
            ContractError: ``endpoint`` has no field ``name``.
        """
        spec = self.named(endpoint, name)
        value: Any = attributes
        for key in spec.keys():
            if not isinstance(value, Mapping):
                return None
            value = value.get(key)
        decodes, decoded = spec.decode(value)
        return decoded if decodes else None

    def paths(self, endpoint: str) -> set[str]:
        """The contracted paths of ``endpoint``, with their ancestors (``results``, ``results.organic``)
        and, for arrays, their elements (``tagIds[*]``): every path the contract accounts for."""
        out: set[str] = set()
        for f in self.fields.get(endpoint, ()):
            parts = f.keys()
            out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            if f.type == "array":
                out.add(f"{f.path}[*]")
        return out

    def reads(self, endpoint: str, path: str, types: set[str] | frozenset[str] = frozenset()) -> bool:
        """Whether the contract reads the observed ``path`` (of JSON ``types``) of ``endpoint``: a contracted
        field, an element of a contracted array, or an ancestor object on the way to one (an ancestor
        holding anything but an object, such as a string ``language`` where ``language.code`` is read, is
        not read)."""
        if self.field(endpoint, path) is not None:
            return True
        if path not in self.paths(endpoint):
            return False
        return path.endswith("[*]") or set(types) <= {"object"}


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])


def load_contract(models_dir: Path | str, endpoints: tuple[str, ...] | None = None) -> Contract:
    """The contract of the models folder ``models_dir`` (:data:`CONTRACT_FILE`).

    Args:
        endpoints: the endpoints the pipeline extracts (a contract naming another is refused); None: any.

    Raises:
        ContractError: the file is missing, not YAML, or an entry is malformed; or it names an unknown
            endpoint, a path or a name twice, or a path inside another field's path.
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
            inner = next((p for p in paths if p.startswith(f.path + ".")), None)
            if inner is not None:
                raise ContractError(f"{path}: {endpoint}: {f.path} holds {inner}; a field is a leaf")
    return Contract(path=path, fields={e: tuple(v.fields) for e, v in parsed.contract.items()},
                    endpoints={e: v.endpoint for e, v in parsed.contract.items()})


_LOADED: dict[Path, tuple[bytes, Contract]] = {}


def loaded_contract(models_dir: Path | str) -> Contract:
    """:func:`load_contract` of ``models_dir``, parsed again only when the file's content changed: the readers of
    records (the extractor's lookups, keywords plan) ask for it often. The contract returned is shared.

    Raises:
        ContractError: as :func:`load_contract`.
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
