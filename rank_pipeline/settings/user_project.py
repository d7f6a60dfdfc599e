"""A user's project (``rank-pipeline init``): its models folder laid over the package's, file by file.

The package's SQL project (``rank_pipeline/dbt_like_sql``) holds the defaults. A user's project is a folder
whose ``pyproject.toml`` has a ``[tool.rank_pipeline]`` table; its models folder (``models_dir`` in that
table, default ``models``) holds only the files the user owns, at the same relative paths
(``marts/agg_tag_daily.sql``, ``sources/vendor_contract.yml``, ``seeds/ctr_curve.csv``). A file there replaces
the package's file of the same path, and a file the package lacks is added: dbt's package-then-project order.

The pipeline reads one folder, so the two are composed into ``<project>/.rank_pipeline/composed/models-<digest>``
(package files first, then the user's over them), named by a digest of every input file: an edit gives a new
folder, two processes composing the same inputs share one, and the package's files are only ever read.
``.rank_pipeline/defaults.json`` records the digest of each default when the user took it (``rank-pipeline
init`` or ``own``), so that ``rank-pipeline upgrade`` can tell which defaults changed since.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import tomllib
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from rank_pipeline.settings.values import ConfigurationError

__all__ = [
    "MODEL_SUFFIXES",
    "PROJECT_TABLE",
    "UserProject",
    "compose_models",
    "file_digest",
    "find_project",
    "model_files",
    "source_file",
    "package_models_dir",
]

PROJECT_TABLE = "rank_pipeline"
"""The ``[tool.<name>]`` table of ``pyproject.toml`` that marks a user's project."""

MODEL_SUFFIXES = frozenset({".sql", ".yml", ".yaml", ".csv"})
"""The files of a models folder that are composed (hidden files and anything else are left out)."""

_PACKAGE_DIR = Path(__file__).resolve().parents[1]
"""``rank_pipeline/``: the installed package, next to which the shipped models are found."""

_STALE_AFTER_S = 86400.0
"""Composed folders unused this long (seconds) are removed when another is composed."""


def package_models_dir() -> Path:
    """The ``dbt_like_sql/`` shipped inside the installed package (``rank_pipeline/dbt_like_sql``), or the
    source tree's ``dbt_like_sql/`` when running from a checkout (``pip install -e .``).

    Raises:
        ConfigurationError: neither is there (a broken install).
    """
    for path in (_PACKAGE_DIR / "dbt_like_sql", _PACKAGE_DIR.parent / "dbt_like_sql"):
        if path.is_dir():
            return path
    raise ConfigurationError(  # pragma: no cover - a broken install
        f"no SQL models found next to {_PACKAGE_DIR}: reinstall the package, or set RANK_PIPELINE_MODELS_DIR"
    )


@dataclass(frozen=True)
class UserProject:
    """A user's project: ``root`` holds ``pyproject.toml``; ``models`` is its models folder (absolute);
    ``started`` the day ``rank-pipeline init`` made it (``[tool.rank_pipeline] started``; None when not
    recorded), the first daily partition until the data folder has a snapshot."""

    root: Path
    models: Path
    started: date | None = None

    @property
    def state_dir(self) -> Path:
        """``.rank_pipeline/``: the record of the defaults taken and the composed folders."""
        return self.root / ".rank_pipeline"

    @property
    def defaults_record(self) -> Path:
        """``.rank_pipeline/defaults.json``: ``{"package_version", "files": {path: digest}}`` of the defaults
        the user took (committed with the project)."""
        return self.state_dir / "defaults.json"

    def read_defaults(self) -> dict[str, str]:
        """``{relative path: digest}`` of the defaults recorded when each file was taken; empty without one."""
        try:
            return dict(json.loads(self.defaults_record.read_text())["files"])
        except (OSError, ValueError, KeyError, TypeError):
            return {}

    def record_defaults(self, files: dict[str, str], package_version: str) -> None:
        """Add ``files`` (``{relative path: digest of the package's file}``) to the record."""
        recorded = self.read_defaults() | files
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.defaults_record.write_text(json.dumps(
            {"package_version": package_version, "files": dict(sorted(recorded.items()))}, indent=2) + "\n")

    def composed(self) -> Path:
        """The package's models with this project's files laid over them (:func:`compose_models`)."""
        return compose_models(self.models, self.state_dir / "composed")


def find_project(start: Path | None = None) -> UserProject | None:
    """The user's project holding ``start`` (default: the working folder): the nearest folder, ``start`` or
    above, whose ``pyproject.toml`` has a ``[tool.rank_pipeline]`` table; None when there is none.

    Raises:
        ConfigurationError: that ``pyproject.toml`` is not valid TOML, or its models folder is missing.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        pyproject = folder / "pyproject.toml"
        if not pyproject.is_file():
            continue
        try:
            table = tomllib.loads(pyproject.read_text()).get("tool", {}).get(PROJECT_TABLE)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigurationError(f"{pyproject} cannot be read as TOML: {exc}") from None
        if not isinstance(table, dict):
            continue
        models = (folder / str(table.get("models_dir") or "models")).resolve()
        if not models.is_dir():
            raise ConfigurationError(f"{pyproject}: [tool.{PROJECT_TABLE}] models_dir {models} is not a folder; "
                                     "create it (it holds the models you own) or fix the path")
        return UserProject(folder, models, _started(table.get("started"), pyproject))
    return None


def _started(value: object, pyproject: Path) -> date | None:
    """``[tool.rank_pipeline] started`` (a TOML date, or text ``YYYY-MM-DD``) as a date; None when absent.

    Raises:
        ConfigurationError: it is there but no date.
    """
    if value is None:
        return None
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise ConfigurationError(f"{pyproject}: [tool.{PROJECT_TABLE}] started {value!r} is not a date: write "
                                 "the project's first day as started = 2026-03-01, or remove the line") from None


def source_file(path: Path | str) -> Path:
    """The file a user edits for ``path``: a file of a composed folder (``<project>/.rank_pipeline/composed/
    models-<digest>/sources/vendor_contract.yml``) is the project's own file of the same relative path
    (``<project>/models/sources/vendor_contract.yml``); any other path is itself.

    Raises:
        ConfigurationError: as :func:`find_project`, for the project holding the composed folder.
    """
    path = Path(path)
    parts = path.parts
    for i in range(len(parts) - 3):
        if parts[i:i + 2] == (".rank_pipeline", "composed") and parts[i + 2].startswith("models-"):
            project = find_project(Path(*parts[:i]))
            if project is not None:
                return project.models.joinpath(*parts[i + 3:])
    return path


def model_files(folder: Path) -> dict[str, Path]:
    """``{relative posix path: path}`` of every model, seed and source file under ``folder``
    (:data:`MODEL_SUFFIXES`; hidden files and folders left out), sorted by path."""
    if not folder.is_dir():
        return {}
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and path.suffix in MODEL_SUFFIXES and not any(p.startswith(".") for p in rel.parts):
            found[rel.as_posix()] = path
    return found


def file_digest(path: Path) -> str:
    """The SHA-256 of ``path``'s bytes, in hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compose_models(overlay: Path, into: Path, package: Path | None = None) -> Path:
    """The folder ``into/models-<digest>`` holding ``package``'s model files (default
    :func:`package_models_dir`) with ``overlay``'s files over them, composed when missing; returned.

    The digest covers every input path and content, so the folder is never changed once made: it is
    written under a temporary name and renamed into place (a process that loses the race uses the
    winner's). Composed folders of ``into`` unused for a day are removed.

    Raises:
        ConfigurationError: ``overlay`` is not a folder.
    """
    if not overlay.is_dir():
        raise ConfigurationError(f"the models folder {overlay} is not a folder")
    sources = model_files(package or package_models_dir()) | model_files(overlay)
    digest = hashlib.sha256()
    for rel, path in sources.items():
        digest.update(rel.encode() + b"\0" + file_digest(path).encode() + b"\n")
    target = into / f"models-{digest.hexdigest()[:16]}"
    if target.is_dir():
        os.utime(target)
        return target
    into.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".composing-", dir=into))
    for rel, path in sources.items():
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, staging / rel)
    try:
        staging.rename(target)
    except OSError:  # composed meanwhile by another process: the same content
        shutil.rmtree(staging, ignore_errors=True)
    _remove_stale(into, keep=target)
    return target


def _remove_stale(into: Path, keep: Path) -> None:
    """Remove the composed folders of ``into`` but ``keep`` not used for :data:`_STALE_AFTER_S`."""
    now = time.time()
    for old in into.glob("models-*"):
        try:
            if old != keep and now - old.stat().st_mtime > _STALE_AFTER_S:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            continue
