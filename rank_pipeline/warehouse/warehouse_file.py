"""The warehouse file: the build file (one writer), the published file (readers), and their atomic publish in
``RANK_PIPELINE_STORAGE_VERSION`` (default :data:`DEFAULT_STORAGE_VERSION`); docs/concepts/operations.md,
"The warehouse file".
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import uuid
from datetime import date
from pathlib import Path

import duckdb

from rank_pipeline.settings import (
    DEFAULT_STORAGE_VERSION,
    STORAGE_VERSION_ENV,
    check_memory_limit,
    duckdb_memory_limit_from_env,
    storage_version_from_env,
)
from rank_pipeline.transform.sql import one_row
from rank_pipeline.transform.sql import quote_ident as _qi
from rank_pipeline.warehouse.errors import PublishError, WarehouseError
from rank_pipeline.warehouse.raw_load import ensure_keywords_file_table, reload_raw_from_snapshots

__all__ = ["DEFAULT_STORAGE_VERSION", "SCHEMAS", "STORAGE_VERSION_ENV", "Warehouse", "limit_memory",
           "publishing_copies"]

log = logging.getLogger(__name__)

SCHEMAS: tuple[str, ...] = ("raw", "seeds", "staging", "marts")
"""Schemas of the warehouse (docs/concepts/architecture.md, "Warehouse")."""


def publishing_copies(published_path: Path) -> str:
    """The glob, in ``published_path``'s folder, of the copies :meth:`Warehouse.publish` writes before renaming one
    over ``published_path`` (``.warehouse.duckdb.<token>.tmp``). A publish that dies mid-copy leaves one (removed by
    :mod:`rank_pipeline.folder_lock.leftovers`)."""
    return f".{published_path.name}.*.tmp"


def _publishing_copy(published_path: Path) -> Path:
    """A new name matching :func:`publishing_copies` for one publish's copy."""
    return published_path.with_name(f".{published_path.name}.{uuid.uuid4().hex[:8]}.tmp")


def limit_memory(con: duckdb.DuckDBPyConnection, limit: str | None) -> None:
    """Cap the memory of ``con``'s database (every connection to its file in this process) at ``limit``, a value
    checked by :func:`rank_pipeline.settings.check_memory_limit` (``8GB``, ``50%``); None keeps DuckDB's
    default (80 % of RAM). Past the cap DuckDB spills to its temp directory (``<file>.tmp``) or, for work that
    cannot spill, raises ``duckdb.OutOfMemoryException``."""
    if limit is not None:
        con.execute(f"set memory_limit = '{limit}'")  # the value matched a number and a unit: no quote in it


class Warehouse:
    """The build file ``build_path`` (one writer, ``data/warehouse.build.duckdb``) and the published file
    ``published_path`` (readers, ``data/warehouse.duckdb``); docs/concepts/operations.md, "The warehouse file".
    ``storage_version`` default ``RANK_PIPELINE_STORAGE_VERSION``; ``memory_limit`` (the writer's, :func:`limit_memory`)
    default ``RANK_PIPELINE_DUCKDB_MEMORY_LIMIT``.

    Raises ConfigurationError: a malformed memory limit; WarehouseError: a storage version that is not a DuckDB
    release, or the two paths are one file.
    """

    def __init__(self, build_path: Path | str, published_path: Path | str, storage_version: str | None = None,
                 memory_limit: str | None = None):
        self.build_path = Path(build_path)
        self.published_path = Path(published_path)
        self.memory_limit = check_memory_limit(memory_limit) if memory_limit else duckdb_memory_limit_from_env()
        """The writer's DuckDB ``memory_limit`` (``8GB``, ``50%``), or None for DuckDB's default."""
        version = storage_version or storage_version_from_env()
        if not re.fullmatch(r"latest|v\d+\.\d+\.\d+", version):
            raise WarehouseError(
                f"{STORAGE_VERSION_ENV}={version!r} is not a DuckDB release: set it to one such as "
                f"{DEFAULT_STORAGE_VERSION} or v1.4.0 (the oldest DuckDB that must read the published file), "
                "or to latest"
            )
        self.storage_version = version
        """DuckDB release whose storage format the published file is written in, or ``latest``."""
        if self.build_path.resolve() == self.published_path.resolve():
            raise WarehouseError(
                f"build and published paths are the same file ({self.build_path}); readers would block the load"
            )

    def connect(self) -> duckdb.DuckDBPyConnection:
        """Open the writer connection to the build file (a context manager), creating it and its schemas if needed.

        Raises WarehouseError: locked by another process (the one-writer rule) or cannot be opened.
        """
        self.build_path.parent.mkdir(parents=True, exist_ok=True)
        # a new build file is created in the published storage version, so publishing is a byte copy, then
        # reopened like any existing one (which keeps its own version): every connection of the process has
        # the same configuration, which DuckDB requires of connections sharing a file
        if not self.build_path.exists() and self.storage_version != "latest":
            try:
                duckdb.connect(str(self.build_path),
                               config={"storage_compatibility_version": self.storage_version}).close()
            except duckdb.InvalidInputException as exc:
                self.build_path.unlink(missing_ok=True)
                raise WarehouseError(
                    f"{STORAGE_VERSION_ENV}={self.storage_version} is not a storage version this DuckDB writes "
                    f"({_first_sentence(exc)}): set it to a DuckDB release such as {DEFAULT_STORAGE_VERSION}"
                ) from exc
        try:
            con = duckdb.connect(str(self.build_path))
        except duckdb.Error as exc:
            raise WarehouseError(
                f"cannot open the build warehouse {self.build_path} for writing ({exc}). Only one process may "
                "write it: take the data folder's writer lock (rank_pipeline.folder_lock) first, and "
                "let readers open the published file instead"
            ) from exc
        limit_memory(con, self.memory_limit)
        for schema in SCHEMAS:
            con.execute(f"create schema if not exists {schema}")
        ensure_keywords_file_table(con)
        return con

    def read_only_connect(self) -> duckdb.DuckDBPyConnection:
        """Open the published file read-only (analysts, BI, read-only checks). Raises WarehouseError: nothing
        published yet."""
        if not self.published_path.is_file():
            raise WarehouseError(
                f"no published warehouse at {self.published_path} yet: load a partition and publish first "
                "(e.g. `rank-pipeline demo`)"
            )
        return duckdb.connect(str(self.published_path), read_only=True)

    def reload_raw_from_snapshots(self, snapshots_uri: Path | str) -> dict[date, dict[str, int]]:
        """:func:`reload_raw_from_snapshots` on a fresh writer connection (closed afterwards)."""
        with self.connect() as con:
            return reload_raw_from_snapshots(con, snapshots_uri)

    def publish(self, con: duckdb.DuckDBPyConnection | None = None) -> Path:
        """Checkpoint the build file and atomically replace the published file with a copy in :attr:`storage_version`
        (docs/concepts/operations.md, "Storage version of the published file"); returns the published path. ``con``:
        the caller's idle writer connection, if any.

        Raises PublishError: the checkpoint failed (a transaction is open), DuckDB cannot write that storage version,
        or the copy failed; the previously published file is untouched.
        """
        if not self.build_path.is_file():
            raise PublishError(f"nothing to publish: {self.build_path} does not exist; load a partition first")
        self.published_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _publishing_copy(self.published_path)
        own = self.connect() if con is None else None
        writer = own if own is not None else con
        assert writer is not None
        try:
            try:
                writer.execute("checkpoint")
            except duckdb.Error as exc:
                raise PublishError(
                    f"cannot checkpoint {self.build_path} before publishing ({exc}); commit or roll back open "
                    "transactions on the writer connection and publish again"
                ) from exc
            self._write_copy(writer, tmp)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            # a stale WAL beside the published file would be replayed onto the new file: remove it
            stale_wal = self.published_path.with_name(self.published_path.name + ".wal")
            stale_wal.unlink(missing_ok=True)
            os.replace(tmp, self.published_path)
        except PublishError:
            _remove_tmp(tmp)
            raise
        except duckdb.Error as exc:
            _remove_tmp(tmp)
            raise PublishError(
                f"writing {self.published_path} in storage version {self.storage_version} failed ({exc}); the "
                f"published file is unchanged. If DuckDB does not know that version, set {STORAGE_VERSION_ENV} "
                f"to another (e.g. {DEFAULT_STORAGE_VERSION}) and publish again"
            ) from exc
        except OSError as exc:
            _remove_tmp(tmp)
            raise PublishError(
                f"copying {self.build_path} to {self.published_path} failed ({exc}); the published file is "
                "unchanged. Check free disk space and permissions, then publish again"
            ) from exc
        finally:
            if own is not None:
                own.close()
        try:
            dir_fd = os.open(self.published_path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError:  # pragma: no cover - some file systems refuse fsync on directories
            pass
        log.info("published %s -> %s (storage version %s)", self.build_path, self.published_path,
                 self.storage_version)
        return self.published_path

    def _write_copy(self, con: duckdb.DuckDBPyConnection, tmp: Path) -> None:
        """Copy the checkpointed build database into the new file ``tmp`` in :attr:`storage_version`: a streamed byte
        copy (the writer lock is held and ``con`` idle), or through DuckDB when the build file is in another version.
        """
        (source,) = one_row(con, "select current_database()")
        alias = f"publish_{uuid.uuid4().hex[:8]}"
        option = "" if self.storage_version == "latest" else f" (STORAGE_VERSION '{self.storage_version}')"
        con.execute(f"attach '{_sql_str(tmp)}' as {alias}{option}")
        try:
            build_version = _storage_tag(con, source)
            same_version = build_version == _storage_tag(con, alias)
            if not same_version:
                log.info("publishing %s through COPY FROM DATABASE: it is in storage %s, the setting asks %s "
                         "(a full rebuild recreates it in the set version)", self.build_path, build_version,
                         self.storage_version)
                con.execute(f"copy from database {_qi(source)} to {alias}")
        finally:
            con.execute(f"detach {alias}")
        if same_version:
            _remove_tmp(tmp)
            shutil.copyfile(self.build_path, tmp)


def _storage_tag(con: duckdb.DuckDBPyConnection, database: str) -> str:
    """The oldest DuckDB release that reads ``database`` (``duckdb_databases().tags['storage_version']``)."""
    (tags,) = one_row(con, "select tags from duckdb_databases() where database_name = ?", [database])
    return (tags or {}).get("storage_version", "")


def _first_sentence(exc: BaseException) -> str:
    return str(exc).split(", valid options")[0]


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")


def _remove_tmp(tmp: Path) -> None:
    tmp.unlink(missing_ok=True)
    tmp.with_name(tmp.name + ".wal").unlink(missing_ok=True)
