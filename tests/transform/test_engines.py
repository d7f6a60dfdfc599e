"""One model-engine protocol: both engines offer every member of ``ModelEngine`` (building, loading the raw
tables, the failing rows of SELECTs, publishing), the flows (materialize.py, testing.py, warehouse/raw_load.py)
call nothing else, so a new engine is one class implementing it; only the factory (``warehouse/engines.py``)
branches on an engine's name, and nothing dispatches on an engine's class."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import duckdb
import pytest

from rank_pipeline.settings.engine import ENGINES
from rank_pipeline.transform.duckdb_engine import DuckDBEngine
from rank_pipeline.transform.primitives import ModelEngine

PACKAGE = Path(__file__).resolve().parents[2] / "rank_pipeline"


def _members(cls) -> set[str]:
    names = {n for n in vars(cls) if not n.startswith("_")}
    return names | set(getattr(cls, "__annotations__", {}))


def test_both_engines_offer_every_member_of_the_protocol_with_its_parameters():
    from rank_pipeline.transform import spark_engine  # imports without pyspark: the session is made on demand

    wanted = _members(ModelEngine)
    assert {"render", "watermark", "replace_whole", "replace_days", "load_raw", "failing_rows", "prepare",
            "publish"} <= wanted
    # the flows' own, for every engine: transform/materialize.py, transform/testing.py, warehouse/raw_load.py
    flow = {"build", "build_all", "build_seed", "affected_ranges", "run_tests", "test_days", "load_partitions",
            "reload_raw"}
    assert not flow & wanted
    assert not {"con", "spark", "incremental"} & wanted, "no engine's handle, no flag the same on every engine"
    for engine in (DuckDBEngine, spark_engine.SparkEngine):
        assert wanted <= _members(engine), (engine.__name__, sorted(wanted - _members(engine)))
        assert not flow & _members(engine), (engine.__name__, "an engine supplies primitives, not the flow")
        for name in wanted:
            declared = getattr(ModelEngine, name, None)
            if inspect.isfunction(declared):
                assert (list(inspect.signature(getattr(engine, name)).parameters)[:len(
                    inspect.signature(declared).parameters)] == list(inspect.signature(declared).parameters)), \
                    (engine.__name__, name)
    assert {DuckDBEngine.name, spark_engine.SparkEngine.name} == set(ENGINES)


def test_the_engine_name_is_branched_on_only_in_the_factory():
    branch = re.compile(r"""[!=]=\s*["'](duckdb|spark)["']|["'](duckdb|spark)["']\s*[!=]=|uses_spark|uses_duckdb""")
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if branch.search(line):
                found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert {f.split(":")[0] for f in found} == {"warehouse/engines.py"}, found  # open_engine


def test_nothing_dispatches_on_an_engine_class():
    """No ``isinstance`` (or ``type(...) is``) names an engine class anywhere in the package: an engine is
    told apart by the protocol's members alone."""
    engines = {"DuckDBEngine", "SparkEngine", "ModelEngine"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in {"isinstance", "issubclass", "type"}:
                names = {n.id if isinstance(n, ast.Name) else getattr(n, "attr", None)
                         for arg in node.args[1:] for n in ast.walk(arg)}
                if names & engines:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []


def test_only_duckdb_keeps_a_raw_table_no_snapshot_holds(tmp_path):
    """``raw.keywords_file`` is written where the engine keeps raw tables of its own: DuckDB's build file
    (replaced whole, in one transaction); Spark keeps none (its raw tables are the snapshots read in place)."""
    from rank_pipeline.settings import DataPaths, EngineSettings
    from rank_pipeline.transform.spark_engine import SparkEngine
    from rank_pipeline.warehouse.engines import KEYWORDS_FILE, open_engine, raw_columns

    row = {c: None for c, _ in raw_columns(KEYWORDS_FILE)} | {"keyword": "shoes", "tags": ["a", "b"]}
    with open_engine(EngineSettings(), DataPaths(tmp_path)) as engine:
        assert engine.replace_raw_rows(KEYWORDS_FILE, raw_columns(KEYWORDS_FILE), [row, row]) == 2
        assert engine.replace_raw_rows(KEYWORDS_FILE, raw_columns(KEYWORDS_FILE), [row]) == 1
        assert engine.row_count(f"raw.{KEYWORDS_FILE}") == 1
    assert SparkEngine(None, tmp_path / "spark").replace_raw_rows(KEYWORDS_FILE, raw_columns(KEYWORDS_FILE), [row]) is None


class ThirdEngine:
    """A new engine, defined here alone and known to no module of the package: it offers the members of
    ``ModelEngine`` and nothing else (each forwarded to DuckDB, so its results can be compared), and records
    which the flows used. Reading any other attribute fails the test."""

    name = "third"

    def __init__(self, inner: DuckDBEngine):
        self.__dict__["_inner"] = inner
        self.__dict__["used"] = set()

    def __getattr__(self, member: str):
        assert member in _members(ModelEngine), f"a flow read {member!r}, which the engine protocol does not list"
        self.used.add(member)
        return getattr(self._inner, member)


def test_a_new_engine_is_one_class_implementing_the_protocol(snapshots_dirs, tmp_path):
    """A class implementing only the protocol runs the pipeline's every flow: the raw load of the history and
    of days (``warehouse``), a build of every relation then of the last days with their tests
    (``transform.materialize``, ``transform.testing``), one relation's step (``steps.models``): the same
    results as the DuckDB engine it forwards to, without a flow reading anything the protocol does not list."""
    from rank_pipeline.steps.load import load_raw
    from rank_pipeline.steps.models import build_relation
    from rank_pipeline.transform import load_project
    from rank_pipeline.transform.materialize import build_all, run_all_tests
    from rank_pipeline.warehouse.engines import reload_raw
    from rank_pipeline.warehouse.raw_load import snapshot_dates

    history, recent = snapshots_dirs
    days = list(snapshot_dates(recent))
    project = load_project(PACKAGE.parent / "dbt_like_sql")

    def run(engine) -> tuple:
        reload_raw(engine, history)
        loaded = load_raw(engine, recent, days[0], days[-1])
        whole = build_all(engine, project, full_refresh=True)
        built = build_all(engine, project, days[0], until=days[-1])
        tests = {q: [(r.name, r.failures, r.sql) for r in results]
                 for q, results in run_all_tests(engine, project, built, days[0], days[-1])}
        step = build_relation(engine, project, project.models["fct_keyword_rankings_daily"], days[-1], days[-1],
                              snapshots_uri=recent)
        return (loaded.days, loaded.repeated, {q: (b.mode, b.rows) for q, b in whole.items()},
                {q: (b.mode, b.rows, b.partition_date, b.until) for q, b in built.items()}, tests,
                (step.built.mode, step.built.rows, step.first, step.last, [(r.name, r.failures) for r in step.tests]))

    third = ThirdEngine(DuckDBEngine(duckdb.connect(str(tmp_path / "third.duckdb"))))
    assert run(third) == run(DuckDBEngine(duckdb.connect(str(tmp_path / "duckdb.duckdb"))))
    assert {"load_raw", "failing_rows", "replace_days", "replace_whole", "column_types", "prepare"} <= third.used


def test_every_declared_raw_column_has_a_spark_type_and_an_unknown_one_is_named():
    """Spark gives a raw table with no snapshot yet the declared columns (``sources:``): each declared
    DuckDB type maps to a Spark type (a list to an array), and a type it cannot map is refused naming the table."""
    from rank_pipeline.transform import load_project
    from rank_pipeline.transform.errors import BuildError
    from rank_pipeline.transform.spark_dialect import spark_type_of as _spark_type_of

    project = load_project(PACKAGE.parent / "dbt_like_sql")
    types = {t for cols in project.raw_columns.values() for _, t in cols}
    assert {_spark_type_of(t, "x") for t in types} == {"date", "string", "timestamp", "int", "array<string>"}
    assert [_spark_type_of(t, "x") for t in ("boolean", "bigint", "double")] == ["boolean", "bigint", "double"]
    assert _spark_type_of("varchar[][]", "x") == "array<array<string>>"
    with pytest.raises(BuildError, match=r"raw\.rankings: no Spark type for the DuckDB type 'uuid'"):
        _spark_type_of("uuid", "rankings")
