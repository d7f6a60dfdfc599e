"""Docstrings are reference, and every reference to code resolves.

(a) The docstrings of ``rank_pipeline/`` (the first statement of a module, class or function, when a string)
are at most :data:`MAX_SHARE` of the package's lines, and none is longer than :data:`MAX_LINES`: proofs,
measurements and design notes live in ``docs/concepts/``, and a docstring links there by path.

(b) Every reference to the package resolves: a dotted ``rank_pipeline.x.y`` (imported, then ``getattr`` for
the rest) and a Sphinx role (``:mod:``, ``:func:``, ``:class:``, ``:meth:``, ``:data:``, ``:attr:``,
``:exc:``, resolved from the docstring's module and class as Sphinx would) in the package's docstrings, in
``docs/**/*.md`` and in ``pyproject.toml``; a repository path (``rank_pipeline/x/y.py``,
``docs/concepts/x.md``) exists, and a docs page named with a section (``docs/concepts/pacing.md, "429s"``)
has a heading that starts with it. Names outside the package are checked only when their library imports.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rank_pipeline"
MAX_SHARE = 0.15
MAX_LINES = 30

_DOTTED = re.compile(r"(?<![\w./-])rank_pipeline(?:\.[A-Za-z_]\w*)+")
_ROLE = re.compile(r":(mod|func|class|meth|data|attr|exc):`~?(?:[^`<]*<)?([^`<>]+?)>?`")
_PATH = re.compile(r"(?<![\w./-])((?:rank_pipeline|docs|tests|benchmarks|dbt_like_sql|examples|dashboards)"
                   r"/[\w./-]*\w\.(?:py|md|yml|yaml|csv|json|sql|toml))(?:,\s+\"([^\"]+)\")?")
_GENERATED_PAGES = {"docs/reference/settings.md", "docs/reference/cli.md", "docs/reference/exit-codes.md"}


def _docstring_nodes(tree: ast.Module) -> Iterator[tuple[ast.AST, ast.Constant, list[str]]]:
    """``(owner, string, enclosing class names)`` of every module, class and function docstring."""
    def walk(node: ast.AST, classes: list[str]) -> Iterator[tuple[ast.AST, ast.Constant, list[str]]]:
        body = getattr(node, "body", None)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            yield node, body[0].value, classes
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from walk(child, [*classes, child.name])
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from walk(child, classes)
    yield from walk(tree, [])


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def docstring_lines(package: Path = PACKAGE) -> tuple[int, int, list[str]]:
    """``(docstring lines, all lines, docstrings over MAX_LINES as "path:line name (n)")`` of ``package``."""
    doc = total = 0
    long = []
    for path in sorted(package.rglob("*.py")):
        source = path.read_text()
        total += len(source.splitlines())
        for owner, string, _ in _docstring_nodes(ast.parse(source)):
            lines = string.end_lineno - string.lineno + 1
            doc += lines
            if lines > MAX_LINES:
                long.append(f"{path.relative_to(package.parent)}:{string.lineno} "
                            f"{getattr(owner, 'name', '<module>')} ({lines})")
    return doc, total, long


def test_docstrings_are_at_most_15_percent_of_the_package_and_none_over_30_lines():
    doc, total, long = docstring_lines()
    assert long == [], "docstrings over 30 lines: move the design notes to docs/concepts/ and link them"
    assert doc / total <= MAX_SHARE, f"docstrings are {doc}/{total} = {doc / total:.1%} of rank_pipeline/"


@functools.cache
def _resolve_dotted(name: str) -> bool:
    """Import the longest importable prefix of ``name``, then ``getattr`` the rest."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as exc:
            if exc.name and not ".".join(parts[:cut]).startswith(exc.name):
                raise  # the module exists but imports something missing: not a stale reference
            continue
        for attr in parts[cut:]:
            if hasattr(obj, attr):
                obj = getattr(obj, attr)
            elif isinstance(obj, type) and _is_field(obj, attr):
                obj = None  # a dataclass or pydantic field without a class-level default: nothing below it
            else:
                return False
        return True
    return False


def _is_field(cls: type, name: str) -> bool:
    """A field a class declares without a class attribute: a dataclass or pydantic field without a default, an
    annotated attribute, or an instance attribute one of its methods assigns (``self.name = ...``)."""
    if any(name in getattr(c, "__annotations__", {}) for c in cls.__mro__) \
            or name in getattr(cls, "__dataclass_fields__", {}) or name in getattr(cls, "model_fields", {}):
        return True
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return False
    return re.search(rf"\bself\.{re.escape(name)}\s*(?::[^=\n]+)?=(?!=)", source) is not None


def _resolve_role(target: str, module: str, classes: list[str]) -> bool | None:
    """Whether a role's target resolves from ``module`` (and its enclosing ``classes``); None: a name outside
    the package whose library is not installed."""
    target = target.strip().rstrip("()")
    if target.startswith("."):
        is_package = (PACKAGE / Path(*module.split(".")[1:]) / "__init__.py").exists()
        return _resolve_dotted((module if is_package else module.rsplit(".", 1)[0]) + target)
    head = target.split(".")[0]
    scopes = [module] + [".".join([module, *classes[:i]]) for i in range(len(classes), 0, -1)]
    for scope in reversed(scopes):
        if _resolve_dotted(f"{scope}.{head}"):
            return _resolve_dotted(f"{scope}.{target}")
    if head == "rank_pipeline" or "." not in target:
        return _resolve_dotted(target) or _resolve_dotted(f"builtins.{target}")
    try:
        importlib.import_module(head)
    except ImportError:
        return None  # another library's name, not installed here
    return _resolve_dotted(target)


def _headings(page: Path) -> list[str]:
    return [line.lstrip("#").strip().replace("`", "").lower() for line in page.read_text().splitlines()
            if line.startswith("#")]


def _path_problems(text: str, where: str) -> list[str]:
    bad = []
    for match in _PATH.finditer(text):
        path, section = match.group(1), match.group(2) and " ".join(match.group(2).split())
        if path in _GENERATED_PAGES:
            continue
        if not (ROOT / path).exists():
            bad.append(f"{where}: {path} does not exist")
        elif section and path.endswith(".md") and path.startswith("docs/") and not any(
                h.startswith(section.replace("`", "").lower()) for h in _headings(ROOT / path)):
            bad.append(f"{where}: {path} has no section starting {section!r}")
    return bad


def reference_problems(text: str, where: str, module: str | None = None, classes: list[str] | None = None
                       ) -> list[str]:
    """One line per reference in ``text`` that does not resolve (``module``: the docstring's, for roles)."""
    flat = re.sub(r"\s*\n\s*", " ", text)  # a name or a section broken over two lines
    bad = [f"{where}: {name}" for name in sorted(set(_DOTTED.findall(flat))) if not _resolve_dotted(name)]
    if module is not None:
        for role, target in _ROLE.findall(flat):
            if _resolve_role(target, module, classes or []) is False:
                bad.append(f"{where}: :{role}:`{target}`")
    return bad + _path_problems(flat, where)


@pytest.mark.slow  # imports every module the references name, Dagster's definitions and pyspark among them
def test_every_reference_in_docstrings_docs_and_pyproject_resolves():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        for _, string, classes in _docstring_nodes(ast.parse(path.read_text())):
            where = f"{path.relative_to(ROOT)}:{string.lineno}"
            bad += reference_problems(string.value, where, module, classes)
    for page in sorted((ROOT / "docs").rglob("*.md")):
        bad += reference_problems(page.read_text(), str(page.relative_to(ROOT)))
    pyproject = (ROOT / "pyproject.toml").read_text()
    bad += [f"pyproject.toml: {name}" for name in sorted(set(_DOTTED.findall(pyproject)))
            if not _resolve_dotted(name)]
    for module, attr in re.findall(r"\"(rank_pipeline[\w.]*):(\w+)\"", pyproject):
        if not _resolve_dotted(f"{module}.{attr}"):
            bad.append(f"pyproject.toml: {module}:{attr}")
    assert bad == [], "references that do not resolve:\n" + "\n".join(bad)


@pytest.mark.parametrize(("text", "found"), [
    ("see rank_pipeline.transform.spark_session.no_such_name.",
     ["x: rank_pipeline.transform.spark_session.no_such_name"]),
    ("see rank_pipeline.api.pacing.SlidingWindowLimiter.acquire.", []),
    (":func:`effective_limit` and :class:`~rank_pipeline.api.keys.KeyPool`", []),
    (":meth:`acquired_twice`", ["x: :meth:`acquired_twice`"]),
    ("Design: docs/concepts/pacing.md, \"Requests in flight\".", []),
    ("Design: docs/concepts/pacing.md, \"No such section\".",
     ["x: docs/concepts/pacing.md has no section starting 'No such section'"]),
    ("moved to rank_pipeline/api/nowhere.py", ["x: rank_pipeline/api/nowhere.py does not exist"]),
])
def test_the_reference_check_sees_a_stale_name_a_missing_section_and_a_missing_file(text, found):
    assert reference_problems(text, "x", "rank_pipeline.api.pacing") == found


def test_the_count_sees_every_kind_of_docstring_and_a_long_one(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    long_doc = '"""' + "\n".join(["line"] * 31) + '"""'
    (package / "mod.py").write_text(f'"""Module."""\n\n\nclass C:\n    """Class."""\n\n    def m(self):\n'
                                    f'        {long_doc}\n\n\ndef f():\n    x = 1\n    """Not a docstring."""\n')
    doc, total, long = docstring_lines(package)
    assert (doc, long) == (33, ["pkg/mod.py:8 m (31)"])
    assert total == len((package / "mod.py").read_text().splitlines())
