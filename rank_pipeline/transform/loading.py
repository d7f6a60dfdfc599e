"""Read a project folder into its nodes: ``.yml`` (strict YAML), ``.sql`` (``vendor.<endpoint>`` compiled),
seed CSVs, ``sources:`` and ``pipeline_tables:``; each entry validated by :mod:`rank_pipeline.transform.schema`.

Layout: docs/concepts/models.md, "The project".
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from rank_pipeline.transform import shared_cache
from rank_pipeline.transform.contract import CONTRACT_FILE, load_contract
from rank_pipeline.transform.dependencies import MODEL_SCHEMAS, RAW_SCHEMA, SEED_SCHEMA, sql_dependencies
from rank_pipeline.transform.errors import ModelConfigError
from rank_pipeline.transform.flatten import VENDOR_SCHEMA, compile_vendor_relations
from rank_pipeline.transform.nodes import (
    ColumnSpec,
    IncrementalConfig,
    Model,
    PipelineTable,
    Seed,
    TestSpec,
    UnitRows,
    UnitTest,
)
from rank_pipeline.transform.schema import (
    ColumnTest,
    ModelEntry,
    ModelLevelTest,
    PipelineTableEntry,
    SeedEntry,
    UnitTestEntry,
    validate_entry,
)
from rank_pipeline.transform.yaml_loader import StrictLoader

__all__ = ["SOURCES_FOLDER", "load_models", "load_pipeline_tables", "load_raw_sources", "load_seeds"]

SOURCES_FOLDER = "sources"
_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


# ------------------------------------------------------------------------------------------ the yml


def _load_yml(path: Path) -> dict:
    """The top-level mapping of a project ``.yml`` (``{}`` when empty). Raises ModelConfigError: not valid YAML,
    a repeated key, a top level that is no mapping, an unknown top-level key.
    """
    try:
        doc = yaml.load(path.read_text(), Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ModelConfigError(f"{path}: not valid YAML: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, Mapping):
        raise ModelConfigError(f"{path}: the top level must be a mapping with `models:` or `seeds:`")
    unknown = sorted(set(doc) - {"version", "models", "seeds", "sources", "pipeline_tables", "contract"})
    if unknown:
        renamed = "; `raw_sources:` is now `sources:`" if "raw_sources" in unknown else ""
        raise ModelConfigError(f"{path}: unknown top-level key(s) {unknown}; expected `models:`, `seeds:`, "
                               "`sources:` (the raw tables, sources/raw.yml), `pipeline_tables:` (the tables the "
                               "pipeline writes, sources/run_history.yml) or `contract:` (the vendor's contract, "
                               f"sources/vendor_contract.yml){renamed}")
    return dict(doc)


def _named_entries(yml: Path, doc: Mapping[str, Any], key: str, name_hint: str,
                   list_hint: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(name, entry)`` of each entry under ``key`` of a ``.yml``; raises ModelConfigError when ``key`` is not a
    list or an entry has no string ``name:`` (``name_hint`` says what the name is).
    """
    entries = doc.get(key) or []
    if not isinstance(entries, list):
        raise ModelConfigError(f"{yml}: `{key}:` must be a list{list_hint}")
    for i, raw in enumerate(entries):
        name = raw.get("name") if isinstance(raw, Mapping) else None
        if not isinstance(name, str):
            raise ModelConfigError(f"{yml}, {key}[{i}]: every entry needs a `name:` ({name_hint})")
        yield name, raw


def _test_specs(entry: ModelEntry | SeedEntry | PipelineTableEntry, blocking_default: bool | Sequence[str]
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



# ------------------------------------------------------------------------------------------ models


def load_models(root: Path) -> dict[str, Model]:
    """``{name: Model}`` for every ``.sql`` under ``staging/`` and ``marts/``, with its ``.yml`` entry and the
    relations its SQL reads (checked by :mod:`rank_pipeline.transform.graph`).

    Raises:
        ModelConfigError: a ``.sql`` elsewhere, a bad or repeated name, not exactly one ``.yml`` entry, an entry
            without its ``.sql``, a malformed entry.
        ModelSqlError: a ``.sql`` that is not one plain SELECT or references relations badly.
    """
    sql_files = _model_files(root)
    entries = _model_entries(root, sql_files)
    vendor = _vendor_relations(root)
    models: dict[str, Model] = {}
    for name, (path, schema) in sql_files.items():
        if name not in entries:
            raise ModelConfigError(
                f"{path}: model {name!r} has no .yml entry; add {path.with_suffix('.yml')} with "
                "`models: [{name: ..., description: ..., config: {materialized: ...}}]`"
            )
        sql = vendor(path.read_text(), path)
        yml, entry = entries[name]
        models[name] = _model(yml, entry, path, schema, sql, sql_dependencies(sql, str(path)))
    return models


def _vendor_relations(root: Path) -> Callable[[str, Path], str]:
    """The compiler of a model's ``vendor.<endpoint>`` references (:mod:`rank_pipeline.transform.flatten`),
    reading the project's contract and raw tables once, and only when a model reads such a relation; each
    compiled SQL kept under its SQL, contract file and raw tables (:mod:`rank_pipeline.transform.shared_cache`)."""
    state: dict[str, Any] = {}
    contract_file = root / CONTRACT_FILE

    def compile_sql(sql: str, path: Path) -> str:
        if f"{VENDOR_SCHEMA}." not in sql.lower():
            return sql
        if not state:
            state["text"] = contract_file.read_text() if contract_file.exists() else None
            state["raw"] = {q.removeprefix(f"{RAW_SCHEMA}."): [c for c, _ in cols]
                            for q, cols in load_raw_sources(root).items()}
        key = shared_cache.digest(sql, repr(state["text"]), repr(sorted(state["raw"].items())))
        kept = shared_cache.read("vendor", key)
        if isinstance(kept, str):
            return kept
        if "contract" not in state:  # an entry is kept only once its contract file loaded
            state["contract"] = load_contract(root) if state["text"] is not None else None
        compiled = compile_vendor_relations(sql, state["contract"], state["raw"], path)
        shared_cache.write("vendor", key, compiled)
        return compiled

    return compile_sql


def _model_files(root: Path) -> dict[str, tuple[Path, str]]:
    """``{name: (.sql path, schema)}``: the file stem is the name, unique across schemas; the top folder
    the schema."""
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
    return sql_files


def _model_entries(root: Path, sql_files: Mapping[str, tuple[Path, str]]
                   ) -> dict[str, tuple[Path, Mapping[str, Any]]]:
    """``{name: (.yml path, raw entry)}`` of the ``models:`` entries under ``staging/`` and ``marts/``, each
    beside its model's ``.sql`` and described once."""
    entries: dict[str, tuple[Path, Mapping[str, Any]]] = {}
    for yml in sorted(p for s in MODEL_SCHEMAS if (root / s).is_dir() for p in (root / s).rglob("*.yml")):
        doc = _load_yml(yml)
        if {"seeds", "sources", "pipeline_tables"} & set(doc):
            raise ModelConfigError(f"{yml}: seeds, sources and pipeline tables are described under seeds/ and "
                                   "sources/, not beside models")
        for name, entry in _named_entries(yml, doc, "models", "the .sql file stem", " of model entries"):
            if name in entries:
                raise ModelConfigError(f"{yml}: model {name!r} is also described in {entries[name][0]}")
            if name not in sql_files:
                raise ModelConfigError(f"{yml}, model {name!r}: there is no {name}.sql in the project for this entry")
            if sql_files[name][0].parent != yml.parent:
                raise ModelConfigError(f"{yml}, model {name!r}: the .yml must be beside {sql_files[name][0]}")
            entries[name] = (yml, entry)
    return entries


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



# ---------------------------------------------------------------------------------- seeds, sources


def load_seeds(root: Path) -> dict[str, Seed]:
    """``{name: Seed}`` for every ``seeds/<name>.csv``, with its ``.yml`` entry under ``seeds/`` if any.

    Raises ModelConfigError: a bad seed name, an entry without its CSV, a seed described twice, a malformed entry.
    """
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
        if {"models", "sources", "pipeline_tables"} & set(doc):
            raise ModelConfigError(f"{yml}: files under seeds/ describe seeds (`seeds:`), not models, sources or "
                                   "pipeline tables")
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


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_pipeline_tables(root: Path) -> dict[str, PipelineTable]:
    """``{qualified name: PipelineTable}`` for every ``pipeline_tables:`` entry under ``sources/`` (tables the
    pipeline's code writes). Raises ModelConfigError: a malformed entry, a table described twice.
    """
    folder = root / SOURCES_FOLDER
    tables: dict[str, PipelineTable] = {}
    if not folder.is_dir():
        return tables
    for yml in sorted(folder.glob("*.yml")):
        doc = _load_yml(yml)
        if "models" in doc or "seeds" in doc:
            raise ModelConfigError(f"{yml}: files under {SOURCES_FOLDER}/ describe tables (`sources:`, "
                                   "`pipeline_tables:`), not models or seeds")
        for name, raw in _named_entries(yml, doc, "pipeline_tables", "the table's name"):
            entry = validate_entry(PipelineTableEntry, raw, f"{yml}, pipeline table {name!r}")
            columns, tests = _test_specs(entry, False)
            table = PipelineTable(entry.name, entry.schema_, entry.description, columns, tests, yml)
            if table.qualified_name in tables:
                raise ModelConfigError(f"{yml}: {table.qualified_name} is also described in "
                                       f"{tables[table.qualified_name].yml_path}")
            tables[table.qualified_name] = table
    return tables


def load_raw_sources(root: Path) -> dict[str, tuple[tuple[str, str], ...]]:
    """``{raw.<name>: ((column, DuckDB type), ...)}`` for every table of the ``sources:`` mappings under ``sources/``
    (``sources: {name: {column: type, ...}}``, columns in table order): the tables the raw load fills.

    Raises ModelConfigError: a malformed ``sources:`` mapping, a raw table declared twice.
    """
    found: dict[str, tuple[tuple[str, str], ...]] = {}
    folder = root / SOURCES_FOLDER
    for yml in sorted(folder.glob("*.yml")) if folder.is_dir() else []:
        tables = _load_yml(yml).get("sources", {})
        if isinstance(tables, list) and all(isinstance(t, Mapping) and "name" in t for t in tables):
            raise ModelConfigError(f"{yml}: `sources:` maps each raw table name to its columns; a list of tables "
                                   "with `name:`, `schema:` and `columns:` (tables the pipeline writes) goes under "
                                   "`pipeline_tables:`")
        if not isinstance(tables, dict) or not all(
                isinstance(n, str) and _NAME_RE.match(n) and isinstance(cols, dict) and cols
                and all(isinstance(c, str) and isinstance(t, str) and t.strip() for c, t in cols.items())
                for n, cols in tables.items()):
            raise ModelConfigError(f"{yml}: `sources:` maps each raw table name (lower-case letters, digits "
                                   f"and _) to its columns and their DuckDB types ({{snapshot_date: date, ...}}), "
                                   f"got {tables!r}")
        for name, cols in tables.items():
            qualified = f"{RAW_SCHEMA}.{name}"
            if qualified in found:
                raise ModelConfigError(f"{yml}: raw source {name!r} is declared twice under {folder}")
            found[qualified] = tuple((c, t.strip()) for c, t in cols.items())
    return found
