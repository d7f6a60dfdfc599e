"""One model-engine interface: both engines offer every member of ``ModelEngine`` (building, testing and
publishing; loading the raw tables is not the engine's), and only the pipeline's engine module
(``warehouse/engines.py``: the factory and the raw loading) branches on an engine's name."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

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
    assert {"render", "watermark", "replace_whole", "replace_days", "run_tests", "prepare", "publish"} <= wanted
    flow = {"build", "build_all", "build_seed", "affected_ranges"}  # transform/materialize.py's, for every engine
    assert not flow & wanted
    assert not {"con", "load_partitions", "reload_raw"} & wanted, "raw loading and DuckDB's connection left the interface"
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
    assert {f.split(":")[0] for f in found} == {"warehouse/engines.py"}, found  # open_engine and the raw loading


def test_only_duckdb_hands_out_its_build_file_connection(tmp_path):
    """``raw.keywords_file`` is written where the engine has a build file: DuckDB's connection, none on Spark
    (the branch lives in warehouse/engines.py, where this test sees both sides)."""
    from rank_pipeline.settings import DataPaths, EngineSettings
    from rank_pipeline.transform.spark_engine import SparkEngine
    from rank_pipeline.warehouse.engines import build_file_connection, open_engine

    with open_engine(EngineSettings(), DataPaths(tmp_path)) as engine:
        assert isinstance(engine, DuckDBEngine)
        con = build_file_connection(engine)
        assert con is engine.con and con.execute("select 1").fetchone() == (1,)
    assert build_file_connection(SparkEngine(None, tmp_path / "spark")) is None


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
