"""Only :mod:`rank_pipeline.settings` reads the ``RANK_*`` environment variables, and it reads all of them.

The scan parses every module under ``rank_pipeline/`` (except those of the settings package) and reports each
environment access whose variable is, or may be, a ``RANK_*`` one:

- ``os.environ.get/pop/setdefault(K)``, ``os.environ[K]``, ``K in os.environ``, ``os.getenv(K)``, and
  the same on a mapping named like an environment (``env``, ``environ``, ``environment``, ``*_env``,
  or ``os.environ if env is None else env``);
- where ``K`` is a ``"RANK_..."`` literal, an f-string or sum starting with ``RANK_``, a name or attribute
  bound anywhere in the package to a ``"RANK_..."`` string constant (``SHARD_ENV``), or a name computed
  at run time (a key variable, ``account.api_key_env``: it may be a ``RANK_`` variable);
- and any ``.startswith("RANK_...")``: selecting variables by prefix.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

import rank_pipeline
from rank_pipeline import settings as settings_module
from rank_pipeline.settings import Settings, models_dir

PACKAGE = Path(rank_pipeline.__file__).resolve().parent
SETTINGS = Path(settings_module.__file__).resolve().parent
"""The settings package's folder: its modules are the readers."""

_ENV_NAME = re.compile(r"^(env|environ|environment)$|_env$")
_ENV_METHODS = {"get", "pop", "setdefault"}
_OS_READERS = {"getenv", "getenvb", "putenv", "unsetenv"}


def _rank_string(value: object) -> bool:
    return isinstance(value, str) and value.startswith("RANK_")


def rank_constants(sources: Iterable[str]) -> set[str]:
    """Names assigned a ``"RANK_..."`` string constant (``X = "RANK_..."``) in ``sources``."""
    names: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and _rank_string(node.value.value):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif (isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Constant)
                  and _rank_string(node.value.value) and isinstance(node.target, ast.Name)):
                names.add(node.target.id)
    return names


def _is_environment(node: ast.expr) -> bool:
    if isinstance(node, ast.IfExp):  # (os.environ if env is None else env).get(...)
        return _is_environment(node.body) or _is_environment(node.orelse)
    if isinstance(node, ast.Attribute):
        return node.attr in ("environ", "environb") or bool(_ENV_NAME.search(node.attr))
    return isinstance(node, ast.Name) and bool(_ENV_NAME.search(node.id))


def _key(node: ast.expr | None, constants: set[str]) -> str | None:
    """Why ``node``, used as an environment key, may name a ``RANK_`` variable; None when it cannot."""
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return repr(node.value) if _rank_string(node.value) else None
    if isinstance(node, ast.JoinedStr):
        first = node.values[0] if node.values else None
        if isinstance(first, ast.Constant) and not _rank_string(first.value):
            return None
        return "an f-string name" + (f" {first.value!r}..." if isinstance(first, ast.Constant) else "")
    if isinstance(node, ast.BinOp):
        return _key(node.left, constants)
    if isinstance(node, ast.Name) and node.id in constants:
        return f"{node.id} (a RANK_ constant)"
    if isinstance(node, ast.Attribute) and node.attr in constants:
        return f"{ast.unparse(node)} (a RANK_ constant)"
    return f"{ast.unparse(node)} (a name computed at run time)"


def scan(source: str, path: str, constants: set[str]) -> list[str]:
    """``path:line: what`` for each environment access in ``source`` that may read a ``RANK_`` variable."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        what = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if func.attr in _ENV_METHODS and _is_environment(func.value) and node.args:
                if (why := _key(node.args[0], constants)) is not None:
                    what = f"{ast.unparse(func)}({why})"
            elif func.attr in _OS_READERS and isinstance(func.value, ast.Name) and func.value.id == "os" and node.args:
                if (why := _key(node.args[0], constants)) is not None:
                    what = f"os.{func.attr}({why})"
            elif (func.attr == "startswith" and node.args and isinstance(node.args[0], ast.Constant)
                  and _rank_string(node.args[0].value)):
                what = f"selects variables by the prefix {node.args[0].value!r}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _OS_READERS:
            if node.args and (why := _key(node.args[0], constants)) is not None:
                what = f"{node.func.id}({why})"
        elif isinstance(node, ast.Subscript) and _is_environment(node.value):
            if (why := _key(node.slice, constants)) is not None:
                what = f"{ast.unparse(node.value)}[{why}]"
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            if any(_is_environment(c) for c in node.comparators):
                if (why := _key(node.left, constants)) is not None:
                    what = f"{why} in {ast.unparse(node.comparators[0])}"
        if what is not None:
            found.append((node.lineno, what))
    return [f"{path}:{line}: {what}" for line, what in sorted(found)]


def _package_sources() -> dict[Path, str]:
    return {path: path.read_text() for path in sorted(PACKAGE.rglob("*.py"))}


def test_only_the_settings_module_reads_rank_variables():
    sources = _package_sources()
    constants = rank_constants(sources.values())
    assert {"SHARD_ENV", "SNAPSHOTS_URI_ENV", "LOCK_TIMEOUT_ENV"} <= constants  # the scan resolves named keys
    found = [line for path, source in sources.items() if SETTINGS not in path.parents
             for line in scan(source, str(path.relative_to(PACKAGE.parent)), constants)]
    assert not found, ("RANK_* variables read outside rank_pipeline/settings/ (read them through "
                       "Settings, or a reader of the settings package):\n" + "\n".join(found))


SAMPLE = '''\
import os
from os import environ, getenv
TIMEOUT = "RANK_PIPELINE_LOCK_TIMEOUT_S"
a = os.environ.get("RANK_TRACKER_BASE_URL")
b = os.environ["RANK_PIPELINE_DATA_DIR"]
c = getenv("RANK_PIPELINE_SHARD")
def f(env, name, account):
    d = env.get(TIMEOUT)
    e = "RANK_PIPELINE_ENGINE" in environ
    g = env.get(f"RANK_TRACKER_API_KEY_{name.upper()}")
    h = os.environ.pop(account.api_key_env)
    i = [k for k in os.environ if k.startswith("RANK_")]
    j = os.environ.get("HOME"), env.get("AWS_REGION"), os.getenv(f"JAVA_{name}")
    k = settings.SNAPSHOTS_URI_ENV, {"x": 1}.get(TIMEOUT), print("RANK_PIPELINE_SHARD is ignored")
    m = os.getenv(settings.SNAPSHOTS_URI_ENV) or self.env["RANK_PIPELINE_ENGINE"]
    n = (os.environ if env is None else env).get("RANK_PIPELINE_SNAPSHOTS_URI")
'''


def test_the_scan_names_each_offending_file_and_line():
    constants = rank_constants([SAMPLE, *(path.read_text() for path in sorted(SETTINGS.glob("*.py")))])
    found = scan(SAMPLE, "rank_pipeline/sample.py", constants)
    lines = [int(f.split(":")[1]) for f in found]
    assert lines == [4, 5, 6, 8, 9, 10, 11, 12, 15, 15, 16], "\n".join(found)
    assert found[0] == "rank_pipeline/sample.py:4: os.environ.get('RANK_TRACKER_BASE_URL')"
    assert "TIMEOUT (a RANK_ constant)" in found[3]
    assert "account.api_key_env (a name computed at run time)" in found[6]
    assert any("settings.SNAPSHOTS_URI_ENV (a RANK_ constant)" in f for f in found[8:])


class _Recording(dict):
    """An environment that records the names looked up in it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)


def test_the_settings_module_reads_every_rank_variable_the_package_names(tmp_path):
    env = _Recording({"RANK_TRACKER_BASE_URL": "https://api.example.com", "RANK_TRACKER_ACCOUNTS": "acme",
                      "RANK_TRACKER_API_KEY_ACME": "k", "RANK_PIPELINE_DATA_DIR": str(tmp_path)})
    settings = Settings.from_env(env)
    models_dir(env)
    single = _Recording({"RANK_TRACKER_BASE_URL": "https://api.example.com", "RANK_TRACKER_API_KEY": "k",
                         "RANK_PIPELINE_DATA_DIR": str(tmp_path)})
    Settings.from_env(single)  # the single account ``default`` reads RANK_TRACKER_API_KEY
    read = env.read | single.read
    named = set()
    for source in _package_sources().values():  # not the patterns RANK_TRACKER_API_KEY_<NAME>, RANK_PIPELINE_SCHEDULE_*
        named.update(re.findall(r"\bRANK_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_]*[*<{])", source))
    assert named - read == set()
    assert settings.accounts[0].api_key_env in read
    assert settings_module.api_key(settings.accounts[0], env) == "k"
