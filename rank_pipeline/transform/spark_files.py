"""The file-system calls the Spark engine makes on its warehouse (exists, delete, rename), on any session.

:func:`file_system` returns ``(fs, path)`` backed by Hadoop's ``FileSystem`` (a session with a JVM) or
pyarrow's (Spark Connect: local, ``s3://``/``s3a://``, ``gs://``, ``hdfs://``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["ArrowFileSystem", "absolute_uri", "file_system", "is_connect", "list_names"]


def is_connect(spark: Any) -> bool:
    """True for a Spark Connect session (no JVM in this process)."""
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # the connect client's dependencies are not installed: it cannot be one
        return False
    return isinstance(spark, ConnectSession)


def absolute_uri(uri: str | Path) -> str:
    """``uri`` as executors elsewhere can read it: a path without a scheme made absolute (a relative path
    would be resolved in each executor's own working folder); a URI with a scheme as given."""
    text = str(uri).rstrip("/") or "/"
    if "://" in text or text.startswith("file:"):
        return text
    return str(Path(text).resolve())


class ArrowFileSystem:
    """Hadoop ``FileSystem``'s exists/delete/rename over a ``pyarrow.fs`` file system (for Connect)."""

    def __init__(self, fs: Any):
        self.fs = fs

    def exists(self, path: str) -> bool:
        from pyarrow import fs as pafs

        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def delete(self, path: str, recursive: bool = True) -> bool:
        from pyarrow import fs as pafs

        kind = self.fs.get_file_info(path).type
        if kind == pafs.FileType.NotFound:
            return False
        if kind == pafs.FileType.Directory:
            if not recursive:
                raise OSError(f"{path} is a directory")
            self.fs.delete_dir(path)
        else:
            self.fs.delete_file(path)
        return True

    def rename(self, source: str, target: str) -> bool:
        if self.exists(target) or not self.exists(source):
            return False
        self.fs.move(source, target)
        return True

    def names(self, path: str) -> list[str]:
        """The names of the entries directly under directory ``path``."""
        from pyarrow import fs as pafs

        return [info.base_name for info in self.fs.get_file_info(pafs.FileSelector(path))]


def list_names(fs: Any, path: Any) -> list[str]:
    """The names of the entries directly under the existing directory ``path`` of ``fs`` (as
    :func:`file_system` returns them: a Hadoop ``FileSystem`` or an :class:`ArrowFileSystem`)."""
    if isinstance(fs, ArrowFileSystem):
        return fs.names(path)
    return [str(status.getPath().getName()) for status in fs.listStatus(path)]


def _arrow(uri: str) -> tuple[ArrowFileSystem, str]:
    from pyarrow import fs as pafs

    parts = urlsplit(uri)
    if parts.scheme in ("", "file"):
        return ArrowFileSystem(pafs.LocalFileSystem()), os.path.abspath(parts.path if parts.scheme else uri)
    if parts.scheme == "s3a":
        uri = "s3" + uri[3:]
    fs, path = pafs.FileSystem.from_uri(uri)
    return ArrowFileSystem(fs), path


def file_system(spark: Any, uri: str) -> tuple[Any, Any]:
    """``(fs, path)`` for ``uri`` with Hadoop ``FileSystem``'s calls: Hadoop through the session's JVM, or pyarrow
    on Spark Connect. Raises pyarrow.ArrowInvalid: on Connect, a scheme pyarrow has no file system for.
    """
    if is_connect(spark):
        return _arrow(uri)
    from py4j.java_gateway import JavaClass

    # The class named whole: py4j's ``jvm.org.apache...`` walk asks the JVM about each prefix, and the JVM looks
    # up every prefix that is no class, and misses it, in each of Spark's jars (a build renames hundreds of folders).
    path = JavaClass("org.apache.hadoop.fs.Path", spark._jvm._gateway_client)(uri)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()), path
