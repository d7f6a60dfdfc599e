"""Where the snapshots live: a local folder or an object store, resolved from one URI (issue 13, item 1).

``RANK_PIPELINE_SNAPSHOTS_URI`` (:mod:`rank_pipeline.settings`) is one of:

- unset: ``<data folder>/snapshots`` (the local default);
- a local path (``/srv/rank/snapshots``, ``./snaps``) or ``file:///srv/rank/snapshots``;
- ``s3://bucket/prefix``: Amazon S3 or any S3-compatible store, through :class:`pyarrow.fs.S3FileSystem`.
  Credentials and the endpoint come from the standard AWS variables (``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_PROFILE``, ``AWS_REGION`` or
  ``AWS_DEFAULT_REGION`` (default ``us-east-1``, so no request is made to guess a bucket's region) and
  ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3`` for a non-AWS endpoint such as MinIO). The query
  parameters ``endpoint_override``, ``region`` and ``scheme`` in the URI win over the variables;
- ``gs://``, ``hdfs://``, ``abfs://``: whatever :func:`pyarrow.fs.FileSystem.from_uri` supports;
- any other scheme an installed fsspec implementation supports (``memory://``, ``az://`` with adlfs,
  ...), wrapped in :class:`pyarrow.fs.PyFileSystem`.

A :class:`Store` is a pyarrow file system plus a root path inside it; everything that reads or writes
snapshots (:mod:`rank_pipeline.snapshots.parquet`, :mod:`rank_pipeline.extract.resume`, :mod:`rank_pipeline.warehouse.database`)
goes through it, so they work the same on every store. Secrets never appear in :attr:`Store.uri`
(user info and query strings are dropped from it) and so never in messages, logs or manifests.

:attr:`Store.atomic_rename` says whether renaming a folder is one atomic step (local disk): the snapshot
writer then commits by renaming a staged folder; on an object store it writes data files under unique
names and the manifest last (:mod:`rank_pipeline.snapshots.parquet`, "Commit").
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pyarrow.fs as pafs

__all__ = ["SNAPSHOTS_URI_ENV", "Store", "StorageError", "check_uri", "store_for"]

SNAPSHOTS_URI_ENV = "RANK_PIPELINE_SNAPSHOTS_URI"
"""The environment variable naming where snapshots live (module docstring)."""

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_S3_OPTIONS = {"endpoint_override", "region", "scheme"}
_PYARROW_SCHEMES = {"gs", "gcs", "hdfs", "viewfs", "abfs", "abfss"}


class StorageError(ValueError):
    """A snapshots URI is malformed or names an unsupported store; the message says what to set."""


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

    def move(self, src: str, dest: str) -> None:
        """Rename a file (atomic on local disk; copy then delete on an object store)."""
        self.fs.move(src, dest)


def check_uri(raw: str) -> None:
    """Validate a snapshots URI without connecting anywhere.

    Raises:
        StorageError: an empty bucket, an unknown scheme, an unknown S3 option (one line naming it).
    """
    _build(raw, os.environ, connect=False)


def store_for(location: Store | Path | str, env: Mapping[str, str] | None = None) -> Store:
    """The :class:`Store` for a snapshots location: a :class:`Store` (returned as is), a local path, or a URI.

    Raises:
        StorageError: as :func:`check_uri`.
    """
    if isinstance(location, Store):
        return location
    store = _build(str(location) if isinstance(location, str) else location, os.environ if env is None else env,
                   connect=True)
    assert store is not None
    return store


def _bad(raw: str, why: str) -> StorageError:
    shown = _redact(raw)
    return StorageError(f"{SNAPSHOTS_URI_ENV}={shown!r} {why}; set it to a local folder or s3://bucket/prefix "
                        "(or unset it for <data folder>/snapshots)")


def _redact(raw: str) -> str:
    parts = urlsplit(raw)
    if not parts.scheme:
        return raw
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def _build(location: Path | str, env: Mapping[str, str], *, connect: bool) -> Store | None:
    if isinstance(location, Path):
        path = location.expanduser().resolve()
        return Store(pafs.LocalFileSystem(), path.as_posix(), str(path))
    raw = location.strip()
    if not raw:
        raise _bad(location, "is empty")
    match = _SCHEME_RE.match(raw)
    if not match:
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\\/]", raw) and not re.match(r"^[A-Za-z]:", raw):
            raise _bad(raw, "looks like a URI without '//'")
        path = Path(raw).expanduser().resolve()
        if path.exists() and not path.is_dir():
            raise _bad(raw, "is a file, not a folder")
        return Store(pafs.LocalFileSystem(), path.as_posix(), str(path))
    scheme = match.group(1).lower()
    parts = urlsplit(raw)
    if scheme == "file":
        path = Path(parts.path or "/").resolve()
        return Store(pafs.LocalFileSystem(), path.as_posix(), str(path))
    if scheme in {"s3", "s3a"}:
        bucket = parts.hostname or ""
        if not bucket or parts.username or parts.password:
            raise _bad(raw, "names no bucket" if not bucket else "holds credentials (use the AWS_* variables)")
        options = dict(parse_qsl(parts.query))
        unknown = sorted(set(options) - _S3_OPTIONS)
        if unknown:
            raise _bad(raw, f"has unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(_S3_OPTIONS))})")
        root = posixpath.join(bucket, parts.path.strip("/")).rstrip("/")
        uri = f"s3://{root}"
        if not connect:
            return None
        return Store(_s3(options, env), root, uri)
    if scheme in _PYARROW_SCHEMES:
        if not connect:
            return None
        try:
            fs, path = pafs.FileSystem.from_uri(raw)
        except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ... for a URI it cannot open
            raise _bad(raw, f"cannot be opened by pyarrow ({_first_line(exc)})") from None
        return Store(fs, path.rstrip("/"), _redact(raw))
    try:
        import fsspec
        from fsspec.registry import known_implementations
    except ImportError:  # pragma: no cover - fsspec is a dependency
        raise _bad(raw, f"uses the scheme {scheme!r}, which pyarrow does not support") from None
    if scheme not in known_implementations and scheme not in fsspec.available_protocols():
        raise _bad(raw, f"uses the scheme {scheme!r}, which neither pyarrow nor fsspec supports")
    if not connect:
        return None
    try:
        fs, path = fsspec.core.url_to_fs(raw)
    except (ImportError, ValueError) as exc:
        raise _bad(raw, f"needs a file system fsspec cannot load ({_first_line(exc)})") from None
    return Store(pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path.rstrip("/"), _redact(raw))


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
