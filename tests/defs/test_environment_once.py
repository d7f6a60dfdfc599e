"""Loading the Dagster definitions (what ``workspace.yaml`` points at) reads the environment once: one
``component_settings_from_env`` of ``rank_pipeline.settings`` (the component's attributes, none here, with the
environment over them), and no other settings reader called from outside that
package (a reader called from any ``rank_pipeline.settings.*`` module is part of the read that called it),
so ``Definitions`` are built from one settings object, as Dagster's conventions have it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from support import command_env

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "rank_pipeline" / "settings"

_PROBE = r'''
import collections, functools, importlib, inspect, json, pkgutil, sys
import rank_pipeline.settings as settings

calls = collections.Counter()

def in_settings(module):
    """True for the settings package and each of its modules."""
    return module == settings.__name__ or (module or "").startswith(settings.__name__ + ".")

def counted(name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        caller = sys._getframe(1).f_globals.get("__name__")
        if not in_settings(caller):  # a reader called by another reader is part of that one read
            calls[f"{name} from {caller}"] += 1
        return fn(*args, **kwargs)
    return wrapper

# every module of the package: a reader is wrapped where it is defined and wherever it is re-exported, so a
# caller counts whether it imports it from rank_pipeline.settings or from the module that defines it
modules = [settings] + [importlib.import_module(f"{settings.__name__}.{info.name}")
                        for info in pkgutil.iter_modules(settings.__path__)]
wrappers, classes = {}, {}
for module in modules:
    for name, obj in vars(module).items():
        if inspect.isfunction(obj) and name.endswith("from_env") and in_settings(obj.__module__):
            wrappers.setdefault(obj, counted(obj.__name__, obj))
        elif inspect.isclass(obj) and in_settings(obj.__module__) and "from_env" in vars(obj):
            classes[obj.__name__] = obj
for module in modules:
    for name, obj in list(vars(module).items()):
        if inspect.isfunction(obj) and obj in wrappers:
            setattr(module, name, wrappers[obj])
for name, cls in classes.items():
    fn = vars(cls)["from_env"].__func__
    setattr(cls, "from_env", classmethod(counted(f"{name}.from_env", fn)))
wrapped = sorted([fn.__name__ for fn in wrappers] + [f"{name}.from_env" for name in classes])

from rank_pipeline.defs.definitions import defs
defs.get_repository_def()  # resolve every job, schedule and sensor
print(json.dumps({"calls": dict(calls), "wrapped": wrapped}))
'''


def _readers() -> list[str]:
    """Every reader the settings package defines, from its source: each module-level ``*from_env`` function
    and each class's ``from_env`` (``Class.from_env``)."""
    found = []
    for path in sorted(SETTINGS.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.endswith("from_env"):
                found.append(node.name)
            elif isinstance(node, ast.ClassDef):
                found += [f"{node.name}.from_env" for item in node.body
                          if isinstance(item, ast.FunctionDef) and item.name == "from_env"]
    return sorted(found)


def test_loading_the_definitions_reads_the_environment_once(tmp_path):
    env = command_env({"RANK_PIPELINE_DATA_DIR": str(tmp_path / "data"), "RANK_PIPELINE_FRESHNESS_HOURS": "30",
                       "RANK_PIPELINE_ENGINE": "duckdb"})
    done = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["wrapped"] == _readers()  # every reader is watched, wherever in the package it is defined
    assert probe["calls"] == {"component_settings_from_env from rank_pipeline.defs.component": 1}, probe["calls"]
