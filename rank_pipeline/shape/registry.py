"""The vendor's unread fields, recorded once when first seen (``<data folder>/vendor_fields.json``), so a run
reports only the paths new to the folder: ``{"<endpoint>": {"<path>": {"first_seen": "YYYY-MM-DD", "seen":
"<type, share>"}}}``, written atomically under the writer lock (docs/concepts/shape-check.md).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path

__all__ = ["record_unread"]


def _read(path: Path) -> dict[str, dict[str, dict]]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except ValueError:
        return {}  # a damaged file is rebuilt: at worst, the paths are announced again
    return data if isinstance(data, dict) else {}


def record_unread(path: Path, day: date, unread: Mapping[str, Mapping[str, str]],
                  reads: Callable[[str, str, set[str]], bool] | None = None) -> dict[str, dict[str, str]]:
    """Record ``unread`` (``{endpoint: {path: "type, share"}}`` seen on ``day``) in ``path``, forgetting the paths
    ``reads(endpoint, path, types)`` says the contract now reads; returns the paths first seen now, same shape.
    """
    known = _read(path)
    forgotten = False
    if reads is not None:
        for endpoint, recorded in known.items():
            for field_path in [p for p, e in recorded.items()
                               if reads(endpoint, p, set(str(e.get("seen", "")).split(",")[0].split("|")))]:
                del recorded[field_path]
                forgotten = True
    new: dict[str, dict[str, str]] = {}
    for endpoint, paths in unread.items():
        for field_path, seen in paths.items():
            if field_path not in known.setdefault(endpoint, {}):
                known[endpoint][field_path] = {"first_seen": day.isoformat(), "seen": seen}
                new.setdefault(endpoint, {})[field_path] = seen
    if new or forgotten:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".vendor_fields.", suffix=".json")
        with os.fdopen(fd, "w") as handle:
            json.dump(known, handle, indent=2, sort_keys=True)
        os.replace(tmp, path)
    return new
