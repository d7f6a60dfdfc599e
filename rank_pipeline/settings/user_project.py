"""A user's project (``rank-pipeline init``): its models folder laid over the package's, file by file.

The package's SQL project (``rank_pipeline/dbt_like_sql``) holds the defaults. A user's project is a folder
whose ``pyproject.toml`` has a ``[tool.rank_pipeline]`` table; its models folder (``models_dir`` in that
table, default ``models``) holds only the files the user owns, at the same relative paths
(``marts/agg_tag_daily.sql``, ``sources/vendor_contract.yml``, ``seeds/ctr_curve.csv``). A file there replaces
the package's file of the same path, and a file the package lacks is added: dbt's package-then-project order.

The pipeline reads one folder, so the two are composed into ``<project>/.rank_pipeline/composed/models-<digest>``
(package files first, then the user's over them), named by a digest of every input file: an edit gives a new
folder, two processes composing the same inputs share one, and the package's files are only ever read. A path
in it is told as the user's file (:func:`source_file`, :func:`source_paths`); composing deletes nothing (stale
folders are :func:`rank_pipeline.folder_lock.remove_stale_composed`'s). ``.rank_pipeline/defaults.json`` records the digest of each default when the user took it (``rank-pipeline
init`` or ``own``), so that ``rank-pipeline upgrade`` can tell which defaults changed since.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import tomllib
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from rank_pipeline.settings.values import ConfigurationError

__all__ = [
    "COMPOSING_PREFIX",
    "MODEL_SUFFIXES",
    "ORIGIN_RECORD",
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

COMPOSING_PREFIX = ".composing-"
"""A composed folder being written, renamed ``models-<digest>`` when whole; one left by a process that died or lost
the race is removed by :func:`rank_pipeline.folder_lock.remove_stale_composed` (``settings`` deletes nothing)."""

ORIGIN_RECORD = ".origin.json"
"""In a composed folder: ``{"overlay", "package"}``, the two folders it was composed of, so that a path in it is
told as the file the user edits (:func:`source_file`)."""


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
    models-<digest>/marts/dim_domains.sql``) is the project's own file of the same relative path
    (``<project>/models/marts/dim_domains.sql``) when the project has it, else the package's it was copied from;
    any other path is itself.

    Raises:
        ConfigurationError: as :func:`find_project`, for the project holding a composed folder without its record.
    """
    path = Path(path)
    parts = path.parts
    for i in range(len(parts) - 3):
        if parts[i:i + 2] == (".rank_pipeline", "composed") and parts[i + 2].startswith("models-"):
            rel = parts[i + 3:]
            try:
                origin = json.loads(Path(*parts[:i + 3], ORIGIN_RECORD).read_text())
                overlay, package = Path(origin["overlay"]), Path(origin["package"])
            except (OSError, ValueError, KeyError, TypeError):  # composed before the record was written
                project = find_project(Path(*parts[:i]))
                if project is None:
                    return path
                overlay, package = project.models, package_models_dir()
            own = overlay.joinpath(*rel)
            return own if own.exists() or not package.joinpath(*rel).exists() else package.joinpath(*rel)
    return path


def source_paths(text: str) -> str:
    """``text`` (a message) with every path into a composed folder replaced by the file the user edits
    (:func:`source_file`)."""
    def user_file(match: re.Match[str]) -> str:
        try:
            return str(source_file(match.group(0)))
        except ConfigurationError:
            return match.group(0)

    return _COMPOSED_PATH.sub(user_file, text) if ".rank_pipeline" in text else text


_COMPOSED_PATH = re.compile(r"(?:/[^\s:'\"()\[\],]+)*/\.rank_pipeline/composed/models-[0-9a-f]+(?:/[^\s:'\"()\[\],]+)+")
"""An absolute path into a composed folder, as a message quotes it."""


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

    The digest covers both folders and every input path and content, so the folder is never changed once made:
    it is written under a temporary name (:data:`COMPOSING_PREFIX`) and renamed into place (a process that loses
    the race uses the winner's), with :data:`ORIGIN_RECORD`. Nothing is deleted here: composed folders unused for
    a day, and what a lost race left, are removed by :func:`rank_pipeline.folder_lock.remove_stale_composed`.

    Raises:
        ConfigurationError: ``overlay`` is not a folder.
    """
    if not overlay.is_dir():
        raise ConfigurationError(f"the models folder {overlay} is not a folder")
    package = package or package_models_dir()
    sources = model_files(package) | model_files(overlay)
    origin = {"overlay": str(overlay.resolve()), "package": str(package.resolve())}
    digest = hashlib.sha256(json.dumps(origin, sort_keys=True).encode())
    for rel, path in sources.items():
        digest.update(rel.encode() + b"\0" + file_digest(path).encode() + b"\n")
    target = into / f"models-{digest.hexdigest()[:16]}"
    if target.is_dir():
        os.utime(target)
        return target
    into.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=COMPOSING_PREFIX, dir=into))
    for rel, path in sources.items():
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, staging / rel)
    (staging / ORIGIN_RECORD).write_text(json.dumps(origin, indent=2) + "\n")
    try:
        staging.rename(target)
    except OSError:  # composed meanwhile by another process: the same content; the staging folder is a leftover
        pass
    return target
