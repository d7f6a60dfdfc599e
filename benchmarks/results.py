"""The benchmarks write their own dated figures into ``benchmarks/RESULTS.md``.

A benchmark script ends with ``sys.exit(recorded("<name>", main))``. With ``RANK_BENCH_RECORD=1`` in the
environment (the Makefile's ``bench-*`` targets set it), the run's standard output is kept as it is printed
and, when ``main`` returns 0, written into RESULTS.md as the section of that name: the date (UTC), the
command, the machine's CPUs and load averages before and after, then the output as printed. The section
of the previous run is replaced; everything else in the file (the curated tables, other benchmarks'
sections) is kept. Without the variable nothing is written (the smoke tests run the scripts on toy
sizes). The variable is removed from the environment first, so the child processes a benchmark starts
never write.
"""

from __future__ import annotations

import io
import os
import shlex
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
RECORD_ENV = "RANK_BENCH_RECORD"
RESULTS_ENV = "RANK_BENCH_RESULTS"
"""Another file to write instead of :data:`RESULTS` (the tests' temporary copy)."""
HEADING = "## Latest runs, written by the benchmarks"

__all__ = ["HEADING", "RECORD_ENV", "RESULTS", "RESULTS_ENV", "record_section", "recorded"]


class _Tee(io.TextIOBase):
    """Standard output that is also kept (the run's progress still shows as it happens)."""

    def __init__(self, out):
        self.out, self.kept = out, io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


def record_section(name: str, body: str, path: Path = RESULTS) -> None:
    """Put ``body`` as the section ``name`` of ``path`` (between its begin and end markers), replacing
    the section of an earlier run, or adding it under :data:`HEADING` at the end of the file."""
    begin, end = f"<!-- benchmark {name}: begin -->", f"<!-- benchmark {name}: end -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        if HEADING not in text:
            text = text.rstrip() + f"\n\n{HEADING}\n\nEach section below is replaced by the next run of its benchmark " \
                                   "through `make bench-*` (`benchmarks/results.py`).\n"
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def recorded(name: str, main: Callable[[], int | None], path: Path | None = None) -> int:
    """Run ``main`` and return its exit status; with ``RANK_BENCH_RECORD=1``, write its output into
    ``path`` (default ``RANK_BENCH_RESULTS``, else :data:`RESULTS`) as the section ``name`` when it succeeds
    (module docstring)."""
    record = os.environ.pop(RECORD_ENV, "") == "1"
    path = path or Path(os.environ.pop(RESULTS_ENV, "") or RESULTS)
    if not record:
        return main() or 0
    load_before = os.getloadavg()
    started = datetime.now(UTC)
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        status = main() or 0
    finally:
        sys.stdout = tee.out
    if status == 0:
        command = "python " + " ".join(shlex.quote(a) for a in [f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])
        load_after = os.getloadavg()
        record_section(name, "\n".join([
            f"### {name}: {started:%Y-%m-%d %H:%M} UTC",
            "",
            f"`{command}` on {os.cpu_count()} CPUs, load average {load_before[0]:.1f} at the start and "
            f"{load_after[0]:.1f} at the end, {(datetime.now(UTC) - started).total_seconds():.0f} s.",
            "",
            "```text",
            tee.kept.getvalue().rstrip(),
            "```",
        ]), path)
        print(f"recorded in {path} (section {name})")
    return status
