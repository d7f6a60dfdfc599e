"""The contract's timestamp formats (``iso8601``, ``epoch_seconds``, ``epoch_milliseconds``, a ``strptime``
format taken as UTC) and a value decoded by one to a UTC instant, as the generated SQL decodes it.

Formats: docs/reference/vendor-contract.md, "Timestamp formats".
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["EPOCH_MILLISECONDS", "EPOCH_SECONDS", "ISO8601", "ISO_TIMESTAMP", "check_timestamp_format",
           "decode_timestamp"]

ISO_TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"
"""The text a ``string`` field with a ``timestamp_format`` decodes to (ISO 8601, UTC, to the second)."""
_TIMESTAMP_FORMAT = re.compile(r"(?:[^%]|%[YmdHMS%])*")
ISO8601, EPOCH_SECONDS, EPOCH_MILLISECONDS = "iso8601", "epoch_seconds", "epoch_milliseconds"
"""The named timestamp formats of a ``type: timestamp`` field (any other is a ``strptime`` format)."""
_ISO_TEXT = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?"
                       r"(Z|[+-]\d{2}:\d{2})?$")


def decode_timestamp(value: Any, fmt: str) -> datetime | None:
    """``value`` decoded by ``fmt`` (:attr:`Encoding.timestamp_format`) to an aware UTC datetime; None if it
    does not decode."""
    try:
        if fmt == EPOCH_SECONDS:
            return datetime.fromtimestamp(value, UTC)
        if fmt == EPOCH_MILLISECONDS:
            return datetime.fromtimestamp(value / 1000, UTC)
        if fmt == ISO8601:
            m = _ISO_TEXT.match(value)
            if m is None:
                return None
            year, month, day, hour, minute, second, fraction, zone = m.groups()
            offset = timedelta(0)
            if zone and zone != "Z":
                offset = (1 if zone[0] == "+" else -1) * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
            stamp = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                             int((fraction or "0").ljust(6, "0")), tzinfo=UTC)
            return stamp - offset
        return datetime.strptime(value, fmt).replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError, TypeError):
        return None


def check_timestamp_format(fmt: str, field_type: str, sent: str) -> None:
    """Raises ValueError unless ``fmt`` is a timestamp format Python and DuckDB read alike, for ``field_type``."""
    if field_type == "timestamp" and fmt in (ISO8601, EPOCH_SECONDS, EPOCH_MILLISECONDS):
        return
    if field_type not in ("string", "timestamp") or sent != "string":
        raise ValueError("timestamp_format is for a timestamp: a field of type timestamp (or string, sent as string)")
    if not _TIMESTAMP_FORMAT.fullmatch(fmt) or not all(d in fmt for d in ("%Y", "%m", "%d")):
        raise ValueError(f"timestamp_format {fmt!r}: iso8601, epoch_seconds, epoch_milliseconds (type: timestamp), "
                         "or a date (%Y, %m, %d) and optionally %H, %M, %S with literal text between them (the time is taken as UTC)")
