"""The project a command runs in: the nearest folder, the working folder or above, whose ``pyproject.toml`` has a
``[tool.dg]`` table of a project (create-dagster's layout; ``rank-pipeline init`` writes one) or a
``[tool.rank_pipeline]`` table (:func:`project_root`); its defs folder as ``dg`` finds it (:func:`defs_folder`);
and its ``.env``, which ``dg`` reads (:func:`project_dotenv`, :func:`load_project_dotenv`). Only the standard
library: the command line reads this before any command.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

from rank_pipeline.settings.values import ConfigurationError

__all__ = ["defs_folder", "load_project_dotenv", "project_dotenv", "project_root"]


def _dg_table(folder: Path) -> dict | None:
    """``[tool.dg]`` of ``folder/pyproject.toml`` (or ``dg.toml``'s top level) with ``[tool.rank_pipeline]`` as
    ``"rank_pipeline"``; None without either. Raises ConfigurationError: the file is not valid TOML.
    """
    for name in ("pyproject.toml", "dg.toml"):
        path = folder / name
        if not path.is_file():
            continue
        try:
            doc = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigurationError(f"{path} cannot be read as TOML: {exc}") from None
        tool = doc.get("tool", {}) if name == "pyproject.toml" else {"dg": doc}
        dg, ours = tool.get("dg"), tool.get("rank_pipeline")
        if isinstance(dg, dict) or isinstance(ours, dict):
            return {**(dg if isinstance(dg, dict) else {}), "rank_pipeline": ours}
    return None


def project_root(start: Path | None = None) -> tuple[Path, dict] | None:
    """The project holding ``start`` (default: the working folder) and its ``[tool.dg]`` table: the nearest folder,
    ``start`` or above, with a ``[tool.dg]`` of a project or a ``[tool.rank_pipeline]``; None when the nearest
    such table is a dg workspace's, or there is none."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        table = _dg_table(folder)
        if table is None:
            continue
        if table.get("directory_type") == "workspace" and table.get("rank_pipeline") is None:
            return None
        return folder, table
    return None


def defs_folder(root: Path, table: Mapping[str, Any]) -> Path:
    """The project's defs folder, as ``dg`` finds it: ``<root module>.defs`` (``defs_module`` when set, else
    ``definitions`` when ``defs`` is missing) under ``src/`` when there is one, else under the root."""
    found = table.get("project")
    project: Mapping[str, Any] = found if isinstance(found, dict) else {}
    module = str(project.get("root_module") or root.name.replace("-", "_"))
    base = root / "src" if (root / "src").is_dir() else root
    defs_module = str(project.get("defs_module") or f"{module}.defs")
    folder = base.joinpath(*defs_module.split("."))
    if not project.get("defs_module") and not folder.exists():
        folder = base.joinpath(*module.split("."), "definitions")
    return folder


def project_dotenv(start: Path | None = None) -> dict[str, str]:
    """The variables of the ``.env`` at the root of the project holding ``start`` (default: the working folder),
    which ``dg`` and ``dagster dev`` read (``rank-pipeline init`` writes ``DAGSTER_HOME`` there); {} outside a
    project or without the file. Its values may be secrets: never log them."""
    found = project_root(start)
    path = found[0] / ".env" if found is not None else None
    if path is None or not path.is_file():
        return {}
    values = {}
    for line in path.read_text().splitlines():  # NAME=value, `export ` and quotes as python-dotenv reads them
        match = _DOTENV_LINE.match(line)
        if match is None:
            continue
        name, value = match.group(1), match.group(2).strip()
        if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = re.sub(r"\s+#.*$", "", value)
        values[name] = value
    return values


def load_project_dotenv(env: MutableMapping[str, str] | None = None, start: Path | None = None) -> list[str]:
    """Set in ``env`` (default ``os.environ``) the variables of the project's ``.env`` (:func:`project_dotenv`)
    that it does not hold, as ``dg`` reads them for its commands; a variable already set keeps its value. Returns
    the names set (never the values: they may be secrets)."""
    import os

    env = os.environ if env is None else env
    added = []
    for name, value in project_dotenv(start).items():
        if name not in env:
            env[name] = value
            added.append(name)
    return added


_DOTENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")


