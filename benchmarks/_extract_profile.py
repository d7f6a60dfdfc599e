"""CPU by stage of rank-pipeline's extractor process, from a py-spy sample of it (``extract.py --py-spy``).

py-spy (``record -f raw``, idle threads left out) writes one line per distinct stack,
``frame;frame;...;frame <samples>``, each frame ``function (file:line)``. Each sample goes to one stage:
the deepest frame of the stack that names a stage (:data:`RULES`, first matching rule per frame) sets it,
so a JSON encoder called by the snapshot's row building counts as attribute serialization, and the
pyarrow calls under a checkpoint's spool count as checkpoints, not as the snapshot's Parquet writes.
Samples no rule names (the asyncio event loop) are ``event loop, other``; samples outside
``run_extraction`` (imports at the start) are left out, as the measured CPU leaves them out, and so are samples
whose innermost frame is the event loop's selector waiting for a socket (``EpollSelector.select``): py-spy counts
that thread as active, but it waits (in one run of workload (a), 13.6 % of the samples against 2 % of the CPU,
timed around the selector's calls).

:func:`stages` returns the share of the samples per stage; ``extract.py`` multiplies each share by the
process's measured CPU seconds (``getrusage``, not the profile) per 1,000 records delivered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["RULES", "STAGES", "classify", "stages"]

STAGES = (
    "parse (page JSON)",
    "attribute serialization",
    "Arrow columns (rows -> table)",
    "Parquet writes (snapshot)",
    "checkpoints (resume spool)",
    "id bookkeeping (proof)",
    "child requests (per keyword)",
    "HTTP client (httpx)",
    "pacer (keys, windows)",
    "transport, paginator (rest)",
    "event loop, other",
)

# (file suffix or "", function name or "", stage): a frame matches when both given parts match
RULES: tuple[tuple[str, str, str], ...] = (
    ("api/transport.py", "_parse_body", STAGES[0]),
    ("api/transport.py", "decode_json", STAGES[0]),
    ("api/listing.py", "decode_raw_page", STAGES[0]),
    ("snapshots/schema.py", "records_table", STAGES[2]),
    ("snapshots/writer.py", "", STAGES[3]),
    ("extract/resume.py", "", STAGES[4]),
    ("api/listing.py", "_deliver", STAGES[5]),
    ("api/listing.py", "record_id", STAGES[5]),
    ("extract/day.py", "on_record", STAGES[6]),
    ("extract/day.py", "_as_dict", STAGES[6]),
    ("extract/parent_reads.py", "", STAGES[6]),
    ("api/endpoints.py", "", STAGES[6]),
    ("api/fields.py", "", STAGES[6]),
    ("/httpx/", "", STAGES[7]),
    ("/httpcore/", "", STAGES[7]),
    ("/h11/", "", STAGES[7]),
    ("/anyio/", "", STAGES[7]),
    ("api/network.py", "", STAGES[7]),
    ("api/pacing.py", "", STAGES[8]),
    ("api/keys.py", "", STAGES[8]),
    ("api/transport.py", "", STAGES[9]),
    ("api/listing.py", "", STAGES[9]),
    ("api/client.py", "", STAGES[9]),
)
"""Which frames name a stage; the JSON encoder under the row building is handled in :func:`classify`."""

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::\d+)?\)$")
_ENCODERS = ("json/encoder.py", "json/__init__.py")
_WITHIN = "run_extraction ("
_WAIT = re.compile(r"^\w*Selector\.select \(selectors\.py")


def _stage_of(func: str, file: str) -> str | None:
    file = "/" + file  # py-spy names files from their import root: httpx/_client.py
    for suffix, name, stage in RULES:
        if (not suffix or suffix in file) and (not name or func == name or func.endswith("." + name)):
            return stage
    return None


def classify(stack: Iterable[str]) -> str:
    """The stage of one sampled stack (frames outermost first)."""
    stage = STAGES[-1]
    for frame in stack:
        match = _FRAME.match(frame.strip())
        if match is None:
            continue
        func, file = match["func"], match["file"]
        if stage == STAGES[2] and (file.endswith(_ENCODERS) or "orjson" in file or "msgspec" in file):
            return STAGES[1]
        found = _stage_of(func, file)
        if found is not None:
            stage = found
    return stage


def stages(raw: Path) -> dict[str, float]:
    """Share of the samples (0..1) per stage of :data:`STAGES`, from a py-spy ``raw`` file; {} when empty."""
    counts = dict.fromkeys(STAGES, 0)
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = stack.split(";")
        if not any(f.startswith(_WITHIN) for f in frames):
            continue  # the process's start and end, outside the CPU getrusage measures
        if _WAIT.match(frames[-1]):
            continue  # the loop waiting for a socket, not running
        counts[classify(frames)] += int(n)
    total = sum(counts.values())
    return {k: v / total for k, v in counts.items()} if total else {}
