"""Loading the Dagster definitions (what ``workspace.yaml`` points at) reads the environment once: one
``Settings.from_env`` in ``rank_pipeline.settings``, and no other settings reader called from outside that
module, so ``Definitions`` are built from one settings object, as Dagster's conventions have it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PROBE = r'''
import collections, functools, inspect, json, sys
import rank_pipeline.settings as settings

calls = collections.Counter()

def counted(name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        caller = sys._getframe(1).f_globals.get("__name__")
        if caller != "rank_pipeline.settings":  # a reader called by another reader is part of that one read
            calls[f"{name} from {caller}"] += 1
        return fn(*args, **kwargs)
    return wrapper

for name, obj in list(vars(settings).items()):
    if inspect.isfunction(obj) and name.endswith("from_env"):
        setattr(settings, name, counted(name, obj))
    elif inspect.isclass(obj) and obj.__module__ == settings.__name__ and "from_env" in vars(obj):
        fn = vars(obj)["from_env"].__func__
        setattr(obj, "from_env", classmethod(counted(f"{name}.from_env", fn)))

from rank_pipeline.defs.definitions import defs
defs.get_repository_def()  # resolve every job, schedule and sensor
print(json.dumps(dict(calls)))
'''


def test_loading_the_definitions_reads_the_environment_once(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK_TRACKER_", "RANK_PIPELINE_"))}
    env |= {"RANK_PIPELINE_DATA_DIR": str(tmp_path / "data"), "RANK_PIPELINE_FRESHNESS_HOURS": "30",
            "RANK_PIPELINE_ENGINE": "duckdb"}
    done = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    calls = json.loads(done.stdout.strip().splitlines()[-1])
    assert calls == {"Settings.from_env from rank_pipeline.defs.definitions": 1}, calls
