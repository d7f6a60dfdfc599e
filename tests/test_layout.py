"""The package tree reads as the pipeline's stages, imports only go down, and no two modules import each other.

Stages, lowest first: ``errors`` (the one exception root) < ``settings`` < ``api``, ``transform`` < ``sandbox`` <
``snapshots`` < ``shape``, ``extract`` < ``warehouse`` < ``folder_lock`` < ``steps`` < ``operations``, ``keywords`` <
``defs`` < ``cli``. A module may import its own package and any lower stage, never a higher one nor a sibling of the
same rank; no module lies loose in ``rank_pipeline/`` but ``errors.py``. Imports inside functions count as much as
those at the top.

``settings`` holds values only: no module of it takes a lock (``fcntl``) or deletes a file; the data folder's lock
and the removal of dead runs' leftovers are ``folder_lock``'s.

The model runner (``transform``) stands alone: it imports nothing of the pipeline but the exception root and the
settings (no ``api``, ``snapshots``, ``warehouse`` or ``extract``); the pipeline hands it the raw tables
(``warehouse/engines.py``) and the raw sources are declared in yml beside the SQL.
"""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rank_pipeline"
STAGES: dict[str, int] = {
    "errors": -1, "settings": 0, "api": 1, "transform": 1, "sandbox": 2, "snapshots": 3, "shape": 4, "extract": 4,
    "warehouse": 5, "folder_lock": 6, "steps": 7, "operations": 8, "keywords": 8, "defs": 9, "cli": 10,
}


def _imported_stages(source: str) -> list[tuple[int, str]]:
    """``(line, stage)`` for every ``rank_pipeline.<stage>`` import in ``source``, nested ones included."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] if node.module != "rank_pipeline" else [f"rank_pipeline.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "rank_pipeline" and len(parts) > 1:
                found.append((node.lineno, parts[1]))
    return found


def _violations(package: Path = PACKAGE) -> list[str]:
    bad = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel == Path("__init__.py"):
            continue
        stage = rel.parts[0].removesuffix(".py")
        if stage not in STAGES:
            bad.append(f"{rel}: lies outside the stage packages {sorted(STAGES)}")
            continue
        for line, target in _imported_stages(path.read_text()):
            if target == stage:
                continue
            if target not in STAGES:
                bad.append(f"{rel}:{line}: imports rank_pipeline.{target}, which is no stage")
            elif STAGES[target] >= STAGES[stage]:
                bad.append(f"{rel}:{line}: {stage} (rank {STAGES[stage]}) imports {target} (rank {STAGES[target]})")
    return bad


def test_imports_only_go_from_a_higher_stage_to_a_lower_one():
    assert _violations() == []


def test_the_check_catches_an_upward_import(tmp_path):
    pkg = tmp_path / "rank_pipeline"
    (pkg / "api").mkdir(parents=True)
    (pkg / "api" / "client.py").write_text("def f():\n    from rank_pipeline.defs import jobs\n")
    (pkg / "loose.py").write_text("")
    (pkg / "transform").mkdir()
    (pkg / "transform" / "runner.py").write_text("from rank_pipeline.errors import RankPipelineError\n"
                                                 "def f():\n    from rank_pipeline.api import endpoints\n")
    assert _violations(pkg) == [
        "api/client.py:2: api (rank 1) imports defs (rank 9)",
        "loose.py: lies outside the stage packages " + str(sorted(STAGES)),
        "transform/runner.py:3: transform (rank 1) imports api (rank 1)",
    ]


def test_the_model_runner_imports_only_the_exception_root_and_the_settings():
    """Whatever the ranks say: ``transform`` imports nothing of ``api``, ``snapshots``, ``warehouse``, ``extract``
    or any other stage (the rank above holds it too; this says it in the runner's own terms)."""
    imported = {(path.relative_to(PACKAGE).as_posix(), target) for path in sorted((PACKAGE / "transform").rglob("*.py"))
                for _, target in _imported_stages(path.read_text()) if target != "transform"}
    assert {target for _, target in imported} <= {"errors", "settings"}, sorted(imported)


def test_the_architecture_page_names_every_stage_package():
    page = (PACKAGE.parent / "docs" / "concepts" / "architecture.md").read_text()
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(STAGES) - {"errors"}
    for name in sorted(packages):
        assert re.search(rf"`{name}/`", page), f"docs/concepts/architecture.md does not describe {name}/"


def _module_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """``{module: modules it imports}`` within the package, nested imports included (a module imported
    as ``from rank_pipeline.pkg import name`` counts as ``pkg.name`` when that is a module, else ``pkg``)."""
    root = package.name
    modules = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith(root):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    targets.add(sub if sub in modules else node.module)
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name.startswith(root + ".")}
        graph[name] = {m for m in targets if m in modules and m != name}
    return graph


def test_no_import_cycles_between_modules():
    try:
        graphlib.TopologicalSorter(_module_graph()).prepare()
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle: {' -> '.join(exc.args[1])}") from None


def test_the_cycle_check_sees_a_nested_import(tmp_path):
    pkg = tmp_path / "rank_pipeline" / "transform"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "engines.py").write_text("def f():\n    from rank_pipeline.transform.spark_engine import S\n")
    (pkg / "spark_engine.py").write_text("from rank_pipeline.transform.engines import f\nS = 1\n")
    graph = _module_graph(tmp_path / "rank_pipeline")
    assert graph["rank_pipeline.transform.engines"] == {"rank_pipeline.transform.spark_engine"}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError:
        return
    raise AssertionError("the cycle was not seen")


_DELETING_CALLS = {"unlink", "rmdir", "rmtree", "removedirs"}
"""Methods or functions that delete files whatever they are called on (``Path.unlink``, ``shutil.rmtree``); ``remove``
counts only on ``os`` (a list's ``remove`` deletes nothing)."""


def _locks_and_deletions(source: str) -> list[str]:
    """``line: what`` for each ``fcntl`` import and each call that deletes a file in ``source``."""
    found = []
    deleting_names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] == "fcntl"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "fcntl":
                found.append(f"{node.lineno}: from {node.module} import")
            elif node.module in ("os", "shutil", "pathlib"):
                deleting_names |= {a.asname or a.name for a in node.names if a.name in _DELETING_CALLS | {"remove"}}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and (
                func.attr in _DELETING_CALLS
                or (func.attr == "remove" and isinstance(func.value, ast.Name) and func.value.id == "os")):
            found.append(f"{node.lineno}: {ast.unparse(func)}()")
        elif isinstance(func, ast.Name) and func.id in deleting_names:
            found.append(f"{node.lineno}: {func.id}()")
    return found


def test_settings_takes_no_lock_and_deletes_no_file():
    offences = {path.relative_to(PACKAGE / "settings").as_posix(): found
                for path in sorted((PACKAGE / "settings").rglob("*.py"))
                if (found := _locks_and_deletions(path.read_text()))}
    assert offences == {}


def test_the_settings_check_sees_locks_and_deletions():
    source = ("import fcntl\nimport os, shutil\nfrom shutil import rmtree as rm\nfrom pathlib import Path\n"
              "os.remove('a')\nos.unlink('a')\nshutil.rmtree('d')\nPath('a').unlink()\nPath('d').rmdir()\nrm('d')\n"
              "[1].remove(1)\nos.environ.pop('X', None)\n")
    assert _locks_and_deletions(source) == [
        "1: import fcntl", "5: os.remove()", "6: os.unlink()", "7: shutil.rmtree()", "8: Path('a').unlink()",
        "9: Path('d').rmdir()", "10: rm()",
    ]
    assert _locks_and_deletions("from fcntl import flock\n") == ["1: from fcntl import"]


def _names_imported_from(module: str, roots: list[Path]) -> set[str]:
    """Names imported as ``from <module> import name`` in the Python files under ``roots``, nested imports included."""
    names = set()
    for root in roots:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module == module and node.level == 0:
                    names |= {a.name for a in node.names}
    return names


def test_settings_exports_what_its_readers_import_from_it():
    """``rank_pipeline.settings`` re-exports the names the package, tests, benchmarks and examples import from it, and no
    others (those are imported from their own module)."""
    import rank_pipeline.settings as settings

    root = PACKAGE.parent
    outside = [p for p in PACKAGE.iterdir() if p.is_dir() and p.name != "settings"]
    readers = _names_imported_from("rank_pipeline.settings", [*outside, *(root / d for d in ("tests", "benchmarks",
                                                                                               "examples", "docs"))])
    unread = sorted(set(settings.__all__) - readers)
    assert unread == [], f"rank_pipeline.settings exports {unread}, which no reader imports from it: drop them from " \
                         "its __all__ and imports (readers import them from their module)"
    assert readers <= set(settings.__all__), sorted(readers - set(settings.__all__))
