"""Where the snapshots live, from one URI (``RANK_PIPELINE_SNAPSHOTS_URI``: a path, ``file://``, ``s3://``,
``gs://``, ``hdfs://``, ``abfs://`` or fsspec): a :class:`Store`, whose ``uri`` holds no secret
(docs/concepts/operations.md, "Where the snapshots live").
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pyarrow.fs as pafs

# the URI's forms are checked, without connecting, where the setting is read
from rank_pipeline.settings import (
    PYARROW_SCHEMES,
    S3_SCHEMES,
    SNAPSHOTS_URI_ENV,
    StorageError,
    check_uri,
    redact_uri,
    uri_scheme,
)

__all__ = ["SNAPSHOTS_URI_ENV", "Store", "StorageError", "check_uri", "store_for"]


@dataclass(frozen=True, eq=False)
class Store:
    """A pyarrow file system and a root path in it (``bucket/prefix`` on S3, an absolute local path).

    Paths handed to and returned by the methods are full paths inside :attr:`fs` (``/``-separated).
    """

    fs: pafs.FileSystem
    root: str
    uri: str
    """The location as a user wrote it, without credentials: for messages and metadata."""

    @property
    def local(self) -> bool:
        """True on the local file system (then :meth:`local_path` gives a :class:`pathlib.Path`)."""
        return isinstance(self.fs, pafs.LocalFileSystem)

    @property
    def atomic_rename(self) -> bool:
        """Whether a folder rename is atomic (local disk only)."""
        return self.local

    def join(self, *parts: str) -> str:
        """The full path of ``root/part/part...``."""
        return posixpath.join(self.root, *parts) if parts else self.root

    def display(self, path: str) -> str:
        """``path`` as a user reads it: a local path, or ``scheme://bucket/key``."""
        if self.local:
            return path
        scheme = self.uri.split("://", 1)[0]
        return f"{scheme}://{path.lstrip('/')}"

    def local_path(self, path: str) -> Path:
        return Path(path)

    def info(self, path: str) -> pafs.FileInfo:
        return self.fs.get_file_info(path)

    def is_file(self, path: str) -> bool:
        return self.info(path).type == pafs.FileType.File

    def is_dir(self, path: str) -> bool:
        return self.info(path).type == pafs.FileType.Directory

    def listdir(self, path: str) -> list[pafs.FileInfo]:
        """The entries directly under ``path`` (none when it does not exist)."""
        try:
            return self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def read_bytes(self, path: str) -> bytes:
        with self.fs.open_input_stream(path) as f:
            return f.read()

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write one object/file whole (on an object store a single PUT: readers see all of it or none)."""
        self.makedirs(posixpath.dirname(path))
        with self.fs.open_output_stream(path) as f:
            f.write(data)

    def write_text(self, path: str, text: str) -> None:
        self.write_bytes(path, text.encode("utf-8"))

    def makedirs(self, path: str) -> None:
        if self.local:
            self.fs.create_dir(path, recursive=True)

    def delete_file(self, path: str) -> None:
        try:
            self.fs.delete_file(path)
        except FileNotFoundError:
            pass

    def delete_dir(self, path: str) -> None:
        try:
            self.fs.delete_dir(path)
        except FileNotFoundError:
            pass


def store_for(location: Store | Path | str, env: Mapping[str, str] | None = None) -> Store:
    """The :class:`Store` for a snapshots location (a :class:`Store`, a local path or a URI; ``env`` gives an
    ``s3://`` store's ``AWS_*`` variables). Raises StorageError: as :func:`rank_pipeline.settings.check_uri`,
    or the store cannot be opened.
    """
    if isinstance(location, Store):
        return location
    return _build(str(location) if isinstance(location, str) else location, os.environ if env is None else env)


def _build(location: Path | str, env: Mapping[str, str]) -> Store:
    if isinstance(location, Path):
        path = location.expanduser().resolve()
        return Store(pafs.LocalFileSystem(), path.as_posix(), str(path))
    check_uri(location)
    raw = location.strip()
    scheme = uri_scheme(raw)
    parts = urlsplit(raw)
    if scheme is None:
        path = Path(raw).expanduser().resolve()
        return Store(pafs.LocalFileSystem(), path.as_posix(), str(path))
    if scheme == "file":
        path = Path(parts.path or "/").resolve()
        return Store(pafs.LocalFileSystem(), path.as_posix(), str(path))
    if scheme in S3_SCHEMES:
        root = posixpath.join(parts.hostname or "", parts.path.strip("/")).rstrip("/")
        return Store(_s3(dict(parse_qsl(parts.query)), env), root, f"s3://{root}")
    if scheme in PYARROW_SCHEMES:
        try:
            fs, path = pafs.FileSystem.from_uri(raw)
        except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ... for a URI it cannot open
            raise StorageError.bad_uri(raw, f"cannot be opened by pyarrow ({_first_line(exc)})") from None
        return Store(fs, path.rstrip("/"), redact_uri(raw))
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(raw)
    except (ImportError, ValueError) as exc:
        raise StorageError.bad_uri(raw, f"needs a file system fsspec cannot load ({_first_line(exc)})") from None
    return Store(pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path.rstrip("/"), redact_uri(raw))


def _s3(options: Mapping[str, str], env: Mapping[str, str]) -> pafs.S3FileSystem:
    kwargs: dict[str, Any] = {}
    endpoint = options.get("endpoint_override") or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    scheme = options.get("scheme")
    if endpoint:
        parsed = urlsplit(endpoint if "://" in endpoint else f"//{endpoint}")
        if parsed.scheme and not scheme:
            scheme = parsed.scheme
        kwargs["endpoint_override"] = parsed.netloc + parsed.path.rstrip("/")
    if scheme:
        kwargs["scheme"] = scheme
    kwargs["region"] = options.get("region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        kwargs["access_key"] = env["AWS_ACCESS_KEY_ID"]
        kwargs["secret_key"] = env["AWS_SECRET_ACCESS_KEY"]
        if env.get("AWS_SESSION_TOKEN"):
            kwargs["session_token"] = env["AWS_SESSION_TOKEN"]
    return pafs.S3FileSystem(**kwargs)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
