"""The days the raw tables hold, kept in the data folder (``<data folder>/raw_days.json``) for an engine that reads
the snapshots in place, whose raw tables keep nothing of their own (docs/concepts/shape-check.md, "The days the raw
tables hold").
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

__all__ = ["RAW_DAYS_FILE", "RawDays", "days_after_load"]

RAW_DAYS_FILE = "raw_days.json"
"""The ledger's name in the data folder."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RawDays:
    """The ledger of the snapshot days the raw tables hold: ``{"days": ["YYYY-MM-DD", ...]}`` at ``path``, ascending,
    written atomically (a temporary file renamed over it) after each raw load by the run holding the data folder's
    writer lock. Absent in a folder no load has written it in since it exists: :meth:`held` is then what
    ``default`` says (an engine that keeps its raw tables tells their days: DuckDB's build file), or None, which the
    raw load takes as every committed day (what an engine reading in place read before the ledger).
    """

    path: Path
    default: Callable[[], Collection[date]] | None = field(default=None, compare=False)

    @classmethod
    def of(cls, data_dir: Path, default: Callable[[], Collection[date]] | None = None) -> RawDays:
        """The ledger of the data folder ``data_dir``; ``default`` as :class:`RawDays`."""
        return cls(Path(data_dir) / RAW_DAYS_FILE, default)

    def read(self) -> frozenset[date] | None:
        """The days recorded; None when there is no ledger, or it cannot be read (logged: the next load rewrites it)."""
        try:
            data = json.loads(self.path.read_text())
            return frozenset(date.fromisoformat(d) for d in data["days"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.warning("%s cannot be read (%s): it is rewritten by the next raw load", self.path, exc)
            return None

    def held(self) -> frozenset[date] | None:
        """The days the raw tables hold: those recorded, else ``default``'s; None when neither can tell."""
        recorded = self.read()
        if recorded is None and self.default is not None:
            return frozenset(self.default())
        return recorded

    def write(self, days: Iterable[date]) -> None:
        """Record ``days`` (replacing what was recorded)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".raw_days.", suffix=".json")
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump({"days": [d.isoformat() for d in sorted(set(days))]}, handle, indent=0)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def days_after_load(held: Collection[date], listed: Iterable[date], first: date | None,
                    last: date | None) -> frozenset[date]:
    """The days the raw tables hold after a load of ``first .. last`` (None: an open bound) that took the committed
    days ``listed`` (those outside the range are ignored): the ``held`` days outside the range, and the range's
    days as committed (a day of the range without a snapshot is no longer held)."""

    def within(day: date) -> bool:
        return (first is None or day >= first) and (last is None or day <= last)

    return frozenset({d for d in held if not within(d)} | {d for d in listed if within(d)})
