"""The data folder's one writer: OS-released locks (:mod:`~rank_pipeline.folder_lock.locks`) and the removal of
what dead runs left and of a project's stale composed models (:mod:`~rank_pipeline.folder_lock.leftovers`), every name re-exported here.

A stage of its own, above ``snapshots/`` and ``warehouse/`` (whose writers declare the names of their
leftovers) and below ``steps/`` (which holds the lock); no Dagster here.
"""

from __future__ import annotations

from rank_pipeline.folder_lock.leftovers import remove_leftovers, remove_stale_composed
from rank_pipeline.folder_lock.locks import (
    LOCK_DIR_NAME,
    DataFolderLock,
    LockTimeout,
    hold_shard_writer,
    hold_writer,
    instance_lock,
    writer_lock,
)

__all__ = [
    "LOCK_DIR_NAME",
    "DataFolderLock",
    "LockTimeout",
    "hold_shard_writer",
    "hold_writer",
    "instance_lock",
    "remove_leftovers",
    "remove_stale_composed",
    "writer_lock",
]
