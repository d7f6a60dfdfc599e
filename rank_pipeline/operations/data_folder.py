"""Faults of the data folder itself (read-only, not writable, full), told in one line with exit status
:data:`DATA_FOLDER_EXIT_STATUS`: :func:`data_folder_fault` classifies an ``OSError``; :func:`probe` tries a write.

docs/how-to/running-every-day.md, "When the data folder fails".
"""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from rank_pipeline.errors import EXIT_DATA_FOLDER

__all__ = ["DATA_FOLDER_EXIT_STATUS", "DataFolderFault", "data_folder_fault", "probe"]

DATA_FOLDER_EXIT_STATUS = EXIT_DATA_FOLDER
"""Exit status of a command stopped by a fault of its data folder (0 ok, 1 failed run, 2 bad usage)."""

READ_ONLY = frozenset({errno.EROFS})
NOT_WRITABLE = frozenset({errno.EACCES, errno.EPERM})
FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
FAULT_ERRNOS = READ_ONLY | NOT_WRITABLE | FULL

PROBE_BYTES = 64 * 1024
"""Size of the probe file: a folder with less room than this is reported full."""


@dataclass(frozen=True)
class DataFolderFault:
    """What is wrong with a folder: ``kind`` (``read-only``, ``not writable`` or ``full``), ``folder`` (the data
    folder, or the one outside it that failed, e.g. ``DAGSTER_HOME``) and ``path`` (the path named, if known).
    """

    kind: str
    folder: Path
    path: Path | None = None

    def line(self) -> str:
        """One line: the folder, the fault and what to do (never more than one line)."""
        where = f" ({self.path})" if self.path and self.path != self.folder else ""
        if self.kind == "read-only":
            what = f"is on a read-only file system{where}"
            todo = "remount it read-write"
        elif self.kind == "not writable":
            user = _user()
            what = f"is not writable by user {user}{where}"
            todo = f"give {user} write permission on it (chown/chmod)"
        else:
            try:
                free = shutil.disk_usage(self.folder).free
                room = f", {free / 2**20:.1f} MiB free"
            except OSError:
                room = ""
            what = f"is full (no space left on its file system{room}){where}"
            todo = "free space there"
        return (f"the data folder {self.folder} {what}: {todo}, or set RANK_PIPELINE_DATA_DIR to a writable "
                "folder with room")


def _user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):  # pragma: no cover - no passwd entry
        return str(os.geteuid())


def _kind(code: int | None) -> str | None:
    if code in READ_ONLY:
        return "read-only"
    if code in NOT_WRITABLE:
        return "not writable"
    if code in FULL:
        return "full"
    return None


def _within(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def data_folder_fault(exc: BaseException, data_dir: Path, *, others: tuple[Path, ...] = ()) -> DataFolderFault | None:
    """The folder fault behind ``exc`` (or its cause or context chain), else None: an ``OSError`` with errno
    EROFS, EACCES/EPERM or ENOSPC/EDQUOT naming a path under ``data_dir`` or one of ``others``, or naming none
    while :func:`probe` of ``data_dir`` fails too.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        kind = _kind(current.errno) if isinstance(current, OSError) else None  # None: not one of FAULT_ERRNOS
        if isinstance(current, OSError) and kind is not None:
            name = current.filename if isinstance(current.filename, (str, os.PathLike)) else None
            if name is not None:
                path = Path(name)
                for folder in (Path(data_dir), *others):
                    if _within(path, folder):
                        return DataFolderFault(kind, Path(data_dir) if _within(path, data_dir) else folder, path)
                    if _within(folder, path):  # creating the folder itself (or an ancestor) failed
                        return DataFolderFault(kind, folder, path)
            else:
                return probe(data_dir) or (DataFolderFault(kind, Path(data_dir)) if kind == "full" else None)
        current = current.__cause__ or current.__context__
    return None


def probe(data_dir: Path) -> DataFolderFault | None:
    """Write and remove a :data:`PROBE_BYTES` file in ``data_dir``; the fault when that fails, else None.

    A folder that does not exist is probed at its nearest existing parent (creating it is a write there).
    """
    folder = Path(data_dir)
    target = folder
    while not target.exists() and target.parent != target:
        target = target.parent
    probe_path = target / f".write-probe-{os.getpid()}"
    try:
        try:
            with open(probe_path, "wb") as f:
                f.write(b"\0" * PROBE_BYTES)
                f.flush()
                os.fsync(f.fileno())
        finally:
            try:
                probe_path.unlink()
            except FileNotFoundError:
                pass
    except OSError as exc:
        kind = _kind(exc.errno)
        return DataFolderFault(kind, folder, None if target == folder else target) if kind else None
    return None
