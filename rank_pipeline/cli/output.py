"""What the command line prints and logs: progress (a bar on a terminal, periodic lines otherwise), tables,
and the invocation's log file (:class:`Session`), which takes stderr and the Python/Dagster log while a
step runs and falls back to stderr when the data folder cannot take a write."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

PROGRESS_INTERVAL_S = 5.0
"""Seconds between progress lines when stdout is not a terminal."""


def is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """A tqdm bar on a terminal; otherwise a log line every :data:`PROGRESS_INTERVAL_S` seconds."""

    def __init__(self, desc: str, unit: str, total: int = 0, out: TextIO | None = None):
        self.out = out or sys.stdout
        self.desc = desc
        self.unit = unit
        self._bar = None
        self._last = 0.0
        if is_tty(self.out):
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit=unit, desc=desc, file=self.out)

    def update(self, done: int, total: int, **info) -> None:
        if self._bar is not None:
            self._bar.total = total
            self._bar.n = done
            self._bar.set_postfix(refresh=False, **info)
            self._bar.refresh()
            return
        now = time.monotonic()
        if now - self._last >= PROGRESS_INTERVAL_S or (total and done >= total):
            self._last = now
            extra = "".join(f", {k} {v}" for k, v in info.items())
            stamp = datetime.now(UTC).strftime("%H:%M:%S")
            print(f"{stamp} {self.desc}: {done}/{total} {self.unit}s{extra}", file=self.out, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def frame(con, sql: str, limit: int | None = None):
    """``(columns, rows, more)`` of a query; ``more`` is True when rows beyond ``limit`` were cut."""
    cur = con.execute(sql)
    columns = [d[0] for d in cur.description] if cur.description else []
    if limit is None:
        return columns, cur.fetchall(), False
    rows = cur.fetchmany(limit + 1)
    return columns, rows[:limit], len(rows) > limit


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        return f"{value:.6g}" if abs(value) < 1e15 else str(value)
    return str(value)


def print_table(columns: list[str], rows: list[tuple], out: TextIO, max_width: int = 60) -> None:
    cells = [[_cell(v)[:max_width] for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip(), file=out)


def print_query(con, title: str, sql: str) -> None:
    print(f"\n== {title} ==")
    columns, rows, _ = frame(con, sql)
    print_table(columns, rows, sys.stdout)


class _FallbackStream:
    """A text stream writing to the log file until a write fails, then to the real stderr.

    Used for the Dagster log and redirected stderr: a log file that cannot take a write (a full or
    read-only data folder) must not turn into a logging traceback or an exception inside a run step.
    """

    def __init__(self, file: TextIO, session: Session):
        self._file = file
        self._session = session
        self._broken = False

    def write(self, text: str) -> int:
        if not self._broken:
            try:
                n = self._file.write(text)
                self._file.flush()
                return n
            except OSError:
                self._broken = True
                self._session.log_failed()
        return sys.__stderr__.write(text) if sys.__stderr__ else len(text)

    def flush(self) -> None:
        if not self._broken:
            try:
                self._file.flush()
            except OSError:
                self._broken = True
                self._session.log_failed()

    def isatty(self) -> bool:
        return False


@dataclass
class Session:
    """One command invocation: its log file (created on first use) and what to print at the end.

    When the log file cannot be created or written (the data folder is read-only, not writable or
    full), the log is dropped and what would have gone into it goes to stderr.
    """

    logs_dir: Path | None = None
    command: str = ""
    verbose: bool = False
    _path: Path | None = field(default=None, init=False)

    @property
    def log_path(self) -> Path | None:
        if self._path is None and self.logs_dir is not None:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            path = self.logs_dir / f"{self.command}-{stamp}-{os.getpid()}.log"
            try:
                self.logs_dir.mkdir(parents=True, exist_ok=True)
                path.touch()
            except OSError:
                self.log_failed()
                return None
            self._path = path
        return self._path

    def log_failed(self) -> None:
        """Stop using the log file (it cannot be written); later detail goes to stderr."""
        self.logs_dir = None
        self._path = None

    def write(self, text: str, *, quiet: bool = False) -> None:
        """Append ``text`` to the log file; to stderr when there is none (unless ``quiet``)."""
        text = text if text.endswith("\n") else text + "\n"
        path = self.log_path
        if path is not None:
            try:
                with path.open("a") as f:
                    f.write(text)
                return
            except OSError:
                self.log_failed()
        if not quiet:
            sys.stderr.write(text)

    @contextlib.contextmanager
    def capture(self) -> Iterator[None]:
        """Send stderr and Python logging (the Dagster log included) to the log file meanwhile."""
        path = self.log_path
        if path is None:
            yield
            return
        try:
            f = path.open("a")
        except OSError:
            self.log_failed()
            yield
            return
        stream = _FallbackStream(f, self)
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        try:
            with contextlib.redirect_stderr(sys.stderr if self.verbose else stream):
                yield
        finally:
            root.removeHandler(handler)
            try:
                f.close()
            except OSError:
                self.log_failed()


SESSION = Session()


def load_settings(demo: bool = False):
    """The settings (:class:`rank_pipeline.settings.Settings`): inside a project, its component's attributes in
    ``defs.yaml`` with the environment overriding each, elsewhere the environment
    (:func:`rank_pipeline.settings.project_settings_from_env`; ``demo``: without the vendor's base URL and an
    engine other than DuckDB); from then on the invocation's log file goes under their logs folder. Raises
    ConfigurationError for a bad setting (an attribute: at its line of ``defs.yaml``)."""
    from rank_pipeline.settings import project_settings_from_env

    settings = project_settings_from_env(demo=demo)
    SESSION.logs_dir = settings.paths.logs_dir
    return settings
