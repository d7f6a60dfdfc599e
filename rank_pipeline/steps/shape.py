"""Check the vendor's shape of the run's days on the committed snapshots (:mod:`rank_pipeline.shape.check`):
the step behind the blocking asset check ``matches_contract``; it names the files a fix edits and records
unread paths once (:mod:`rank_pipeline.shape.registry`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from rank_pipeline.settings.user_project import source_file
from rank_pipeline.shape import ShapeResult, check_snapshots, load_contract, load_thresholds, record_unread
from rank_pipeline.transform import Project

__all__ = ["SHAPE_CHECK", "ShapeCheck", "check_shape", "display_path"]

SHAPE_CHECK = "matches_contract"
"""The name of the blocking asset check on each raw table."""


@dataclass
class ShapeCheck:
    """What :func:`check_shape` found: ``results`` (``{endpoint: ShapeResult}``) and ``new_fields``
    (``{endpoint: {path: "type, share"}}`` of the unread paths first seen now).
    """

    results: dict[str, ShapeResult]
    new_fields: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results.values())

    def lines(self) -> list[str]:
        """One line per failing path, every endpoint."""
        return [line for r in self.results.values() for line in r.lines()]


def display_path(path: Path) -> str:
    """The file a user edits for ``path`` (their project's own file for a composed copy:
    :func:`~rank_pipeline.settings.user_project.source_file`), relative to the working folder when it lies
    below it (as a user types it), else absolute."""
    path = source_file(path)
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _readers(project: Project) -> dict[str, list[str]]:
    """``{endpoint: [staging model files reading raw.<endpoint>]}``."""
    out: dict[str, list[str]] = {}
    for model in project.models.values():
        for dep in sorted(model.depends_on):
            if dep.startswith("raw."):
                out.setdefault(dep.removeprefix("raw."), []).append(display_path(model.path))
    return out


def check_shape(project: Project, snapshots_uri: Path | str, first: date, last: date,
                fields_file: Path | None = None, cache_dir: Path | None = None) -> ShapeCheck:
    """Check the committed snapshots of ``first .. last`` against the contract of ``project``.

    ``fields_file``: where unread paths are recorded; ``cache_dir``: each day's path counts for the next day's
    drift check (None: neither kept). Raises rank_pipeline.shape.ContractError: the contract or thresholds
    cannot be read.
    """
    contract, thresholds = load_contract(project.root), load_thresholds(project.root)
    results = check_snapshots(snapshots_uri, contract, thresholds, first, last, edit=_readers(project),
                              contract_file=display_path(contract.path), cache_dir=cache_dir)
    check = ShapeCheck(results)
    if fields_file is not None and any(r.days for r in results.values()):
        unread = {e: r.unread for e, r in results.items() if r.unread and r.days}
        check.new_fields = record_unread(fields_file, max(d for r in results.values() for d in r.days), unread,
                                         reads=contract.reads)
    return check
