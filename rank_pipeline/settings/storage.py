"""Where the snapshots live (``RANK_PIPELINE_SNAPSHOTS_URI``): the URI's check, its scheme, its redaction."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from rank_pipeline.errors import EXIT_USAGE, RankPipelineError
from rank_pipeline.settings.values import ConfigurationError

__all__ = ["PYARROW_SCHEMES", "S3_OPTIONS", "S3_SCHEMES", "SNAPSHOTS_URI_ENV", "StorageError", "check_uri",
           "redact_uri", "snapshots_uri_from_env", "uri_scheme"]

SNAPSHOTS_URI_ENV = "RANK_PIPELINE_SNAPSHOTS_URI"
"""The environment variable naming where snapshots live (:mod:`rank_pipeline.snapshots.storage`)."""
S3_SCHEMES = frozenset({"s3", "s3a"})
S3_OPTIONS = frozenset({"endpoint_override", "region", "scheme"})
"""Query parameters an ``s3://`` snapshots URI may carry."""
PYARROW_SCHEMES = frozenset({"gs", "gcs", "hdfs", "viewfs", "abfs", "abfss"})
"""Schemes opened by :func:`pyarrow.fs.FileSystem.from_uri` (others go through fsspec)."""
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class StorageError(RankPipelineError, ValueError):
    """A snapshots URI is malformed or names an unsupported store; the message says what to set (exit 2)."""

    __module__ = "rank_pipeline.settings"  # its public name, as the exit-statuses page lists it (re-exported there)
    exit_status = EXIT_USAGE

    @classmethod
    def bad_uri(cls, raw: str, why: str) -> StorageError:
        """One line: the URI (without credentials: :func:`redact_uri`), ``why`` it is refused, what to set."""
        return cls(f"{SNAPSHOTS_URI_ENV}={redact_uri(raw)!r} {why}; set it to a local folder or "
                   "s3://bucket/prefix (or unset it for <data folder>/snapshots)")


def uri_scheme(raw: str) -> str | None:
    """The scheme of ``scheme://...`` in lower case, or None for a path."""
    match = _SCHEME_RE.match(raw)
    return match.group(1).lower() if match else None


def redact_uri(raw: str) -> str:
    """``raw`` without user info, query or fragment (they may hold secrets); a path is returned as is."""
    parts = urlsplit(raw)
    if not parts.scheme:
        return raw
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def check_uri(raw: str) -> None:
    """Validate a snapshots URI without connecting anywhere (forms: :mod:`rank_pipeline.snapshots.storage`).

    Raises StorageError: empty, no ``//``, a file, an ``s3://`` URI without bucket or with credentials or an
    unknown option, a scheme neither pyarrow nor fsspec supports (one line naming it).
    """
    text = raw.strip()
    if not text:
        raise StorageError.bad_uri(raw, "is empty")
    scheme = uri_scheme(text)
    if scheme is None:
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\\/]", text) and not re.match(r"^[A-Za-z]:", text):
            raise StorageError.bad_uri(text, "looks like a URI without '//'")
        path = Path(text).expanduser().resolve()
        if path.exists() and not path.is_dir():
            raise StorageError.bad_uri(text, "is a file, not a folder")
        return
    if scheme == "file" or scheme in PYARROW_SCHEMES:
        return
    parts = urlsplit(text)
    if scheme in S3_SCHEMES:
        bucket = parts.hostname or ""
        if not bucket or parts.username or parts.password:
            raise StorageError.bad_uri(
                text, "names no bucket" if not bucket else "holds credentials (use the AWS_* variables)")
        unknown = sorted(set(dict(parse_qsl(parts.query))) - S3_OPTIONS)
        if unknown:
            raise StorageError.bad_uri(
                text, f"has unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(S3_OPTIONS))})")
        return
    try:
        import fsspec
        from fsspec.registry import known_implementations
    except ImportError:  # pragma: no cover - fsspec is a dependency
        raise StorageError.bad_uri(text, f"uses the scheme {scheme!r}, which pyarrow does not support") from None
    if scheme not in known_implementations and scheme not in fsspec.available_protocols():
        raise StorageError.bad_uri(text, f"uses the scheme {scheme!r}, which neither pyarrow nor fsspec supports")


def snapshots_uri_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """``RANK_PIPELINE_SNAPSHOTS_URI`` stripped, None when unset or empty.
    Raises ConfigurationError: a malformed URI (:func:`check_uri`'s message).
    """
    env = os.environ if env is None else env
    raw = (env.get(SNAPSHOTS_URI_ENV) or "").strip() or None
    if raw is not None:
        try:
            check_uri(raw)
        except StorageError as exc:
            raise ConfigurationError(str(exc)) from None
    return raw
