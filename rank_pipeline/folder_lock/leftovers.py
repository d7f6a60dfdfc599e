"""The removal of what dead runs left in the data folder (``.staging-*`` and ``.replaced-*`` snapshot folders,
``.warehouse.duckdb.<id>.tmp`` copies), by the holder of its ``writer`` lock, reading the names each writer
declares; and of a project's stale composed models folders (docs/concepts/operations.md, "Leftovers").
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from rank_pipeline.settings import DataPaths
from rank_pipeline.settings.user_project import COMPOSING_PREFIX
from rank_pipeline.snapshots.writer import STAGING_PREFIX, replaced_day_folder
from rank_pipeline.warehouse.warehouse_file import publishing_copies

__all__ = ["COMPOSED_UNUSED_S", "remove_leftovers", "remove_stale_composed"]

log = logging.getLogger(__name__)

COMPOSED_UNUSED_S = 86400.0
"""A project's composed models folder unused this long (seconds), or a composition left unfinished as long, is
removed by :func:`remove_stale_composed`."""


def _default_log(message: str) -> None:
    log.info(message)


def remove_leftovers(data_dir: Path | str, *, log: Callable[[str], object] | None = None) -> list[Path]:
    """Remove (or restore) what dead runs left in ``data_dir``; returns the paths handled. Call only holding the
    ``writer`` lock; a ``.replaced-`` folder whose day has no committed snapshot is renamed back to that day.
    """
    say = log or _default_log
    paths = DataPaths(Path(data_dir))
    handled: list[Path] = []
    snapshots = paths.snapshot_store_uri
    if isinstance(snapshots, Path) and snapshots.is_dir():  # on an object store nothing is staged to remove
        for resource_dir in sorted(p for p in snapshots.iterdir() if p.is_dir()):
            for child in sorted(resource_dir.iterdir()):
                day = replaced_day_folder(child.name)
                if day is not None:
                    final = resource_dir / day
                    if not final.exists() and child.is_dir():
                        os.replace(child, final)
                        say(f"restored {final} from {child.name} (a run died while replacing it)")
                        handled.append(child)
                        continue
                elif not child.name.startswith(STAGING_PREFIX):
                    continue
                if child.is_dir():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
                handled.append(child)
    published = paths.published_db
    if published.parent.is_dir():
        for tmp in sorted(published.parent.glob(publishing_copies(published))):
            tmp.unlink(missing_ok=True)
            handled.append(tmp)
    if handled:
        say(f"removed {len(handled)} leftover(s) of interrupted runs in {data_dir}: "
            + ", ".join(p.name for p in handled[:5]) + (" ..." if len(handled) > 5 else ""))
    return handled


def remove_stale_composed(in_use: Path, *, now: float | None = None) -> list[Path]:
    """Remove the composed models folders beside ``in_use`` (a project's ``.rank_pipeline/composed/models-<digest>``,
    :func:`rank_pipeline.settings.user_project.compose_models`) that no process used for
    :data:`COMPOSED_UNUSED_S`, and the compositions left unfinished as long (a process that died or lost the race
    to compose the same folder); returns the paths removed. Any other path: nothing is removed.

    Composing touches the folder it returns, so a folder in use is never this old; no lock is needed.
    """
    into = in_use.parent
    if into.name != "composed" or into.parent.name != ".rank_pipeline" or not into.is_dir():
        return []
    now = time.time() if now is None else now
    removed = []
    for old in sorted(into.iterdir()):
        if old.name == in_use.name or not old.name.startswith(("models-", COMPOSING_PREFIX)):
            continue
        try:
            if now - old.stat().st_mtime > COMPOSED_UNUSED_S:
                shutil.rmtree(old, ignore_errors=True)
                removed.append(old)
        except OSError:
            continue
    return removed
