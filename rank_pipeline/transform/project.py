"""Discover and validate a dbt-like SQL project.

Why it is shaped so: docs/concepts/architecture.md, "Warehouse and the dbt-like runner".

Layout of a project directory (``dbt_like_sql/``)::

    staging/<name>.sql + <name>.yml     models of schema ``staging``
    marts/<name>.sql + <name>.yml       models of schema ``marts``
    seeds/<name>.csv [+ <name>.yml]     seeds, loaded as tables ``seeds.<name>``
    sources/<name>.yml                  tables the pipeline writes itself (schema ``ops``), documented

A model is one file holding one plain DuckDB SELECT (no templating: it runs as-is in the duckdb shell).
Its schema is its top folder, its name the file stem; model names are unique across schemas. It refers
to relations only by qualified name: ``raw.<resource>``, ``seeds.<name>``, ``staging.<model>``,
``marts.<model>``; unqualified names must be CTEs. Dependencies are found by parsing the SQL with
sqlglot (DuckDB dialect).

Model ``.yml`` (dbt ``schema.yml`` style; any ``.yml`` under staging/ or marts/ may hold entries; the
schema is declared and validated in :mod:`rank_pipeline.transform.schema`)::

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

Source ``.yml`` (a table written by the pipeline's code, not by SQL: its columns and tests are
documented here, the data dictionary lists it, and its tests run as asset checks where it is
written; models do not read it)::

    sources:
      - name: run_history
        schema: ops
        description: "..."
        columns: [{name: run_id, data_type: VARCHAR, description: "...", tests: [not_null]}, ...]
        tests: [...]                                # as for models

Test names are short and stable, because each becomes a Dagster asset check: the ``name`` given, else
:func:`rank_pipeline.transform.names.default_test_name` (``not_null_<col>``, ``unique_<col>``,
``accepted_<col>``, ``<col>_in_<table>``, ``unique_domain_competitor``, the expression in words).
"""

from __future__ import annotations

import graphlib
import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from rank_pipeline.transform.dependencies import MODEL_SCHEMAS, RAW_SCHEMA, SEED_SCHEMA, sql_dependencies
from rank_pipeline.transform.errors import DependencyError, ModelConfigError
from rank_pipeline.transform.schema import (
    ColumnTest,
    ModelEntry,
    ModelLevelTest,
    SeedEntry,
    SourceEntry,
    UnitTestEntry,
    validate_entry,
)

__all__ = [
    "MODEL_SCHEMAS",
    "ColumnSpec",
    "IncrementalConfig",
    "Model",
    "Project",
    "Seed",
    "SourceTable",
    "TestSpec",
    "UnitRows",
    "UnitTest",
    "load_project",
    "loaded_project",
]

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
            of ``D .. D + lookback_days`` (see :mod:`rank_pipeline.transform.horizon`).
        strategy: ``delete+insert`` (default): the model's rows of the days built are replaced; or
            ``fold``: a relation without the date column (a dimension) that reads itself; a build of new
            days computes the whole new relation from its previous rows and the upstream rows dated after
            its ``watermark`` (see :mod:`rank_pipeline.transform.runner`).
        watermark: ``fold`` only: the output date column whose maximum is the last day folded in.
    """

    date_column: str = "snapshot_date"
    lookback_days: int = 0
    strategy: str = "delete+insert"
    watermark: str | None = None


@dataclass(frozen=True)
class UnitRows:
    """Rows of a unit test's input or expectation.

    Attributes:
        relation: the qualified input (``staging.stg_usage``); ``""`` for the expected rows.
        columns: the column names the rows mention, in first-seen order.
        rows: one mapping per row; values as YAML gave them (dates, numbers, text, null) or, from CSV,
            text (an empty field is null). Columns a row omits are null.
    """

    relation: str
    columns: tuple[str, ...]
    rows: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class UnitTest:
    """One SQL unit test of a model (``unit_tests:`` in its ``.yml``): given rows for some of the
    relations the model reads (the others are empty), the rows the model must return (compared as a
    multiset on the expected columns; see :mod:`rank_pipeline.transform.unit_tests`)."""

    __test__ = False  # not a pytest test class

    name: str
    model: str
    description: str
    given: tuple[UnitRows, ...]
    expect: UnitRows


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
    unit_tests: tuple[UnitTest, ...] = ()

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


@dataclass(frozen=True)
class SourceTable:
    """A table the pipeline's code writes (``sources/<name>.yml``), e.g. ``ops.run_history``.

    Attributes:
        columns: every column with its DuckDB ``data_type``, in ``.yml`` order; tests: as for models
            (run on the whole table).
    """

    name: str
    schema: str
    description: str
    columns: tuple[ColumnSpec, ...]
    tests: tuple[TestSpec, ...]
    yml_path: Path | None = None
    materialized: str = "source"
    depends_on: frozenset[str] = frozenset()

    @property
    def qualified_name(self) -> str:
        """``<schema>.<name>``."""
        return f"{self.schema}.{self.name}"


# --------------------------------------------------------------------------------------------- yml


def _test_specs(entry: ModelEntry | SeedEntry | SourceEntry, blocking_default: bool | Sequence[str]
                ) -> tuple[tuple[ColumnSpec, ...], tuple[TestSpec, ...]]:
    """Validated columns and tests -> specs, each test's ``blocking`` resolved: its own, else listed in
    ``config.blocking_tests``, else the ``blocking_tests`` boolean."""

    def spec(test: ColumnTest | ModelLevelTest, column: str | None) -> TestSpec:
        name = test.test_name(column)
        if test.blocking is not None:
            blocking = test.blocking
        elif isinstance(blocking_default, bool):
            blocking = blocking_default
        else:
            blocking = name in blocking_default
        return TestSpec(name, test.kind, column, test.params(), blocking, test.depends_on())

    columns = tuple(
        ColumnSpec(c.name, c.description, c.data_type or None, tuple(spec(t, c.name) for t in c.tests))
        for c in entry.columns
    )
    tests = tuple(t for c in columns for t in c.tests) + tuple(spec(t, None) for t in entry.tests)
    return columns, tests


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """SafeLoader that refuses a key repeated in one mapping (PyYAML keeps the last one silently,
    which would drop e.g. a test's first ``blocking:`` without a word); on libyaml's parser where PyYAML
    has it (the project's ``.yml`` files are read at every definitions load and every raw load)."""

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
    unknown = sorted(set(doc) - {"version", "models", "seeds", "sources", "contract", "raw_sources"})
    if unknown:
        raise ModelConfigError(f"{path}: unknown top-level key(s) {unknown}; expected `models:`, `seeds:`, "
                               "`sources:` or (the vendor's contract, sources/vendor_contract.yml) `raw_sources:` and `contract:`")
    return dict(doc)


def _unit_rows(yml: Path, where: str, relation: str, raw: Any) -> UnitRows:
    """Inline mappings, CSV text or a CSV fixture file -> :class:`UnitRows`."""
    import csv
    import io

    if raw.fixture is not None:
        path = (yml.parent / raw.fixture).resolve()
        try:
            text = path.read_text()
        except OSError as exc:
            raise ModelConfigError(f"{where}: cannot read the fixture {path}: {exc.strerror}; the path is "
                                   f"relative to {yml}") from None
    elif isinstance(raw.rows, str):
        text = raw.rows
    else:
        rows = tuple(dict(r) for r in raw.rows or ())
        columns = tuple(dict.fromkeys(c for r in rows for c in r))
        return UnitRows(relation, columns, rows)
    reader = csv.DictReader(io.StringIO(text.strip() + "\n"))
    columns = tuple(c.strip() for c in reader.fieldnames or ())
    rows = tuple({c.strip(): (v if v != "" else None) for c, v in r.items()} for r in reader)
    if not columns:
        raise ModelConfigError(f"{where}: the CSV rows have no header line; start with the column names")
    return UnitRows(relation, columns, rows)


def _unit_tests(yml: Path, model_name: str, units: list[UnitTestEntry]) -> tuple[UnitTest, ...]:
    out = []
    for unit in units:
        where = f"{yml}, model {model_name!r}, unit test {unit.name!r}"
        given = tuple(_unit_rows(yml, f"{where}, given {g.input}", g.input, g) for g in unit.given)
        seen = [g.relation for g in given]
        twice = sorted({r for r in seen if seen.count(r) > 1})
        if twice:
            raise ModelConfigError(f"{where}: {twice} given twice; give each input once")
        expect = _unit_rows(yml, f"{where}, expect", "", unit.expect)
        if not expect.columns and expect.rows:
            raise ModelConfigError(f"{where}: the expected rows name no column")
        out.append(UnitTest(unit.name, model_name, unit.description, given, expect))
    return tuple(out)


def _model(yml: Path, raw: Any, sql_path: Path, schema: str, sql: str, deps: frozenset[str]) -> Model:
    entry = validate_entry(ModelEntry, raw, f"{yml}, model {sql_path.stem!r}")
    columns, tests = _test_specs(entry, entry.config.blocking_tests)
    inc = entry.incremental_config()
    return Model(
        name=entry.name, schema=schema, path=sql_path, sql=sql, description=entry.description,
        materialized=entry.config.materialized, columns=columns, tests=tests, depends_on=deps,
        unique_key=tuple(entry.config.unique_key or ()),
        incremental=None if inc is None else IncrementalConfig(inc.date_column, inc.lookback_days, inc.strategy,
                                                               inc.watermark),
        yml_path=yml, unit_tests=_unit_tests(yml, entry.name, entry.unit_tests),
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
        raw_columns: ``{raw table: ((column, DuckDB type), ...)}`` as ``raw_sources:`` declares them.
        tables: ``{qualified name: SourceTable}``, the tables the pipeline writes (``sources/``).
    """

    root: Path
    models: dict[str, Model]
    seeds: dict[str, Seed]
    sources: frozenset[str] = frozenset()
    tables: dict[str, SourceTable] = field(default_factory=dict)
    raw_columns: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)

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


def _named_entries(yml: Path, doc: Mapping[str, Any], key: str, name_hint: str,
                   list_hint: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(name, entry)`` of each entry under ``key`` of a ``.yml`` (seeds, sources, models).

    Raises:
        ModelConfigError: ``key`` is not a list, or an entry has no string ``name:`` (``name_hint`` says
            what the name is).
    """
    entries = doc.get(key) or []
    if not isinstance(entries, list):
        raise ModelConfigError(f"{yml}: `{key}:` must be a list{list_hint}")
    for i, raw in enumerate(entries):
        name = raw.get("name") if isinstance(raw, Mapping) else None
        if not isinstance(name, str):
            raise ModelConfigError(f"{yml}, {key}[{i}]: every entry needs a `name:` ({name_hint})")
        yield name, raw


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
        if "models" in doc or "sources" in doc:
            raise ModelConfigError(f"{yml}: files under seeds/ describe seeds (`seeds:`), not models or sources")
        for name, raw in _named_entries(yml, doc, "seeds", "the .csv file stem"):
            where = f"{yml}, seed {name!r}"
            if name not in seeds:
                raise ModelConfigError(f"{where}: no {folder / (name + '.csv')} for this entry")
            if seeds[name].yml_path is not None:
                raise ModelConfigError(f"{where}: seed is also described in {seeds[name].yml_path}")
            entry = validate_entry(SeedEntry, raw, where)
            columns, tests = _test_specs(entry, False)
            types = dict(entry.config.column_types)
            for col in columns:
                if col.data_type:
                    types.setdefault(col.name, col.data_type)
            seeds[name] = Seed(
                name=name, path=seeds[name].path, description=entry.description,
                version=None if entry.version is None else str(entry.version), column_types=types,
                columns=columns, tests=tests, checksum=seeds[name].checksum, yml_path=yml,
            )
    return seeds


SOURCES_FOLDER = "sources"


def _load_source_tables(root: Path) -> dict[str, SourceTable]:
    folder = root / SOURCES_FOLDER
    tables: dict[str, SourceTable] = {}
    if not folder.is_dir():
        return tables
    for yml in sorted(folder.glob("*.yml")):
        doc = _load_yml(yml)
        if "models" in doc or "seeds" in doc:
            raise ModelConfigError(f"{yml}: files under {SOURCES_FOLDER}/ describe tables (`sources:`), not models "
                                   "or seeds")
        for name, raw in _named_entries(yml, doc, "sources", "the table's name"):
            entry = validate_entry(SourceEntry, raw, f"{yml}, source {name!r}")
            columns, tests = _test_specs(entry, False)
            table = SourceTable(entry.name, entry.schema_, entry.description, columns, tests, yml)
            if table.qualified_name in tables:
                raise ModelConfigError(f"{yml}: {table.qualified_name} is also described in "
                                       f"{tables[table.qualified_name].yml_path}")
            tables[table.qualified_name] = table
    return tables


def _load_raw_sources(root: Path) -> dict[str, tuple[tuple[str, str], ...]]:
    """``{raw.<name>: ((column, DuckDB type), ...)}`` for every table of the ``raw_sources:`` mappings under
    ``sources/`` (the shipped project declares them in ``sources/vendor_contract.yml``, beside the vendor's
    contract): ``raw_sources: {name: {column: type, ...}, ...}``, columns in table order."""
    found: dict[str, tuple[tuple[str, str], ...]] = {}
    folder = root / SOURCES_FOLDER
    for yml in sorted(folder.glob("*.yml")) if folder.is_dir() else []:
        tables = _load_yml(yml).get("raw_sources", {})
        if not isinstance(tables, dict) or not all(
                isinstance(n, str) and _NAME_RE.match(n) and isinstance(cols, dict) and cols
                and all(isinstance(c, str) and isinstance(t, str) and t.strip() for c, t in cols.items())
                for n, cols in tables.items()):
            raise ModelConfigError(f"{yml}: `raw_sources:` maps each raw table name (lower-case letters, digits "
                                   f"and _) to its columns and their DuckDB types ({{snapshot_date: date, ...}}), "
                                   f"got {tables!r}")
        for name, cols in tables.items():
            qualified = f"{RAW_SCHEMA}.{name}"
            if qualified in found:
                raise ModelConfigError(f"{yml}: raw source {name!r} is declared twice under {folder}")
            found[qualified] = tuple((c, t.strip()) for c, t in cols.items())
    return found


def load_project(project_dir: Path | str) -> Project:
    """Discover, parse and validate a project (see the module docstring for its layout).

    Args:
        project_dir: the ``dbt_like_sql`` folder.

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
        if "seeds" in doc or "sources" in doc:
            raise ModelConfigError(f"{yml}: seeds and sources are described under seeds/ and sources/, not beside "
                                   "models")
        for name, entry in _named_entries(yml, doc, "models", "the .sql file stem", " of model entries"):
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
        models[name] = _model(yml, entry, path, schema, sql, deps)

    raw = _load_raw_sources(root)
    project = Project(root=root, models=models, seeds=seeds, sources=frozenset(raw), raw_columns=raw,
                      tables=_load_source_tables(root))
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
        for unit in model.unit_tests:
            for given in unit.given:
                if given.relation not in model.depends_on:
                    reads = ", ".join(sorted(model.depends_on)) or "nothing"
                    raise DependencyError(
                        f"{model.yml_path}, model {model.name!r}, unit test {unit.name!r}: given {given.relation}, "
                        f"which the model does not read; it reads {reads}")
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


_loaded: dict[Path, tuple[tuple, Project]] = {}


def loaded_project(project_dir: Path | str) -> Project:
    """:func:`load_project` of ``project_dir``, parsed again only when a file of the folder was added,
    removed or edited (its content) since this process last parsed it: the definitions, and each run's vendor-shape
    check, read the same project (parsing its ``.yml`` and ``.sql`` files takes a good part of a second).
    The project returned is shared: read it, never change it.

    Raises:
        ProjectError: as :func:`load_project`.
    """
    root = Path(project_dir).resolve()
    stamp = _folder_stamp(root)
    loaded = _loaded.get(root)
    if stamp is None or loaded is None or loaded[0] != stamp:
        loaded = _loaded[root] = (stamp, load_project(root))
    return loaded[1]


def _folder_stamp(root: Path) -> tuple | None:
    """Every file under ``root`` with a digest of its content (a millisecond or two for the project's
    files); None when the folder changed while it was read."""
    try:
        return tuple((str(path), hashlib.blake2b(path.read_bytes(), digest_size=16).digest())
                     for path in sorted(root.rglob("*")) if path.is_file())
    except OSError:
        return None
