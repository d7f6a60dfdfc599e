"""The schema of model and seed ``.yml`` entries (pydantic, ``extra="forbid"``, strict types).

:func:`validate_entry` turns a ``ValidationError`` into one :class:`~rank_pipeline.transform.errors.ModelConfigError`
with one line per problem: ``<file>, model 'x': <key path>: <what is wrong> (got <value>)``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal, TypeVar, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from rank_pipeline.transform.dependencies import condition_error
from rank_pipeline.transform.errors import ModelConfigError
from rank_pipeline.transform.names import default_test_name

__all__ = [
    "COLUMN_TEST_KINDS",
    "INCREMENTAL_STRATEGIES",
    "MATERIALIZATIONS",
    "MODEL_TEST_KINDS",
    "TEST_KINDS",
    "ColumnEntry",
    "ColumnTest",
    "IncrementalEntry",
    "ModelEntry",
    "ModelLevelTest",
    "PipelineTableEntry",
    "SeedEntry",
    "UnitGiven",
    "UnitTestEntry",
    "validate_entry",
]

MATERIALIZATIONS: tuple[str, ...] = ("view", "table", "incremental")
INCREMENTAL_STRATEGIES: tuple[str, ...] = ("delete+insert", "fold")
COLUMN_TEST_KINDS: tuple[str, ...] = ("unique", "not_null", "accepted_values", "relationships")
MODEL_TEST_KINDS: tuple[str, ...] = ("expression", "unique_combination")
TEST_KINDS: tuple[str, ...] = COLUMN_TEST_KINDS + MODEL_TEST_KINDS

Text = Annotated[str, StringConstraints(strip_whitespace=True)]
NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""A column, model or non-empty text."""


def _pattern(regex: str, what: str) -> AfterValidator:
    def check(value: str) -> str:
        if not re.fullmatch(regex, value):
            raise ValueError(f"must be {what}, got {value!r}")
        return value
    return AfterValidator(check)


TestName = Annotated[str, _pattern(r"[A-Za-z0-9_]+", "letters, digits and _ only")]
Qualified = Annotated[str, StringConstraints(strip_whitespace=True),
                      _pattern(r"(raw|seeds|staging|marts)\.[A-Za-z_][A-Za-z0-9_]*",
                               "a qualified name like marts.dim_domains")]
Scalar = str | int | float | bool


def _names(value: Any) -> Any:
    """``col`` -> ``[col]``: a name or a list of names."""
    return [value] if isinstance(value, str) else value


class _Strict(BaseModel):
    """Unknown keys and loosely typed values are refused; a ``null`` mapping or list means empty."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


# ------------------------------------------------------------------------------------------- tests


class _NoArgs(_Strict):
    """``unique`` and ``not_null`` take no arguments (``{}``, ``true`` or nothing)."""


class AcceptedValues(_Strict):
    values: list[Scalar] = Field(min_length=1, description="the allowed values, a non-empty list of scalars")
    quote: bool | None = None


class Relationships(_Strict):
    to: Qualified = Field(description="a qualified name like marts.dim_domains")
    field_: NonEmpty = Field(alias="field", description="the column of `to` that must hold every value")


class _TestEntry(_Strict):
    """One test: a kind name (``unique``) or a mapping with one kind (plus optional ``name``, ``blocking``)."""

    kinds: ClassVar[tuple[str, ...]] = ()
    elsewhere: ClassVar[str] = ""

    name: TestName | None = Field(None, description="letters, digits and _ only")
    blocking: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, raw: Any) -> Any:
        if isinstance(raw, str):
            raw = {raw: None}
        if not isinstance(raw, dict):
            raise ValueError(f"a test is a name or a one-key mapping, got {raw!r}")
        kinds = [k for k in raw if k not in ("name", "blocking")]
        if len(kinds) != 1:
            raise ValueError(f"a test mapping has exactly one test kind (plus optional name, blocking), got {kinds}")
        kind = kinds[0]
        if kind not in TEST_KINDS:
            raise ValueError(f"unknown test {kind!r}; known tests: {', '.join(TEST_KINDS)}")
        if kind not in cls.kinds:
            raise ValueError(f"{kind} is {cls.elsewhere}")
        if kind in ("unique", "not_null"):
            if raw[kind] not in (None, {}, True):
                raise ValueError(f"{kind} takes no arguments, got {raw[kind]!r}")
            raw = {**raw, kind: {}}
        return raw

    @property
    def kind(self) -> str:
        return next(k for k in self.kinds if getattr(self, k) is not None)

    def params(self) -> dict[str, Any]:
        """``{"values": (...)}``, ``{"to", "field"}``, ``{"expression"}``, ``{"columns": (...)}`` or ``{}``."""
        return {}

    def depends_on(self) -> frozenset[str]:
        return frozenset()

    def test_name(self, column: str | None) -> str:
        """The ``name:`` given, else the default name (:func:`~rank_pipeline.transform.names.default_test_name`)."""
        return self.name or default_test_name(self.kind, column, self.params())


class ColumnTest(_TestEntry):
    kinds: ClassVar[tuple[str, ...]] = COLUMN_TEST_KINDS
    elsewhere: ClassVar[str] = "a model-level test; put it under the model's tests"

    unique: _NoArgs | None = None
    not_null: _NoArgs | None = None
    accepted_values: AcceptedValues | None = None
    relationships: Relationships | None = None

    def params(self) -> dict[str, Any]:
        if self.accepted_values is not None:
            return {"values": tuple(self.accepted_values.values)}
        if self.relationships is not None:
            return {"to": self.relationships.to, "field": self.relationships.field_}
        return {}

    def depends_on(self) -> frozenset[str]:
        return frozenset({self.relationships.to}) if self.relationships is not None else frozenset()


class ModelLevelTest(_TestEntry):
    kinds: ClassVar[tuple[str, ...]] = MODEL_TEST_KINDS
    elsewhere: ClassVar[str] = "a column test; put it under columns[].tests"

    expression: NonEmpty | None = Field(None, description="a SQL boolean that must hold for every row")
    unique_combination: Annotated[list[NonEmpty], Field(min_length=1)] | None = None

    @field_validator("unique_combination", mode="before")
    @classmethod
    def _as_list(cls, value: Any) -> Any:
        return _names(value)

    @field_validator("expression")
    @classmethod
    def _valid_sql(cls, expression: str | None) -> str | None:
        problem = condition_error(expression) if expression is not None else None
        if problem:
            raise ValueError(f"expression {expression!r} is not valid DuckDB SQL: {problem}")
        return expression

    def params(self) -> dict[str, Any]:
        if self.expression is not None:
            return {"expression": self.expression}
        return {"columns": tuple(self.unique_combination or ())}


# ------------------------------------------------------------------------------------------- entries


class ColumnEntry(_Strict):
    name: NonEmpty
    description: Text = ""
    data_type: Text | None = Field(None, description="a DuckDB type name")
    tests: list[ColumnTest] = []
    meta: dict[str, Any] | None = None

    @field_validator("description", "tests", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any, info: Any) -> Any:
        return ({"description": "", "tests": []}[info.field_name]) if value is None else value


class _Documented(_Strict):
    """Columns and tests, shared by models and seeds; test names are unique within the entry."""

    columns: list[ColumnEntry] = []
    tests: list[ModelLevelTest] = []

    @field_validator("columns", "tests", mode="before")
    @classmethod
    def _null_list(cls, value: Any) -> Any:
        return [] if value is None else value

    def test_names(self) -> list[str]:
        """Column tests first, in ``.yml`` order, then model-level tests."""
        return [t.test_name(c.name) for c in self.columns for t in c.tests] + [t.test_name(None) for t in self.tests]

    @model_validator(mode="after")
    def _unique_names(self) -> _Documented:
        seen = [c.name for c in self.columns]
        twice = sorted({n for n in seen if seen.count(n) > 1})
        if twice:
            raise ValueError(f"column(s) {twice} listed twice; list each column once")
        names = self.test_names()
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"test names {dupes} are not unique; give the tests distinct `name:` keys")
        return self


class IncrementalEntry(_Strict):
    date_column: NonEmpty = "snapshot_date"
    lookback_days: int = Field(0, ge=0, description="the look-back horizon in days, an integer >= 0")
    strategy: Literal["delete+insert", "fold"] = "delete+insert"
    watermark: NonEmpty | None = None

    @model_validator(mode="after")
    def _watermark_with_fold(self) -> IncrementalEntry:
        if (self.strategy == "fold") != (self.watermark is not None):
            raise ValueError("watermark is required with strategy fold, and only there")
        return self


class ModelConfig(_Strict):
    materialized: Literal["view", "table", "incremental"] = "view"
    unique_key: Annotated[list[NonEmpty], Field(min_length=1)] | None = None
    incremental: IncrementalEntry | None = None
    blocking_tests: bool | list[str] = False
    tags: list[str] | None = None

    @field_validator("unique_key", mode="before")
    @classmethod
    def _as_list(cls, value: Any) -> Any:
        return _names(value)

    @model_validator(mode="after")
    def _incremental_only(self) -> ModelConfig:
        if self.incremental is not None and self.materialized != "incremental":
            raise ValueError("incremental is set but materialized is not incremental; remove it or use incremental")
        return self


class _Rows(_Strict):
    """Rows of a unit test: ``rows`` inline (a list of mappings, or CSV text with ``format: csv``) or
    ``fixture`` (a CSV file with a header row, relative to the ``.yml``)."""

    rows: list[dict[str, Any]] | str | None = None
    format: Literal["dict", "csv"] = "dict"
    fixture: NonEmpty | None = None

    @model_validator(mode="after")
    def _one_source(self) -> _Rows:
        if self.fixture is not None and self.rows is not None:
            raise ValueError("give either rows or fixture, not both")
        if isinstance(self.rows, str) and self.format != "csv":
            raise ValueError("rows given as text need format: csv")
        if isinstance(self.rows, list) and self.format == "csv":
            raise ValueError("format: csv needs rows as CSV text (a block scalar `rows: |`)")
        return self


class UnitGiven(_Rows):
    """Rows given for one input of a unit test: ``input`` (schema.name) and its rows (inline, CSV or a file)."""

    input: Qualified = Field(description="a relation the model reads, e.g. staging.stg_usage")


class UnitTestEntry(_Strict):
    """One SQL unit test: rows given for the model's inputs, rows expected from the model."""

    name: TestName
    description: Text = ""
    given: list[UnitGiven] = []
    expect: _Rows

    @field_validator("given", mode="before")
    @classmethod
    def _null_given(cls, value: Any) -> Any:
        return [] if value is None else value


class ModelEntry(_Documented):
    name: NonEmpty
    description: NonEmpty
    config: ModelConfig = ModelConfig()
    meta: dict[str, Any] | None = None
    unit_tests: list[UnitTestEntry] = []

    @field_validator("unit_tests", mode="before")
    @classmethod
    def _null_units(cls, value: Any) -> Any:
        return [] if value is None else value

    @model_validator(mode="after")
    def _unit_names(self) -> ModelEntry:
        names = [u.name for u in self.unit_tests]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"unit test names {dupes} are not unique; give each unit test its own name")
        return self

    @field_validator("config", mode="before")
    @classmethod
    def _null_config(cls, value: Any) -> Any:
        return {} if value is None else value

    @model_validator(mode="after")
    def _blocking_names(self) -> ModelEntry:
        if isinstance(self.config.blocking_tests, list):
            names = self.test_names()
            unknown = sorted(set(self.config.blocking_tests) - set(names))
            if unknown:
                raise ValueError(
                    f"config.blocking_tests names unknown tests {unknown}; tests are: {', '.join(names)}")
        return self

    def incremental_config(self) -> IncrementalEntry | None:
        """The incremental settings (defaults when ``incremental:`` is absent); None unless incremental."""
        if self.config.materialized != "incremental":
            return None
        return self.config.incremental or IncrementalEntry()


class SeedConfig(_Strict):
    column_types: dict[str, str] = Field({}, description="column name -> DuckDB type name")
    delimiter: str | None = None

    @field_validator("column_types", mode="before")
    @classmethod
    def _null_types(cls, value: Any) -> Any:
        return {} if value is None else value


class SeedEntry(_Documented):
    name: NonEmpty
    description: Text = ""
    version: str | int | float | None = Field(None, description="bumped when the CSV changes meaning")
    config: SeedConfig = SeedConfig()

    @field_validator("description", "config", mode="before")
    @classmethod
    def _null_empty(cls, value: Any, info: Any) -> Any:
        return ({"description": "", "config": {}}[info.field_name]) if value is None else value


class PipelineTableEntry(_Documented):
    """A table the pipeline's code writes (not built from SQL, and not a source in dbt's sense: nothing outside
    the pipeline loads it), declared under ``pipeline_tables:`` in ``sources/``: its schema (``ops``), columns
    with their DuckDB ``data_type`` (every column typed) and tests."""

    name: NonEmpty
    schema_: Literal["ops"] = Field(alias="schema", description="the table's schema: ops")
    description: NonEmpty

    @model_validator(mode="after")
    def _typed(self) -> PipelineTableEntry:
        untyped = [c.name for c in self.columns if not c.data_type]
        if untyped or not self.columns:
            raise ValueError("a pipeline table lists every column with its data_type; untyped: "
                             f"{untyped or 'no columns'}")
        return self


# ------------------------------------------------------------------------------------------- errors

_Entry = TypeVar("_Entry", ModelEntry, SeedEntry, PipelineTableEntry)


def _path(loc: tuple[int | str, ...]) -> str:
    """``("columns", 0, "tests", 1, "accepted_values")`` -> ``columns[0].tests[1].accepted_values``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for arg in get_args(annotation) if (m := _inner_model(arg)) is not None), None)


def _keys_at(cls: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The keys the mapping at ``loc`` (inside an entry of class ``cls``) may have."""
    model: type[BaseModel] | None = cls
    for part in loc:
        fields = {(f.alias or n): f for n, f in model.model_fields.items()} if model is not None else {}
        if isinstance(part, str) and part in fields:
            model = _inner_model(fields[part].annotation)
    return [f.alias or n for n, f in model.model_fields.items()] if model is not None else []


_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "list", "dict", "none"})


def _clean(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """The key path without pydantic's union and validator tags (``str``, ``list[str]``, ``function-after[...]``)."""
    return tuple(p for p in loc if isinstance(p, int) or (p not in _TYPE_TAGS and re.fullmatch(r"[a-z_]+", p)))


def _line(cls: type[BaseModel], errors: list[Any]) -> str:
    """One line for the errors at one key path (several when a value matches none of a union's types)."""
    error = errors[0]
    kind, got = error["type"], error.get("input")
    if kind in ("extra_forbidden", "missing"):
        parent, key = _clean(tuple(error["loc"][:-1])), error["loc"][-1]
        at = f"{_path(parent)}: " if parent else ""
        if kind == "missing":
            return f"{at}missing required key(s) [{key!r}]"
        return f"{at}unknown key(s) [{key!r}]; allowed: {', '.join(_keys_at(cls, parent))}"
    loc = _clean(tuple(error["loc"]))
    at = _path(loc)
    if kind == "literal_error":
        return f"{at} is {got!r}; use one of {error['ctx']['expected']}"
    at = f"{at}: " if at else ""
    messages = [e["msg"].removeprefix("Value error, ") for e in errors]
    message = " or ".join([messages[0], *(m.removeprefix("Input should be ") for m in messages[1:])])
    if kind == "value_error":
        return f"{at}{message}"
    return f"{at}{message} (got {got!r})"


def _problems(cls: type[BaseModel], exc: ValidationError) -> list[str]:
    """Errors grouped by key path (union tags dropped), in pydantic's order."""
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for error in exc.errors(include_url=False):
        key = error["loc"][-1:] if error["type"] in ("extra_forbidden", "missing") else ()
        groups.setdefault((_clean(tuple(error["loc"])), *key), []).append(error)
    return list(dict.fromkeys(_line(cls, errors) for errors in groups.values()))


def validate_entry(cls: type[_Entry], raw: Any, where: str) -> _Entry:
    """Validate the ``models:`` or ``seeds:`` entry ``raw`` as ``cls`` (:class:`ModelEntry`, :class:`SeedEntry`).
    Raises ModelConfigError: one ``<where>: <key path>: <what is wrong and what to write>`` line per problem.
    """
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        lines = _problems(cls, exc)
        raise ModelConfigError("\n".join(f"{where}: {line}" for line in lines)) from None
