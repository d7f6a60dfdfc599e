"""One model-engine interface: both engines offer every member of ``ModelEngine``, and only the factory
turns an engine's name into an engine."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from rank_pipeline.transform.engines import ENGINES, ModelEngine
from rank_pipeline.transform.runner import DuckDBEngine

PACKAGE = Path(__file__).resolve().parents[2] / "rank_pipeline"


def _members(cls) -> set[str]:
    names = {n for n in vars(cls) if not n.startswith("_")}
    return names | set(getattr(cls, "__annotations__", {}))


def test_both_engines_offer_every_member_of_the_protocol_with_its_parameters():
    from rank_pipeline.transform import spark_engine  # imports without pyspark: the session is made on demand

    wanted = _members(ModelEngine)
    assert {"build", "build_all", "run_tests", "load_partitions", "reload_raw", "publish"} <= wanted
    for engine in (DuckDBEngine, spark_engine.SparkEngine):
        assert wanted <= _members(engine), (engine.__name__, sorted(wanted - _members(engine)))
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
    assert [f.split(":")[0] for f in found] == ["transform/engines.py"], found  # in open_engine
