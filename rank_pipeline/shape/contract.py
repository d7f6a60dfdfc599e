"""The declared contract of the vendor's shape, and its thresholds.

The contract (``<models>/sources/vendor_contract.yml``, beside the staging models that read it) lists,
per endpoint, every JSON path below a record's ``attributes`` that staging reads: its JSON type, whether
the spec shows it or it is assumed ("not shown" in the spec), whether a JSON null is expected and what it
means. The thresholds (``<models>/seeds/shape_thresholds.csv``, a seed analysts edit) say when a path
fails the blocking check (:mod:`rank_pipeline.shape.check`).

Both are validated here: one :class:`ContractError` line names the file, the entry and what is wrong.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rank_pipeline.errors import EXIT_USAGE, RankPipelineError
from rank_pipeline.snapshots.schema import ENDPOINTS

__all__ = [
    "CONTRACT_FILE",
    "THRESHOLDS_FILE",
    "Contract",
    "ContractError",
    "ContractField",
    "Thresholds",
    "load_contract",
    "load_thresholds",
]

CONTRACT_FILE = Path("sources") / "vendor_contract.yml"
"""The contract's place in the models folder."""
THRESHOLDS_FILE = Path("seeds") / "shape_thresholds.csv"
"""The thresholds' seed in the models folder."""

JsonType = Literal["string", "integer", "number", "boolean", "object", "array"]


class ContractError(RankPipelineError, ValueError):
    """The contract or its thresholds cannot be read (one line: file, entry, what is wrong)."""

    exit_status = EXIT_USAGE


class ContractField(BaseModel):
    """One path of one endpoint's records, as staging reads it.

    Attributes:
        path: dotted below ``attributes`` (``results.organic.position``).
        type: the JSON type of its non-null values; ``items``: an array's element type.
        shown: the spec shows the field (False: an assumption, the spec says "not shown").
        nullable: a JSON null is expected; ``null_means`` says what it means.
        range: ``[low, high]`` of a number's values (a hint for the candidates of a missing path).
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    path: str = Field(pattern=r"^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$")
    type: JsonType
    items: JsonType | None = None
    shown: bool
    nullable: bool = False
    null_means: str | None = None
    range: tuple[float, float] | None = Field(None, strict=False)
    description: str = ""


class _EndpointEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    endpoint: str
    fields: list[ContractField]


class _ContractDoc(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    version: int
    raw_sources: dict[str, dict[str, str]] = Field(default_factory=dict)  # read by the model runner (transform/loading.py)
    contract: dict[str, _EndpointEntry]


@dataclass(frozen=True)
class Contract:
    """Every endpoint's contracted paths (``fields[endpoint]``, in file order), and the file they come from."""

    path: Path
    fields: dict[str, tuple[ContractField, ...]]
    endpoints: dict[str, str]

    def field(self, endpoint: str, path: str) -> ContractField | None:
        """The contracted field ``path`` of ``endpoint``, or None."""
        return next((f for f in self.fields.get(endpoint, ()) if f.path == path), None)

    def paths(self, endpoint: str) -> set[str]:
        """The contracted paths of ``endpoint``, with their ancestors (``results``, ``results.organic``)
        and, for arrays, their elements (``tagIds[*]``): every path the contract accounts for."""
        out: set[str] = set()
        for f in self.fields.get(endpoint, ()):
            parts = f.path.split(".")
            out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            if f.type == "array":
                out.add(f"{f.path}[*]")
        return out


    def reads(self, endpoint: str, path: str, types: set[str] | frozenset[str] = frozenset()) -> bool:
        """Whether staging reads the observed ``path`` (of JSON ``types``) of ``endpoint``: a contracted
        field, an element of a contracted array, or an ancestor object on the way to one (an ancestor
        holding anything but an object, such as a string ``language`` where ``language.code`` is read, is
        not read)."""
        if self.field(endpoint, path) is not None:
            return True
        if path not in self.paths(endpoint):
            return False
        return path.endswith("[*]") or set(types) <= {"object"}


def load_contract(models_dir: Path | str) -> Contract:
    """The contract of the models folder ``models_dir`` (:data:`CONTRACT_FILE`).

    Raises:
        ContractError: the file is missing, not YAML, or an entry is malformed; or it names an endpoint
            the pipeline does not extract, or a path twice.
    """
    path = Path(models_dir) / CONTRACT_FILE
    try:
        doc = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ContractError(f"{path}: missing; the vendor's contract is declared there (see the project's "
                            "dbt_like_sql/sources/vendor_contract.yml)") from None
    except yaml.YAMLError as exc:
        raise ContractError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    try:
        parsed = _ContractDoc.model_validate(doc)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])
        raise ContractError(f"{path}: {problems}") from None
    unknown = sorted(set(parsed.contract) - set(ENDPOINTS))
    if unknown:
        raise ContractError(f"{path}: no endpoint {', '.join(unknown)}; the endpoints are {', '.join(ENDPOINTS)}")
    for endpoint, entry in parsed.contract.items():
        seen: set[str] = set()
        for f in entry.fields:
            if f.path in seen:
                raise ContractError(f"{path}: {endpoint}: path {f.path} is declared twice")
            seen.add(f.path)
            if f.null_means and not f.nullable:
                raise ContractError(f"{path}: {endpoint}.{f.path}: null_means needs nullable: true")
            if f.items is not None and f.type != "array":
                raise ContractError(f"{path}: {endpoint}.{f.path}: items is for type: array")
    return Contract(path=path, fields={e: tuple(v.fields) for e, v in parsed.contract.items()},
                    endpoints={e: v.endpoint for e, v in parsed.contract.items()})


@dataclass(frozen=True)
class Thresholds:
    """One row of the thresholds seed (shares 0..1 of an endpoint's records of one day)."""

    max_absent_share: float = 0.0
    max_wrong_type_share: float = 0.0
    max_null_share: float = 0.999
    max_present_drop: float = 0.5
    max_null_share_rise: float = 0.5
    min_records: int = 20


class ThresholdTable:
    """The thresholds seed: :meth:`get` returns the most specific row for an endpoint and path."""

    def __init__(self, rows: dict[tuple[str, str], Thresholds], source: Path | None = None):
        self.rows = rows
        self.source = source

    def get(self, endpoint: str, path: str) -> Thresholds:
        for key in ((endpoint, path), (endpoint, "*"), ("*", path), ("*", "*")):
            if key in self.rows:
                return self.rows[key]
        return Thresholds()


def load_thresholds(models_dir: Path | str) -> ThresholdTable:
    """The thresholds seed of ``models_dir`` (:data:`THRESHOLDS_FILE`); the defaults of :class:`Thresholds`
    when the file is absent.

    Raises:
        ContractError: a row with a missing or non-numeric value, or a share outside 0..1.
    """
    path = Path(models_dir) / THRESHOLDS_FILE
    if not path.exists():
        return ThresholdTable({}, None)
    rows: dict[tuple[str, str], Thresholds] = {}
    with path.open(newline="") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            try:
                values: dict[str, Any] = {name: (int if name == "min_records" else float)(row[name])
                          for name in Thresholds.__dataclass_fields__}
            except (KeyError, TypeError, ValueError):
                raise ContractError(f"{path}:{line}: every column of {', '.join(Thresholds.__dataclass_fields__)} "
                                    "needs a number") from None
            if any(not 0 <= v <= 1 for k, v in values.items() if k != "min_records"):
                raise ContractError(f"{path}:{line}: shares are between 0 and 1")
            rows[(row.get("endpoint") or "*", row.get("path") or "*")] = Thresholds(**values)
    return ThresholdTable(rows, path)
