"""A suggested remap: the contract's missing paths matched to the paths the vendor sends, as a patch of the
contract for review (``rank-pipeline profile --suggest``).

For each endpoint, the contracted fields the shape check fails as absent, of another type or not decoding
(:func:`rank_pipeline.shape.check.check_profile`) are matched with the observed leaf paths the contract
does not read (and a failing field's own path, when only its type changed). A candidate fits a field when
its values have the type the field is sent as, or, for an integer, a number or a boolean, when they are text
that decodes to it once at most three frequent values are taken for sentinels meaning null (then an
``encoding`` is proposed, with the share that decodes and the top values); a number must stay within the
field's range. Fitting candidates are scored, 0..1, by:

- value shape (half): the pattern of its values (URL, domain, UUID, ISO timestamp, ``#rrggbb`` colour,
  language or country code, digits) against the pattern the field's ``examples`` and description name, and
  the known values a description lists (``google, bing, yahoo``);
- name (a third): the words of the candidate's path against the field's path and name (camelCase and
  ``_`` split, a plural ``s`` dropped), and its last part's likeness (difflib);
- description (the rest): the candidate's words in the field's description.

One assignment per endpoint, the best pair first, so no candidate is used twice; a field whose two best
candidates score alike is named as a tie. The patch edits ``path:`` (and adds ``encoding:``) of the fields
assigned; the notes before it say, per field, the candidate taken, its score, its values and any tie.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from rank_pipeline.shape.check import check_profile
from rank_pipeline.shape.profile import EndpointProfile, PathStats, Profiler
from rank_pipeline.shape.thresholds import ThresholdTable
from rank_pipeline.transform.contract import Contract, ContractField

__all__ = ["Assignment", "Suggestion", "suggest_remap"]

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("uuid", re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)),
    ("url", re.compile(r"^https?://", re.I)),
    ("timestamp", re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")),
    ("colour", re.compile(r"^#[0-9a-f]{6}$", re.I)),
    ("digits", re.compile(r"^[+-]?\d+$")),
    ("language", re.compile(r"^[a-z]{2}(-[A-Za-z]{2})?$")),
    ("country", re.compile(r"^[A-Z]{2}$")),
    ("domain", re.compile(r"^(?!-)[a-z0-9-]+(\.[a-z0-9-]+)+$", re.I)),
)
_CUES = (("url", "url"), ("uuid", "uuid"), ("iso 8601", "timestamp"), ("#rrggbb", "colour"), ("domain", "domain"),
         ("language code", "language"), ("country code", "country"))
MAX_SENTINELS = 3


def _pattern(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    return next((name for name, regex in _PATTERNS if regex.match(value)), None)


def _words(text: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    words = {w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if len(w) > 1}
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words}


def _expected(spec: ContractField) -> tuple[str | None, set[str]]:
    """The pattern a field's values should have, and the values its description lists (``(google, bing)``)."""
    shapes = {_pattern(e) for e in spec.examples} - {None}
    text = spec.description.lower()
    cue = next((shape for word, shape in _CUES if word in text), None)
    listed = re.search(r"\(([^()]*,[^()]*)\)", spec.description)
    known = {v.strip().lower() for v in listed.group(1).split(",") if v.strip() and "..." not in v} if listed else set()
    return (next(iter(shapes)) if len(shapes) == 1 else cue), known


@dataclass
class _Fit:
    score: float
    encoding: dict | None
    note: str


def _fit(spec: ContractField, stats: PathStats, values: Mapping[Any, int]) -> _Fit | None:
    """How ``stats`` (an observed path, ``{value: records}`` of its values, most frequent first; empty for an
    array) fits ``spec``; None: it does not."""
    types = set(stats.types)
    encoding: dict | None = None
    if spec.type == "array":
        if types != {"array"}:
            return None
    elif types <= {spec.type} or (spec.type == "number" and types <= {"integer", "number"}):
        pass
    elif types == {"string"} and spec.type in ("integer", "number", "boolean"):
        if spec.type == "boolean":
            return None
        probe = spec.model_copy(update={"encoding": None, "type": spec.type})
        decoding: dict[Any, int] = {}
        others: list[tuple[int, Any]] = []
        for v, n in values.items():
            if _decodes_text(probe, v):
                decoding[v] = n
            elif len(others) == MAX_SENTINELS:
                return None  # more values that do not decode than sentinels taken for null
            else:
                others.append((n, v))
        rest = sorted(others, reverse=True)
        if not decoding or (rest and not spec.nullable):
            return None
        encoding = {"sent_as": "string", **({"null_values": [v for _, v in rest]} if rest else {})}
    else:
        return None
    if spec.range is not None and values:
        numbers = [float(v) for v in values if _is_number_text(v)]
        if numbers and not (spec.range[0] <= min(numbers) and max(numbers) <= spec.range[1]):
            return None
    filled = sum(values.values()) or stats.filled
    top = ", ".join(f"{json.dumps(v)} ({100 * n / filled:.1f}%)" for v, n in list(values.items())[:3])
    note = f"{stats.type_label()}, e.g. {top}" if top else stats.type_label()
    if encoding is not None:
        share = 1 - sum(values[v] for v in encoding.get("null_values", [])) / filled
        note += f"; {100 * share:.1f}% decode as {spec.type}"
        note += "".join(f", {json.dumps(v)} taken to mean null" for v in encoding.get("null_values", []))
    return _Fit(0.0, encoding, note)


def _example(values: Mapping[Any, int]) -> object:
    """The first (most frequent) of ``values``, as :meth:`Profiler.values` shows an example: text cut to 80
    characters."""
    example = next(iter(values), None)
    return example[:77] + "..." if isinstance(example, str) and len(example) > 80 else example


def _is_number_text(value: object) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)) or (
        isinstance(value, str) and re.match(r"^\s*[+-]?\d+(\.\d+)?\s*$", value) is not None)


def _decodes_text(spec: ContractField, value: object) -> bool:
    if not isinstance(value, str):
        return False
    if spec.type == "integer":
        return re.match(r"^\s*[+-]?\d+\s*$", value) is not None
    return _is_number_text(value)


def _score(spec: ContractField, stats: PathStats, example: object) -> float:
    shape, known = _expected(spec)
    observed = _pattern(example)
    value = 1.0 if known and isinstance(example, str) and example.lower() in known else (
        1.0 if shape is not None and observed == shape else 0.0)
    if shape is not None and observed is not None and observed != shape:
        value = -0.5
    target, seen = _words(spec.path) | _words(spec.name), _words(stats.path)
    overlap = len(target & seen) / len(seen) if seen else 0.0
    last = difflib.SequenceMatcher(None, spec.path.rsplit(".", 1)[-1].lower(), stats.path.rsplit(".", 1)[-1].lower()).ratio()
    name = max(overlap, last if last >= 0.6 else 0.0)
    described = len(_words(spec.description) & seen) / len(seen) if seen else 0.0
    return round(0.5 * value + 0.33 * name + 0.17 * described, 3)


@dataclass
class Assignment:
    """One field of the contract remapped: its endpoint and name, the old and new path, the proposed encoding,
    the score, a note on the values, and the candidates tied with it (empty: none)."""

    endpoint: str
    spec: ContractField
    path: str
    encoding: dict | None
    score: float
    note: str
    ties: list[str] = field(default_factory=list)


@dataclass
class Suggestion:
    """The remap suggested for every endpoint, and the fields left without a candidate."""

    assignments: list[Assignment] = field(default_factory=list)
    unmatched: list[tuple[str, ContractField, str]] = field(default_factory=list)

    def notes(self) -> list[str]:
        """One line per field remapped or left unmatched (review these before applying the patch)."""
        lines = []
        for a in self.assignments:
            tie = f"; TIE with {', '.join(a.ties)}: choose by hand" if a.ties else ""
            enc = f"; encoding {json.dumps(a.encoding)}" if a.encoding else ""
            lines.append(f"{a.endpoint}.{a.spec.name}: {a.spec.path} -> {a.path} (score {a.score:.2f}; {a.note}{enc}{tie})")
        lines += [f"{e}.{f.name}: {f.path} has no candidate ({why})" for e, f, why in self.unmatched]
        return lines

    def patch(self, contract_file: Path, display: str) -> str:
        """A unified diff of ``contract_file`` (named ``display`` in the diff's headers), for ``git apply``."""
        old = contract_file.read_text()
        new = old
        for a in self.assignments:
            pattern = re.compile(rf"(name: {re.escape(a.spec.name)}, path: ){re.escape(a.spec.path)}(,)")
            section = _section(new, a.endpoint)
            start, end = section
            match = pattern.search(new, start, end)
            if match is None:
                continue
            encoding = f" encoding: {_flow(a.encoding)}," if a.encoding else ""
            new = new[:match.start()] + f"{match.group(1)}{a.path},{encoding}" + new[match.end():]
        diff = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                    f"a/{display}", f"b/{display}")
        return "".join(diff)


def _flow(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return json.dumps(value)


def _section(text: str, endpoint: str) -> tuple[int, int]:
    """Where the entry of ``endpoint`` lies in the contract's text (from its key to the next endpoint's)."""
    match = re.search(rf"^  {re.escape(endpoint)}:\s*$", text, re.M)
    if match is None:
        return 0, 0
    following = re.search(r"^  [A-Za-z_]\w*:\s*$", text[match.end():], re.M)
    return match.start(), match.end() + following.start() if following else len(text)


def suggest_remap(contract: Contract, thresholds: ThresholdTable, records: Mapping[str, pa.Table]) -> Suggestion:
    """The remap of every endpoint of ``records`` (``{endpoint: Arrow table with a string column
    attributes}``, a day's snapshots or a live sample), as the module doc says."""
    out = Suggestion()
    for endpoint, table in records.items():
        with Profiler(endpoint, table) as profiler:
            profile = profiler.profile()
            _suggest_endpoint(out, contract, thresholds, profile, profiler)
    return out


def _suggest_endpoint(out: Suggestion, contract: Contract, thresholds: ThresholdTable, profile: EndpointProfile,
                      profiler: Profiler) -> None:
    endpoint = profile.endpoint
    failing = [f for f in check_profile(contract, thresholds, profile, None, profiler)
               if f.problem in ("absent", "wrong_type", "undecodable")]
    fields = [contract.field(endpoint, f.path) for f in failing]
    wanted = [f for f in fields if f is not None]
    if not wanted:
        return
    pool = [s for s in profile.paths.values() if s.types and set(s.types) != {"object"} and not s.path.endswith("[*]")
            and "[*]" not in s.path and (not contract.reads(endpoint, s.path, set(s.types))
                                         or any(s.path == f.path for f in wanted))]
    # each candidate's values read once, for every field; its example (the most frequent value) taken from them
    profiler.values(profile, [s.path for s in pool if set(s.types) == {"array"}])
    counts = profiler.value_counts_of([s.path for s in pool if set(s.types) != {"array"}])
    values = {path: {json.loads(k): n for k, n in texts.items()} for path, texts in counts.items()}
    for s in pool:
        if s.path in values:
            s.example = _example(values[s.path])
    scored: list[tuple[float, str, str, _Fit]] = []
    for spec in wanted:
        for stats in pool:
            fit = _fit(spec, stats, values.get(stats.path, {}))
            if fit is not None:
                fit.score = _score(spec, stats, stats.example)
                scored.append((fit.score, spec.name, stats.path, fit))
    scored.sort(key=lambda t: (-t[0], t[1], t[2]))
    taken_fields: set[str] = set()
    taken_paths: set[str] = set()
    by_field: dict[str, list[tuple[float, str]]] = {}
    for score, name, path, _ in scored:
        by_field.setdefault(name, []).append((score, path))
    for score, name, path, fit in scored:
        if name in taken_fields or path in taken_paths:
            continue
        spec = contract.named(endpoint, name)
        ties = [p for s, p in by_field[name] if p != path and p not in taken_paths and abs(s - score) < 0.01]
        taken_fields.add(name)
        taken_paths.add(path)
        out.assignments.append(Assignment(endpoint, spec, path, fit.encoding, score, fit.note, ties))
    for spec in wanted:
        if spec.name not in taken_fields:
            out.unmatched.append((endpoint, spec, "no path the vendor sends has fitting values"))
