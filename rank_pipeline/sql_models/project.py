"""Discover and validate a dbt-like SQL project (DESIGN.md and docs/architecture.md, "SQL models").

Layout of a project directory (``dbt_like_sql/``)::

    staging/<name>.sql + <name>.yml     models of schema ``staging``
    marts/<name>.sql + <name>.yml       models of schema ``marts``
    seeds/<name>.csv [+ <name>.yml]     seeds, loaded as tables ``seeds.<name>``

A model is one file holding one plain DuckDB SELECT (no templating: it runs as-is in the duckdb shell).
Its schema is its top folder, its name the file stem; model names are unique across schemas. It refers
to relations only by qualified name: ``raw.<resource>``, ``seeds.<name>``, ``staging.<model>``,
``marts.<model>``; unqualified names must be CTEs. Dependencies are found by parsing the SQL with
sqlglot (DuckDB dialect).

Model ``.yml`` (dbt ``schema.yml`` style; any ``.yml`` under staging/ or marts/ may hold entries)::

    models:
      - name: fct_x                          # required, matches <name>.sql in the same folder
        description: "..."                   # required, non-empty
        config:
          materialized: view | table | incremental          # default view
          unique_key: col | [cols]                          # documentation of the grain
          incremental: {date_column: snapshot_date, lookback_days: N}   # incremental only
                                                    # (+ strategy: fold, watermark: col; see runner)
          blocking_tests: true | false | [test names]       # default false
        columns:
          - name: col
            description: "..."
            data_type: "..."                 # optional, documentation
            tests: [unique, not_null, {accepted_values: {values: [...]}},
                    {relationships: {to: "marts.x", field: "y"}}]
        tests:
          - {expression: "<SQL boolean that must hold for every row>", name?: slug, blocking?: bool}
          - {unique_combination: [cols], blocking?: bool}

Any test given as a mapping may carry ``blocking: true`` and ``name: <slug>``. Seed ``.yml``::

    seeds:
      - name: ctr_curve
        description: "..."
        version: 1                                  # bumped when the CSV changes meaning
        config: {column_types: {col: duckdb type}}  # or data_type per column
        columns: [...]                              # as for models
        tests: [...]                                # as for models

Test names are short and stable, because each becomes a Dagster asset check: the ``name`` given, else
:func:`rank_pipeline.sql_models.names.default_test_name` (``not_null_<col>``, ``unique_<col>``,
``accepted_<col>``, ``<col>_in_<table>``, ``unique_domain_competitor``, the expression in words).
"""

from __future__ import annotations

import graphlib
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from rank_pipeline.sql_models.dependencies import (
    MODEL_SCHEMAS,
    SEED_SCHEMA,
    condition_error,
    sql_dependencies,
)
from rank_pipeline.sql_models.errors import DependencyError, ModelConfigError
from rank_pipeline.sql_models.names import default_test_name
from rank_pipeline.warehouse import RAW_TABLES

__all__ = [
    "MATERIALIZATIONS",
    "MODEL_SCHEMAS",
    "ColumnSpec",
    "IncrementalConfig",
    "Model",
    "Project",
    "Seed",
    "TestSpec",
    "load_project",
]

MATERIALIZATIONS: tuple[str, ...] = ("view", "table", "incremental")
INCREMENTAL_STRATEGIES: tuple[str, ...] = ("delete+insert", "fold")
TEST_KINDS: tuple[str, ...] = (
    "unique", "not_null", "accepted_values", "relationships", "expression", "unique_combination",
)
_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass(frozen=True)
class TestSpec:
    """One data test of a model or seed; becomes one Dagster asset check named :attr:`name`.

    Attributes:
        name: stable identifier (letters, digits, ``_``), unique within its model.
        kind: one of ``unique, not_null, accepted_values, relationships, expression, unique_combination``.
        column: the column for column tests, None for model-level tests.
        params: ``{"values": [...]}`` (accepted_values), ``{"to": "marts.x", "field": "y"}``
            (relationships), ``{"expression": sql}``, ``{"columns": [...]}`` (unique_combination).
        blocking: a failure should block downstream assets (Dagster ``blocking=True`` check).
        depends_on: relations the test reads besides its model (the relationships target).
    """

    __test__ = False  # not a pytest test class

    name: str
    kind: str
    column: str | None
    params: Mapping[str, Any]
    blocking: bool = False
    depends_on: frozenset[str] = frozenset()

    def describe(self) -> str:
        """A short human description, e.g. ``accepted_values: google, bing``."""
        if self.kind == "accepted_values":
            return "accepted_values: " + ", ".join(str(v) for v in self.params["values"])
        if self.kind == "relationships":
            return f"relationships: {self.params['to']}.{self.params['field']}"
        if self.kind == "expression":
            return f"expression: {self.params['expression']}"
        if self.kind == "unique_combination":
            return "unique_combination: " + ", ".join(self.params["columns"])
        return self.kind


@dataclass(frozen=True)
class ColumnSpec:
    """A documented column: name, description, optional data type, and its tests."""

    name: str
    description: str = ""
    data_type: str | None = None
    tests: tuple[TestSpec, ...] = ()


@dataclass(frozen=True)
class IncrementalConfig:
    """How an incremental model is built one partition at a time.

    Attributes:
        date_column: the partition column of the model's output and of the upstream relations that are
            filtered to the lookback window (default ``snapshot_date``).
        lookback_days: the model's look-back horizon: its rows of day d depend only on upstream rows
            dated ``d - lookback_days .. d`` (>= 0). Loading day D therefore changes this model's rows
            of ``D .. D + lookback_days`` (see :mod:`rank_pipeline.sql_models.horizon`).
        strategy: ``delete+insert`` (default): the model's rows of the days built are replaced; or
            ``fold``: a relation without the date column (a dimension) that reads itself; a build of new
            days computes the whole new relation from its previous rows and the upstream rows dated after
            its ``watermark`` (see :mod:`rank_pipeline.sql_models.runner`).
        watermark: ``fold`` only: the output date column whose maximum is the last day folded in.
    """

    date_column: str = "snapshot_date"
    lookback_days: int = 0
    strategy: str = "delete+insert"
    watermark: str | None = None


@dataclass(frozen=True)
class Model:
    """One SQL model: ``<schema>.<name>`` built from ``path``.

    Attributes:
        name: file stem, unique across the project.
        schema: ``staging`` or ``marts`` (the folder).
        path: the ``.sql`` file; ``sql`` its text (one SELECT).
        description: from the ``.yml``.
        materialized: ``view``, ``table`` or ``incremental``.
        columns: documented columns, in ``.yml`` order.
        tests: every test (column tests first, then model-level), names unique.
        depends_on: qualified names it reads (``raw.keywords``, ``seeds.ctr_curve``, ``staging.stg_x``).
        unique_key: the grain (documentation; checked by the tests the ``.yml`` declares).
        incremental: set when ``materialized == "incremental"``.
        yml_path: where its entry was found.
        reads_itself: the SQL reads the model's own relation (an incremental model carrying a running
            state forward, e.g. best position to date); not part of ``depends_on``. In a partition
            build it sees its own rows dated before the build range; in a full build an empty relation
            typed by the ``.yml`` columns' ``data_type``.
    """

    name: str
    schema: str
    path: Path
    sql: str
    description: str
    materialized: str
    columns: tuple[ColumnSpec, ...]
    tests: tuple[TestSpec, ...]
    depends_on: frozenset[str]
    unique_key: tuple[str, ...] = ()
    incremental: IncrementalConfig | None = None
    yml_path: Path | None = None
    reads_itself: bool = False

    @property
    def qualified_name(self) -> str:
        """``<schema>.<name>``, the relation it builds."""
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True)
class Seed:
    """A CSV reference table loaded as ``seeds.<name>``.

    Attributes:
        column_types: column -> DuckDB type for columns whose type is given (others auto-detected).
        version: the ``.yml`` ``version`` (None when absent).
        checksum: sha256 of the CSV bytes (a data version: changes when the file changes).
    """

    name: str
    path: Path
    description: str = ""
    version: str | None = None
    column_types: Mapping[str, str] = field(default_factory=dict)
    columns: tuple[ColumnSpec, ...] = ()
    tests: tuple[TestSpec, ...] = ()
    checksum: str = ""
    yml_path: Path | None = None
    schema: str = SEED_SCHEMA
    materialized: str = "seed"
    depends_on: frozenset[str] = frozenset()

    @property
    def qualified_name(self) -> str:
        """``seeds.<name>``."""
        return f"{self.schema}.{self.name}"


# --------------------------------------------------------------------------------------------- yml


class _Ctx:
    """Where we are in a .yml, for error messages."""

    def __init__(self, path: Path, entry: str = ""):
        self.path = path
        self.entry = entry

    def error(self, what: str) -> ModelConfigError:
        where = f"{self.path}" + (f", {self.entry}" if self.entry else "")
        return ModelConfigError(f"{where}: {what}")


def _keys(ctx: _Ctx, obj: Any, where: str, allowed: Sequence[str], required: Sequence[str] = ()) -> dict:
    if not isinstance(obj, Mapping):
        raise ctx.error(f"{where} must be a mapping, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        raise ctx.error(f"{where} has unknown key(s) {unknown}; allowed: {', '.join(allowed)}")
    missing = [k for k in required if k not in obj]
    if missing:
        raise ctx.error(f"{where} is missing required key(s) {missing}")
    return dict(obj)


def _str(ctx: _Ctx, value: Any, where: str, *, allow_empty: bool = True) -> str:
    if value is None and allow_empty:
        return ""
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise ctx.error(f"{where} must be a {'non-empty ' if not allow_empty else ''}string, got {value!r}")
    return value.strip()


def _ident(ctx: _Ctx, value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ctx.error(f"{where} must be a column or model name, got {value!r}")
    return value.strip()


def _str_list(ctx: _Ctx, value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ctx.error(f"{where} must be a name or a non-empty list of names, got {value!r}")
    return tuple(_ident(ctx, v, where) for v in value)


def _parse_test(ctx: _Ctx, raw: Any, column: str | None, where: str) -> tuple[TestSpec, bool | None]:
    """One test entry -> (TestSpec, its own ``blocking`` or None); blocking is resolved by the caller."""
    blocking: bool | None = None
    name: str | None = None
    if isinstance(raw, str):
        kind, args = raw, None
    elif isinstance(raw, Mapping):
        body = dict(raw)
        if "blocking" in body:
            blocking = body.pop("blocking")
            if not isinstance(blocking, bool):
                raise ctx.error(f"{where}: blocking must be true or false, got {blocking!r}")
        if "name" in body:
            name = body.pop("name")
            if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9_]+$", name):
                raise ctx.error(f"{where}: test name must use letters, digits and _ only, got {name!r}")
        if len(body) != 1:
            raise ctx.error(
                f"{where}: a test mapping has exactly one test kind (plus optional name, blocking), got {sorted(body)}"
            )
        ((kind, args),) = body.items()
    else:
        raise ctx.error(f"{where}: a test is a name or a one-key mapping, got {raw!r}")
    if kind not in TEST_KINDS:
        raise ctx.error(f"{where}: unknown test {kind!r}; known tests: {', '.join(TEST_KINDS)}")
    column_kinds = ("unique", "not_null", "accepted_values", "relationships")
    if kind in column_kinds and column is None:
        raise ctx.error(f"{where}: {kind} is a column test; put it under columns[].tests")
    if kind not in column_kinds and column is not None:
        raise ctx.error(f"{where}: {kind} is a model-level test; put it under the model's tests")
    params: dict[str, Any] = {}
    depends: frozenset[str] = frozenset()
    if kind in ("unique", "not_null"):
        if args not in (None, {}, True):
            raise ctx.error(f"{where}: {kind} takes no arguments, got {args!r}")
    elif kind == "accepted_values":
        args = _keys(ctx, args, f"{where}: accepted_values", ("values", "quote"), ("values",))
        values = args["values"]
        if not isinstance(values, list) or not values or not all(isinstance(v, str | int | float | bool) for v in values):
            raise ctx.error(f"{where}: accepted_values.values must be a non-empty list of scalars, got {values!r}")
        params = {"values": tuple(values)}
    elif kind == "relationships":
        args = _keys(ctx, args, f"{where}: relationships", ("to", "field"), ("to", "field"))
        to = _str(ctx, args["to"], f"{where}: relationships.to", allow_empty=False)
        if not re.match(r"^(raw|seeds|staging|marts)\.[A-Za-z_][A-Za-z0-9_]*$", to):
            raise ctx.error(f"{where}: relationships.to must be a qualified name like marts.dim_domains, got {to!r}")
        params = {"to": to, "field": _ident(ctx, args["field"], f"{where}: relationships.field")}
        depends = frozenset({to})
    elif kind == "expression":
        expression = _str(ctx, args, f"{where}: expression", allow_empty=False)
        problem = condition_error(expression)
        if problem:
            raise ctx.error(f"{where}: expression {expression!r} is not valid DuckDB SQL: {problem}")
        params = {"expression": expression}
    else:  # unique_combination
        columns = _str_list(ctx, args, f"{where}: unique_combination")
        params = {"columns": columns}
    spec = TestSpec(
        name=name or default_test_name(kind, column, params),
        kind=kind, column=column, params=params, blocking=False, depends_on=depends,
    )
    return spec, blocking


def _parse_columns_and_tests(
    ctx: _Ctx, entry: Mapping[str, Any], blocking_default: bool | Sequence[str]
) -> tuple[tuple[ColumnSpec, ...], tuple[TestSpec, ...]]:
    raw_columns = entry.get("columns") or []
    if not isinstance(raw_columns, list):
        raise ctx.error("columns must be a list of {name, description, tests}")
    columns: list[ColumnSpec] = []
    column_tests: list[list[tuple[TestSpec, bool | None]]] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_columns):
        col = _keys(ctx, raw, f"columns[{i}]", ("name", "description", "data_type", "tests", "meta"), ("name",))
        name = _ident(ctx, col["name"], f"columns[{i}].name")
        if name in seen:
            raise ctx.error(f"column {name!r} is listed twice")
        seen.add(name)
        tests = col.get("tests") or []
        if not isinstance(tests, list):
            raise ctx.error(f"columns[{i}] ({name}).tests must be a list")
        parsed = [_parse_test(ctx, t, name, f"column {name} test {j}") for j, t in enumerate(tests)]
        column_tests.append(parsed)
        columns.append(ColumnSpec(name, _str(ctx, col.get("description"), f"column {name} description"),
                                  _str(ctx, col.get("data_type"), f"column {name} data_type") or None, ()))
    model_tests_raw = entry.get("tests") or []
    if not isinstance(model_tests_raw, list):
        raise ctx.error("tests must be a list")
    model_tests = [_parse_test(ctx, t, None, f"tests[{j}]") for j, t in enumerate(model_tests_raw)]

    # resolve blocking and check names
    all_tests = [t for ts in column_tests for t in ts] + model_tests
    names = [t.name for t, _ in all_tests]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ctx.error(f"test names {dupes} are not unique; give the tests distinct `name:` keys")
    if isinstance(blocking_default, list | tuple):
        unknown = sorted(set(blocking_default) - set(names))
        if unknown:
            raise ctx.error(f"config.blocking_tests names unknown tests {unknown}; tests are: {', '.join(names)}")

    def resolve(parsed: tuple[TestSpec, bool | None]) -> TestSpec:
        t, own = parsed
        if own is not None:
            blocking = own
        elif isinstance(blocking_default, list | tuple):
            blocking = t.name in blocking_default
        else:
            blocking = bool(blocking_default)
        return TestSpec(t.name, t.kind, t.column, t.params, blocking, t.depends_on)

    columns = [
        ColumnSpec(c.name, c.description, c.data_type, tuple(resolve(t) for t in ts))
        for c, ts in zip(columns, column_tests, strict=True)
    ]
    tests = tuple(t for c in columns for t in c.tests) + tuple(resolve(t) for t in model_tests)
    return tuple(columns), tests


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated in one mapping (PyYAML keeps the last one silently,
    which would drop e.g. a test's first ``blocking:`` without a word)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}: each key may appear once per mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _load_yml(path: Path) -> dict:
    try:
        doc = yaml.load(path.read_text(), Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ModelConfigError(f"{path}: not valid YAML: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, Mapping):
        raise ModelConfigError(f"{path}: the top level must be a mapping with `models:` or `seeds:`")
    unknown = sorted(set(doc) - {"version", "models", "seeds"})
    if unknown:
        raise ModelConfigError(f"{path}: unknown top-level key(s) {unknown}; expected `models:` or `seeds:`")
    return dict(doc)


_MODEL_KEYS = ("name", "description", "config", "columns", "tests", "meta")
_CONFIG_KEYS = ("materialized", "unique_key", "incremental", "blocking_tests", "tags")


def _model_entry(ctx: _Ctx, entry: Mapping[str, Any], sql_path: Path, schema: str, sql: str, deps: frozenset[str]) -> Model:
    entry = _keys(ctx, entry, "model entry", _MODEL_KEYS, ("name", "description"))
    name = entry["name"]
    description = _str(ctx, entry["description"], "description", allow_empty=False)
    config = _keys(ctx, entry.get("config") or {}, "config", _CONFIG_KEYS)
    materialized = config.get("materialized", "view")
    if materialized not in MATERIALIZATIONS:
        raise ctx.error(f"config.materialized is {materialized!r}; use one of {', '.join(MATERIALIZATIONS)}")
    unique_key = _str_list(ctx, config["unique_key"], "config.unique_key") if "unique_key" in config else ()
    incremental = None
    if "incremental" in config and materialized != "incremental":
        raise ctx.error("config.incremental is set but materialized is not incremental")
    if materialized == "incremental":
        inc = _keys(ctx, config.get("incremental") or {}, "config.incremental",
                    ("date_column", "lookback_days", "strategy", "watermark"))
        date_column = _ident(ctx, inc.get("date_column", "snapshot_date"), "config.incremental.date_column")
        lookback = inc.get("lookback_days", 0)
        if not isinstance(lookback, int) or isinstance(lookback, bool) or lookback < 0:
            raise ctx.error(f"config.incremental.lookback_days must be an integer >= 0, got {lookback!r}")
        strategy = inc.get("strategy", "delete+insert")
        if strategy not in INCREMENTAL_STRATEGIES:
            raise ctx.error(f"config.incremental.strategy is {strategy!r}; use one of {', '.join(INCREMENTAL_STRATEGIES)}")
        watermark = inc.get("watermark")
        if (strategy == "fold") != (watermark is not None):
            raise ctx.error("config.incremental.watermark is required with strategy fold, and only there")
        if watermark is not None:
            watermark = _ident(ctx, watermark, "config.incremental.watermark")
        incremental = IncrementalConfig(date_column, lookback, strategy, watermark)
    blocking_default = config.get("blocking_tests", False)
    if not isinstance(blocking_default, bool | list):
        raise ctx.error(f"config.blocking_tests must be true, false or a list of test names, got {blocking_default!r}")
    columns, tests = _parse_columns_and_tests(ctx, entry, blocking_default)
    return Model(
        name=name, schema=schema, path=sql_path, sql=sql, description=description, materialized=materialized,
        columns=columns, tests=tests, depends_on=deps, unique_key=unique_key, incremental=incremental,
        yml_path=ctx.path,
    )


# --------------------------------------------------------------------------------------------- project


@dataclass
class Project:
    """A loaded, validated project: models and seeds by name, dependencies acyclic.

    Attributes:
        root: the project directory.
        models: ``{name: Model}``.
        seeds: ``{name: Seed}``.
        sources: qualified raw tables models may read (``raw.keywords``, ...).
    """

    root: Path
    models: dict[str, Model]
    seeds: dict[str, Seed]
    sources: frozenset[str] = frozenset(RAW_TABLES)

    def relation(self, qualified_name: str) -> Model | Seed | None:
        """The model or seed building ``schema.name``, None for raw tables and unknown names."""
        schema, _, name = qualified_name.partition(".")
        if schema == SEED_SCHEMA:
            return self.seeds.get(name)
        model = self.models.get(name)
        return model if model is not None and model.schema == schema else None

    def topological_order(self) -> list[Model]:
        """Models ordered so that each comes after every model it depends on (ties by qualified name)."""
        return _topological_order(self.models)

    def downstream(self, qualified_name: str) -> list[Model]:
        """Models that read ``qualified_name`` directly."""
        return [m for m in self.topological_order() if qualified_name in m.depends_on]


def _topological_order(models: Mapping[str, Model]) -> list[Model]:
    """Dependency order with :class:`graphlib.TopologicalSorter`; among ready models, the smallest
    qualified name first (a stable build order)."""
    by_q = {m.qualified_name: m for m in models.values()}
    sorter = graphlib.TopologicalSorter({q: {d for d in m.depends_on if d in by_q} for q, m in by_q.items()})
    try:
        sorter.prepare()
    except graphlib.CycleError as exc:
        cycle = list(reversed(exc.args[1]))
        raise DependencyError(f"dependency cycle between models: {' -> '.join(cycle)}; break it") from None
    order: list[Model] = []
    ready = sorted(sorter.get_ready())
    while ready:
        q = ready.pop(0)  # the smallest ready name first: the order the docs and assets list
        order.append(by_q[q])
        sorter.done(q)
        ready = sorted([*ready, *sorter.get_ready()])
    return order


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load_seeds(root: Path) -> dict[str, Seed]:
    folder = root / SEED_SCHEMA
    seeds: dict[str, Seed] = {}
    if not folder.is_dir():
        return seeds
    for csv in sorted(folder.glob("*.csv")):
        name = csv.stem
        if not _NAME_RE.match(name):
            raise ModelConfigError(f"{csv}: seed names are lower-case letters, digits and _ (got {name!r})")
        seeds[name] = Seed(name=name, path=csv, checksum=_sha256(csv))
    for yml in sorted(folder.glob("*.yml")):
        doc = _load_yml(yml)
        if "models" in doc:
            raise ModelConfigError(f"{yml}: files under seeds/ describe seeds (`seeds:`), not models")
        entries = doc.get("seeds") or []
        if not isinstance(entries, list):
            raise ModelConfigError(f"{yml}: `seeds:` must be a list")
        for i, raw in enumerate(entries):
            ctx = _Ctx(yml, f"seeds[{i}]")
            entry = _keys(ctx, raw, "seed entry", ("name", "description", "version", "config", "columns", "tests"),
                          ("name",))
            name = entry["name"]
            ctx.entry = f"seed {name!r}"
            if name not in seeds:
                raise ctx.error(f"no {folder / (str(name) + '.csv')} for this entry")
            if seeds[name].yml_path is not None:
                raise ctx.error(f"seed is also described in {seeds[name].yml_path}")
            config = _keys(ctx, entry.get("config") or {}, "config", ("column_types", "delimiter"))
            column_types = config.get("column_types") or {}
            if not isinstance(column_types, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in column_types.items()
            ):
                raise ctx.error("config.column_types must map column names to DuckDB type names")
            columns, tests = _parse_columns_and_tests(ctx, entry, False)
            types = dict(column_types)
            for col in columns:
                if col.data_type:
                    types.setdefault(col.name, col.data_type)
            version = entry.get("version")
            seeds[name] = Seed(
                name=name, path=seeds[name].path, description=_str(ctx, entry.get("description"), "description"),
                version=None if version is None else str(version), column_types=types, columns=columns,
                tests=tests, checksum=seeds[name].checksum, yml_path=yml,
            )
    return seeds


def load_project(project_dir: Path | str, *, sources: Sequence[str] = RAW_TABLES) -> Project:
    """Discover, parse and validate a project (see the module docstring for its layout).

    Args:
        project_dir: the ``dbt_like_sql`` folder.
        sources: qualified raw tables models may read (default: the warehouse's raw tables).

    Returns:
        A :class:`Project` whose dependencies are complete and acyclic.

    Raises:
        ModelConfigError: a malformed ``.yml``, a model without a ``.yml`` entry (or with two), an entry
            without a ``.sql``, a ``.sql`` outside ``staging/`` and ``marts/``, duplicate model names.
        ModelSqlError: a ``.sql`` that is not one plain SELECT or references relations badly.
        DependencyError: a reference (in SQL or in a relationships test) to a missing model, seed or raw
            table; a model in the wrong schema; a dependency cycle.
    """
    root = Path(project_dir)
    if not root.is_dir():
        raise ModelConfigError(f"{root}: the SQL project directory does not exist")
    seeds = _load_seeds(root)

    sql_files: dict[str, tuple[Path, str]] = {}
    for path in sorted(root.rglob("*.sql")):
        rel = path.relative_to(root)
        schema = rel.parts[0] if len(rel.parts) > 1 else ""
        if schema not in MODEL_SCHEMAS:
            raise ModelConfigError(
                f"{path}: models live under {' or '.join(d + '/' for d in MODEL_SCHEMAS)} (the folder is the schema)"
            )
        name = path.stem
        if not _NAME_RE.match(name):
            raise ModelConfigError(f"{path}: model names are lower-case letters, digits and _ (got {name!r})")
        if name in sql_files:
            raise ModelConfigError(f"{path}: model name {name!r} is also used by {sql_files[name][0]}; names are unique")
        sql_files[name] = (path, schema)

    entries: dict[str, tuple[Path, Mapping[str, Any]]] = {}
    for yml in sorted(p for s in MODEL_SCHEMAS if (root / s).is_dir() for p in (root / s).rglob("*.yml")):
        doc = _load_yml(yml)
        if "seeds" in doc:
            raise ModelConfigError(f"{yml}: seeds are described under seeds/, not beside models")
        models = doc.get("models") or []
        if not isinstance(models, list):
            raise ModelConfigError(f"{yml}: `models:` must be a list of model entries")
        for i, entry in enumerate(models):
            name = entry.get("name") if isinstance(entry, Mapping) else None
            if not isinstance(name, str):
                raise ModelConfigError(f"{yml}, models[{i}]: every entry needs a `name:` (the .sql file stem)")
            if name in entries:
                raise ModelConfigError(f"{yml}: model {name!r} is also described in {entries[name][0]}")
            if name not in sql_files:
                raise ModelConfigError(f"{yml}, model {name!r}: there is no {name}.sql in the project for this entry")
            if sql_files[name][0].parent != yml.parent:
                raise ModelConfigError(f"{yml}, model {name!r}: the .yml must be beside {sql_files[name][0]}")
            entries[name] = (yml, entry)

    models: dict[str, Model] = {}
    for name, (path, schema) in sql_files.items():
        if name not in entries:
            raise ModelConfigError(
                f"{path}: model {name!r} has no .yml entry; add {path.with_suffix('.yml')} with "
                "`models: [{name: ..., description: ..., config: {materialized: ...}}]`"
            )
        sql = path.read_text()
        deps = sql_dependencies(sql, str(path))
        yml, entry = entries[name]
        models[name] = _model_entry(_Ctx(yml, f"model {name!r}"), entry, path, schema, sql, deps)

    project = Project(root=root, models=models, seeds=seeds, sources=frozenset(sources))
    for model in models.values():
        for dep in sorted(model.depends_on):
            _check_reference(project, dep, f"{model.path}: references {dep}")
        if model.qualified_name in model.depends_on:
            untyped = [c.name for c in model.columns if not c.data_type]
            if model.incremental is None or untyped or not model.columns:
                raise DependencyError(
                    f"{model.path}: model {model.qualified_name} reads itself; only an incremental model whose "
                    "columns all declare a data_type in its .yml may (its full build reads an empty relation "
                    f"of those types){'; untyped: ' + ', '.join(untyped) if untyped else ''}"
                )
            project.models[model.name] = model = replace(
                model, depends_on=model.depends_on - {model.qualified_name}, reads_itself=True)
        for test in model.tests:
            for dep in test.depends_on:
                _check_reference(project, dep, f"{model.yml_path}, model {name!r}, test {test.name}: {dep}")
    for seed in seeds.values():
        for test in seed.tests:
            for dep in test.depends_on:
                _check_reference(project, dep, f"{seed.yml_path}, seed {seed.name!r}, test {test.name}: {dep}")
    project.topological_order()  # raises on a cycle
    return project


def _check_reference(project: Project, qualified: str, where: str) -> None:
    schema, _, name = qualified.partition(".")
    if schema == "raw":
        if qualified not in project.sources:
            raise DependencyError(f"{where}: no raw table {qualified}; raw tables are {', '.join(sorted(project.sources))}")
        return
    if schema == SEED_SCHEMA:
        if name not in project.seeds:
            raise DependencyError(
                f"{where}: no seed {qualified}; add {project.root / SEED_SCHEMA / (name + '.csv')} or fix the name"
            )
        return
    model = project.models.get(name)
    if model is None:
        raise DependencyError(
            f"{where}: no model {qualified}; add {project.root / schema / (name + '.sql')} (with its .yml) "
            "or fix the name"
        )
    if model.schema != schema:
        raise DependencyError(f"{where}: model {name} is in schema {model.schema}; write {model.qualified_name}")
