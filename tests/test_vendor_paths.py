"""The vendor's paths have one home: the contract (``dbt_like_sql/sources/vendor_contract.yml``).

No string in ``rank_pipeline/`` writes a path the contract declares (``matchType``, ``dataRows.remaining``,
``$.results.organic.position``), nor reads a key of one from a record's ``attributes`` by hand
(``attributes.get("code")``), outside the contract's parser (``transform/contract.py``) and the sandbox (which
serves the vendor's shapes). Python reads a field by its name through the contract, as staging does, so a remap
of the vendor's shape is an edit of the contract alone. Docstrings and comments may name a path.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from rank_pipeline.transform.contract import load_contract

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rank_pipeline"
EXEMPT = (PACKAGE / "transform" / "contract.py", PACKAGE / "sandbox")


def _vendor_words(models: Path) -> tuple[set[str], set[str]]:
    """``(words, keys)`` of the contract in ``models``: ``words`` are what no string may hold as a whole word (a
    dotted path, a camelCase path or key: never one of our snake_case names); ``keys`` every key of a path (read
    by hand when looked up in ``attributes``)."""
    words: set[str] = set()
    keys: set[str] = set()
    for fields in load_contract(models).fields.values():
        for f in fields:
            parts = f.path.split(".")
            keys.update(parts)
            if len(parts) > 1 or f.path != f.path.lower():
                words.add(f.path)
            words.update(k for k in parts if k != k.lower())
    return words, keys


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def vendor_paths_written(source: str, name: str, words: set[str], keys: set[str]) -> list[str]:
    """``name:line: ...`` for each string of ``source`` (docstrings aside) holding one of ``words`` as a whole
    word, and each ``.get(key)`` or ``[key]`` of a key in ``keys`` on an expression naming ``attributes``."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    pattern = re.compile(r"(?<![\w.$])(?:\$\.)?(" + "|".join(sorted(map(re.escape, words), key=len, reverse=True))
                         + r")(?![\w])") if words else None
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip and pattern:
            for match in pattern.finditer(node.value):
                found.append(f"{name}:{node.lineno}: writes the vendor path {match.group(1)!r}")
        key = owner = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and isinstance(node.args[0], ast.Constant):
            key, owner = node.args[0].value, node.func.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key, owner = node.slice.value, node.value
        if isinstance(key, str) and key in keys and owner is not None and "attributes" in ast.unparse(owner):
            found.append(f"{name}:{node.lineno}: reads the key {key!r} of a record's attributes by hand")
    return sorted(set(found))


def test_no_vendor_path_is_written_in_the_package_outside_the_contract_and_the_sandbox():
    words, keys = _vendor_words(ROOT / "dbt_like_sql")
    assert {"matchType", "dataRows.remaining", "dataRows", "location.code", "results.organic.position"} <= words
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == EXEMPT[0] or EXEMPT[1] in path.parents:
            continue
        problems += vendor_paths_written(path.read_text(), str(path.relative_to(ROOT)), words, keys)
    assert problems == []


def test_the_check_names_a_path_written_again_and_a_key_read_by_hand():
    words, keys = _vendor_words(ROOT / "dbt_like_sql")
    source = '''
"""Docstrings may name ``dataRows.remaining``."""
def quota(attributes, row):
    """Reads ``matchType``."""
    left = attributes.get("dataRows", {}).get("remaining")  # a comment may say location.code
    code = row["attributes"]["code"]
    sql = "select attributes->>'$.results.organic.position' from raw.keywords"
    return left, code, sql, row.get("code"), "the keyword's search_engine and location_code"
'''
    assert vendor_paths_written(source, "m.py", words, keys) == [
        "m.py:5: reads the key 'dataRows' of a record's attributes by hand",
        "m.py:5: reads the key 'remaining' of a record's attributes by hand",
        "m.py:5: writes the vendor path 'dataRows'",
        "m.py:6: reads the key 'code' of a record's attributes by hand",
        "m.py:7: writes the vendor path 'results.organic.position'",
    ]
