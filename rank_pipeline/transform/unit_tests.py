"""SQL unit tests: a model's SELECT run on hand-written input rows in memory, compared with expected rows.

Written under the model in its ``.yml`` (dbt 1.8's layout); :func:`run_unit_test` returns a
:class:`UnitTestResult`; :func:`relation_types` types the inputs from the project built on empty inputs.
How a test runs and compares: docs/concepts/models.md, "SQL unit tests".
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

import duckdb

from rank_pipeline.errors import RankPipelineError
from rank_pipeline.transform.dependencies import MODEL_SCHEMAS, RAW_SCHEMA, SEED_SCHEMA
from rank_pipeline.transform.nodes import Model, UnitRows, UnitTest
from rank_pipeline.transform.project import Project
from rank_pipeline.transform.sql import one_row
from rank_pipeline.transform.sql import quote_ident as _qi

__all__ = ["FLOAT_DECIMALS", "UnitTestResult", "relation_types", "run_unit_test", "run_unit_tests"]

FLOAT_DECIMALS = 6
"""Floating and decimal values are compared rounded to this many decimals."""

_Pairs = tuple[tuple[str, str], ...]
# (project folder, (model, SQL) pairs, (raw table, its columns) pairs) -> relation_types' answer
_SKELETONS: dict[tuple[str, _Pairs, tuple[tuple[str, _Pairs], ...]], dict[str, list[tuple[str, str]]]] = {}


@dataclass(frozen=True)
class UnitTestResult:
    """Outcome of one unit test (docs/concepts/models.md, "SQL unit tests").

    Attributes:
        model, name: the model and the unit test's name.
        passed: the returned rows equal the expected rows (a multiset over ``columns``).
        seconds: wall time (tables created, SELECT run, rows compared).
        columns: the compared columns (those the expected rows name).
        missing, unexpected: expected rows not returned; rows returned not expected (tuples in ``columns``
        order).
        error: why the test could not run (a SQL error, an unknown expected column), else None.
    """

    __test__ = False

    model: str
    name: str
    passed: bool
    seconds: float
    columns: tuple[str, ...] = ()
    missing: list[tuple] = field(default_factory=list)
    unexpected: list[tuple] = field(default_factory=list)
    error: str | None = None

    def report(self, max_rows: int = 20) -> str:
        """Several lines: the verdict, then the differing rows as two small tables."""
        head = f"{'PASS' if self.passed else 'FAIL'} unit test {self.model}.{self.name} ({self.seconds:.2f} s)"
        if self.error:
            return f"{head}\n  could not run: {self.error}"
        if self.passed:
            return head
        lines = [head]
        for title, rows in (("expected but not returned", self.missing), ("returned but not expected", self.unexpected)):
            if not rows:
                continue
            lines.append(f"  {title} ({len(rows)} row(s)):")
            lines.extend("    " + line for line in _table(self.columns, rows[:max_rows]))
            if len(rows) > max_rows:
                lines.append(f"    ... {len(rows) - max_rows} more")
        return "\n".join(lines)


def _cell(value: Any) -> str:
    return "null" if value is None else str(value)


def _table(columns: Sequence[str], rows: Sequence[tuple]) -> list[str]:
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    out = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return out


def _describe(con: duckdb.DuckDBPyConnection, qualified: str) -> list[tuple[str, str]]:
    schema, _, name = qualified.partition(".")
    rows = con.execute(
        "select column_name, data_type from information_schema.columns where table_schema = ? and table_name = ? "
        "order by ordinal_position", [schema, name]).fetchall()
    return [(str(c), str(t)) for c, t in rows]


def relation_types(project: Project) -> dict[str, list[tuple[str, str]]]:
    """``{qualified relation: [(column, DuckDB type), ...]}`` of every raw table, seed and model, from the project
    built on empty raw tables (cached per project for the process). Raises BuildError: a model does not build.
    """
    from rank_pipeline.transform.duckdb_engine import DuckDBEngine
    from rank_pipeline.transform.materialize import build, build_seed

    key = (str(project.root), tuple(sorted((m.qualified_name, m.sql) for m in project.models.values())),
           tuple(sorted(project.raw_columns.items())))
    cached = _SKELETONS.get(key)
    if cached is not None:
        return cached
    with duckdb.connect(":memory:") as con:
        con.execute(f"create schema if not exists {_qi(RAW_SCHEMA)}")
        for source in sorted(project.sources):
            schema, _, name = source.partition(".")
            columns = ", ".join(f"{_qi(c)} {t}" for c, t in project.raw_columns[source])
            con.execute(f"create table {_qi(schema)}.{_qi(name)} ({columns})")
        for schema in (SEED_SCHEMA, *MODEL_SCHEMAS):
            con.execute(f"create schema if not exists {_qi(schema)}")
        engine = DuckDBEngine(con)
        for seed in project.seeds.values():
            build_seed(engine, seed)
        for model in project.topological_order():
            build(engine, model)
        names = [*sorted(project.sources), *(s.qualified_name for s in project.seeds.values()),
                 *(m.qualified_name for m in project.topological_order())]
        types = {q: _describe(con, q) for q in names}
    assert all(q.startswith(RAW_SCHEMA + ".") or types[q] for q in names)
    _SKELETONS[key] = types
    return types


def _create_input(con: duckdb.DuckDBPyConnection, project: Project, qualified: str,
                  columns: list[tuple[str, str]], given: UnitRows | None) -> None:
    from rank_pipeline.transform.materialize import seed_sql

    schema, _, name = qualified.partition(".")
    con.execute(f"create schema if not exists {_qi(schema)}")
    cols = ", ".join(f"{_qi(c)} {t}" for c, t in columns)
    con.execute(f"create table {_qi(schema)}.{_qi(name)} ({cols})")
    if given is None and schema == SEED_SCHEMA:
        con.execute(f"insert into {_qi(schema)}.{_qi(name)} by name {seed_sql(project.seeds[name])}")
        return
    if given is None or not given.rows:
        return
    known = dict(columns)
    unknown = [c for c in given.columns if c not in known]
    if unknown:
        raise _UnitError(f"given {qualified} names column(s) {unknown} it does not have; its columns are "
                         f"{', '.join(known)}")
    _insert(con, f"{_qi(schema)}.{_qi(name)}", [(c, known[c]) for c in given.columns], given.rows)


def _insert(con: duckdb.DuckDBPyConnection, table: str, columns: list[tuple[str, str]],
            rows: Iterable[Mapping[str, Any]]) -> None:
    names = ", ".join(_qi(c) for c, _ in columns)
    casts = ", ".join(f"cast(? as {t})" for _, t in columns)
    values = [[_param(r.get(c)) for c, _ in columns] for r in rows]
    try:
        con.executemany(f"insert into {table} ({names}) select {casts}", values)
    except duckdb.Error as exc:
        raise _UnitError(f"a value does not fit its column's type in {table}: {_first(exc)}") from None


def _param(value: Any) -> Any:
    if isinstance(value, dict | list):
        import json

        return json.dumps(value, default=str)
    return value


class _UnitError(RankPipelineError):
    pass


def _first(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def _normal(value: Any) -> Any:
    if isinstance(value, float | Decimal):
        value = round(float(value), FLOAT_DECIMALS)
        return 0.0 if value == 0 else value  # -0.0
    if isinstance(value, list):
        return tuple(_normal(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _normal(v)) for k, v in value.items()))
    return value


def _sort_key(row: tuple) -> tuple:
    return tuple((v is None, str(type(v)), str(v) if not isinstance(v, int | float | date) else v) for v in row)


SelectRunner = Callable[[Model, Mapping[str, Any]], Any]
"""Another engine's way of running a model's full-build SELECT: ``(model, {qualified input: pyarrow
Table})`` -> the output as a pyarrow Table (:meth:`rank_pipeline.transform.spark_engine.SparkEngine.run_unit_select`)."""


def run_unit_test(project: Project, model: Model, unit: UnitTest, engine: SelectRunner | None = None
                  ) -> UnitTestResult:
    """Run one unit test of ``model`` on DuckDB in memory (docs/concepts/models.md, "SQL unit tests"); never raises for a failing
    or broken test: the result says so.

    ``engine``: run the model's SELECT on another engine instead (the inputs are built and typed on
    DuckDB as above, handed over as Arrow tables, and the output compared on DuckDB the same way)."""
    from rank_pipeline.transform.rewrite import full_build_sql

    types = relation_types(project)  # once per process, not counted in the test's time
    started = time.perf_counter()
    given = {g.relation: g for g in unit.given}
    columns = unit.expect.columns
    try:
        with duckdb.connect(":memory:") as con:
            for qualified in sorted(model.depends_on):
                _create_input(con, project, qualified, types[qualified], given.get(qualified))
            if model.reads_itself:
                con.execute(f"create schema if not exists {_qi(model.schema)}")
            try:
                if engine is None:
                    con.execute(f"create temp table __actual as {full_build_sql(model)}")
                else:
                    inputs = {q: con.sql(f"select * from {_qi(q.partition('.')[0])}.{_qi(q.partition('.')[2])}")
                              .to_arrow_table() for q in sorted(model.depends_on)}
                    output = engine(model, inputs)  # noqa: F841 - read by name below
                    con.execute("create temp table __actual as select * from output")
            except duckdb.Error as exc:
                raise _UnitError(f"the model's SELECT failed: {_first(exc)}") from None
            except Exception as exc:  # noqa: BLE001 - another engine's error: the test fails, saying why
                raise _UnitError(f"the model's SELECT failed on the engine: {_first(exc)}") from None
            output = dict(_describe_temp(con, "__actual"))
            unknown = [c for c in columns if c not in output]
            if unknown:
                raise _UnitError(f"expected column(s) {unknown} are not output by {model.qualified_name}; it "
                                 f"outputs {', '.join(output)}")
            typed = [(c, output[c]) for c in columns]
            if typed:
                con.execute("create temp table __expected (" + ", ".join(f"{_qi(c)} {t}" for c, t in typed) + ")")
                _insert(con, "__expected", typed, unit.expect.rows)
                select = ", ".join(_qi(c) for c in columns)
                actual = [tuple(_normal(v) for v in r) for r in con.execute(f"select {select} from __actual").fetchall()]
                expected = [tuple(_normal(v) for v in r)
                            for r in con.execute(f"select {select} from __expected").fetchall()]
            else:  # no rows expected: the model must return none
                (n,) = one_row(con, "select count(*) from __actual")
                actual, expected = [()] * int(n), []
    except _UnitError as exc:
        return UnitTestResult(model.name, unit.name, False, time.perf_counter() - started, columns, error=str(exc))
    missing = sorted((Counter(expected) - Counter(actual)).elements(), key=_sort_key)
    unexpected = sorted((Counter(actual) - Counter(expected)).elements(), key=_sort_key)
    return UnitTestResult(model.name, unit.name, not missing and not unexpected, time.perf_counter() - started,
                          columns, missing, unexpected)


def _describe_temp(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[str, str]]:
    return [(str(r[0]), str(r[1])) for r in con.execute(f"describe {name}").fetchall()]


def run_unit_tests(project: Project, select: Sequence[str] = (), engine: SelectRunner | None = None
                   ) -> list[UnitTestResult]:
    """Every unit test of the models in ``select`` (all when empty), in build order.
    Raises KeyError: a name in ``select`` is not a model (the message lists them).
    """
    unknown = [s for s in select if s not in project.models]
    if unknown:
        raise KeyError(f"no model {', '.join(unknown)} in {project.root}; models are "
                       f"{', '.join(sorted(project.models))}")
    chosen = [m for m in project.topological_order() if not select or m.name in select]
    return [run_unit_test(project, m, u, engine) for m in chosen for u in m.unit_tests]
