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
from rank_pipeline.transform.contract import (
    EPOCH_MILLISECONDS,
    EPOCH_SECONDS,
    ISO8601,
    Contract,
    ContractField,
    Encoding,
)

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
    """A candidate that fits a field: the path to write, the entry's keys to set (``encoding``, ``values``,
    ``fold_case``), its score and a note on its values."""

    path: str
    score: float
    updates: dict
    note: str


_TEXT_FORMATS = ("%d/%m/%Y %H:%M:%S", "%m/%d/%Y %H:%M:%S", "%d.%m.%Y %H:%M:%S", "%d-%m-%Y %H:%M:%S",
                 "%Y/%m/%d %H:%M:%S", "%d/%m/%Y %H:%M", "%m/%d/%Y %H:%M", "%d.%m.%Y %H:%M", "%Y/%m/%d %H:%M",
                 "%Y%m%d%H%M%S", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%Y/%m/%d", "%Y%m%d")
"""The ``strptime`` formats a timestamp sent as text is tried in (ISO 8601 first, as ``iso8601``)."""
_EPOCHS = ((EPOCH_SECONDS, 1e8, 1e10), (EPOCH_MILLISECONDS, 1e11, 1e13))
"""Epoch formats and the range of their values (1973 to 2286)."""
_TRUE = {"yes", "y", "true", "1", "on", "t"}
_FALSE = {"no", "n", "false", "0", "off", "f"}


def _timestamp_fit(spec: ContractField, types: set[str], values: Mapping[Any, int]) -> tuple[dict, str] | None:
    """``(encoding, words)`` under which every value decodes as a timestamp; None if no format reads them all."""
    if not values:
        return None
    if types <= {"integer", "number"}:
        numbers = [float(v) for v in values]
        for fmt, low, high in _EPOCHS:
            if all(low <= abs(n) < high for n in numbers):
                return {"timestamp_format": fmt}, fmt.replace("_", " ")
        return None
    if types != {"string"}:
        return None
    for fmt in (ISO8601, *_TEXT_FORMATS):
        probe = spec.model_copy(update={"encoding": Encoding(timestamp_format=fmt), "values": None})
        if all(probe.decode(v)[0] for v in values):
            return ({} if fmt == ISO8601 else {"timestamp_format": fmt}), f"read as {fmt}"
    return None


def _known_values(spec: ContractField) -> list[str]:
    """Our values of an enum field: its ``values`` (a map's values), else those its description lists."""
    if spec.values is not None:
        return list(dict.fromkeys(str(v) for v in (spec.values.values() if isinstance(spec.values, dict)
                                                    else spec.values)))
    return sorted(_expected(spec)[1])


def _value_map_fit(spec: ContractField, stats: PathStats, values: Mapping[Any, int]) -> tuple[dict, str] | str:
    """The ``values``/``fold_case`` under which an enum field reads ``values``, or why it cannot."""
    known = _known_values(spec)
    sent = list(values)
    if all(isinstance(v, str) and v in known for v in sent):
        return {}, "every value is one of the field's"
    if all(isinstance(v, str) and v.lower() in {k.lower() for k in known} for v in sent):
        return {"fold_case": True}, "every value is one of the field's, in another case"
    if len(sent) != len(known):
        return f"{len(sent)} distinct values for the field's {len(known)} ({', '.join(known)})"
    mapping: dict[Any, str] = {}
    words = _words(stats.path)
    named = [k for k in known if k.lower() in words]
    flags = {v: (str(v).lower() in _TRUE) if str(v).lower() in _TRUE | _FALSE else None for v in sent}
    if len(known) == 2 and len(named) == 1 and all(f is not None for f in flags.values()) \
            and len(set(flags.values())) == 2:
        other = next(k for k in known if k != named[0])
        mapping = {v: named[0] if flag else other for v, flag in flags.items()}
    else:
        for v in sent:
            text = str(v).lower()
            matches = [k for k in known if text and k.lower().startswith(text)]
            if len(matches) != 1:
                return (f"its values {', '.join(map(json.dumps, sent))} match the field's "
                        f"{', '.join(known)} one to one, but nothing tells which is which")
            mapping[v] = matches[0]
        if len(set(mapping.values())) != len(mapping):
            return f"its values {', '.join(map(json.dumps, sent))} do not map one to one to {', '.join(known)}"
    return {"values": mapping}, "mapped " + ", ".join(f"{json.dumps(k)} to {v}" for k, v in mapping.items())


def _fit(spec: ContractField, stats: PathStats, values: Mapping[Any, int], path: str,
         element_types: Mapping[str, int]) -> _Fit | str:
    """How ``stats`` (an observed path, ``{value: records}`` of its values, most frequent first, and the types
    of its elements when it is an array) fits ``spec`` when read at ``path``: a :class:`_Fit`, or why it does
    not fit (one phrase)."""
    types = set(stats.types)
    updates: dict = {}
    words = ""
    if spec.type == "array":
        item = spec.items or "string"
        inner = set(element_types) if "[*]" not in path else types
        if "[*]" not in path and types != {"array"}:
            return f"holds {stats.type_label()} where the field reads an array of {item}"
        if inner - {item}:
            return f"its elements hold {'|'.join(sorted(inner))}, not {item}"
    elif spec.type == "timestamp":
        found = _timestamp_fit(spec, types, values)
        if found is None:
            return f"{_sample(values)} {'do' if len(values) > 1 else 'does'} not decode as a timestamp in any known format"
        encoding, words = found
        if encoding:
            updates["encoding"] = encoding
    elif spec.values is not None:
        if types != {"string"} and not types <= {"boolean", "integer"}:
            return f"holds {stats.type_label()}"
        mapped = _value_map_fit(spec, stats, values)
        if isinstance(mapped, str):
            return mapped
        updates, words = mapped
    elif types <= {spec.type} or (spec.type == "number" and types <= {"integer", "number"}):
        pass
    elif types == {"string"} and spec.type in ("integer", "number"):
        probe = spec.model_copy(update={"encoding": None, "type": spec.type})
        decoding: dict[Any, int] = {}
        others: list[tuple[int, Any]] = []
        for v, n in values.items():
            if _decodes_text(probe, v):
                decoding[v] = n
            elif len(others) == MAX_SENTINELS:
                return f"more than {MAX_SENTINELS} of its values are no {spec.type} as text"
            else:
                others.append((n, v))
        rest = sorted(others, reverse=True)
        if not decoding or (rest and not spec.nullable):
            return f"its text is no {spec.type}" if not decoding else "it holds sentinels, and the field is never null"
        updates["encoding"] = {"sent_as": "string", **({"null_values": [v for _, v in rest]} if rest else {})}
    else:
        return f"holds {stats.type_label()} where the field is {spec.type}"
    if spec.range is not None and values:
        numbers = [float(v) for v in values if _is_number_text(v)]
        if numbers and not (spec.range[0] <= min(numbers) and max(numbers) <= spec.range[1]):
            return f"its values {min(numbers):g}..{max(numbers):g} are outside {spec.range[0]:g}..{spec.range[1]:g}"
    filled = sum(values.values()) or stats.filled
    top = ", ".join(f"{json.dumps(v)} ({100 * n / filled:.1f}%)" for v, n in list(values.items())[:3])
    note = f"{stats.type_label()}, e.g. {top}" if top else stats.type_label()
    if words:
        note += f"; {words}"
    encoding = updates.get("encoding") or {}
    if "sent_as" in encoding:
        share = 1 - sum(values[v] for v in encoding.get("null_values", [])) / filled
        note += f"; {100 * share:.1f}% decode as {spec.type}"
        note += "".join(f", {json.dumps(v)} taken to mean null" for v in encoding.get("null_values", []))
    return _Fit(path, 0.0, updates, note)


def _sample(values: Mapping[Any, int]) -> str:
    shown = [json.dumps(v) for v in list(values)[:2]]
    return "its values " + ", ".join(shown) + (" ..." if len(values) > 2 else "")


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


def _name_score(spec: ContractField, path: str) -> float:
    """How alike a candidate's path is to the field's path and name, 0..1 (module doc)."""
    target, seen = _words(spec.path) | _words(spec.name), _words(path)
    overlap = len(target & seen) / len(seen) if seen else 0.0
    last = difflib.SequenceMatcher(None, _last(spec.path), _last(path)).ratio()
    return max(overlap, last if last >= 0.6 else 0.0)


def _last(path: str) -> str:
    return re.sub(r"\[[^\]]*\]", "", path.rsplit(".", 1)[-1]).lower()


def _score(spec: ContractField, stats: PathStats, example: object, fit: _Fit) -> float:
    shape, known = _expected(spec)
    observed = _pattern(example)
    value = 1.0 if known and isinstance(example, str) and example.lower() in known else (
        1.0 if shape is not None and observed == shape else 0.0)
    if spec.type == "timestamp" or "values" in fit.updates:
        value = 1.0  # every value decodes as a timestamp, or maps one to one to the field's values
    elif shape is not None and observed is not None and observed != shape:
        value = -0.5
    seen = _words(stats.path)
    described = len(_words(spec.description) & seen) / len(seen) if seen else 0.0
    return round(0.5 * value + 0.33 * _name_score(spec, stats.path) + 0.17 * described, 3)


@dataclass
class Assignment:
    """One field of the contract remapped: its endpoint and name, the old and new path, the entry's keys to set
    (``encoding``, ``values``, ``fold_case``), the score, a note on the values, and the candidates tied with
    it (empty: none)."""

    endpoint: str
    spec: ContractField
    path: str
    updates: dict
    score: float
    note: str
    ties: list[str] = field(default_factory=list)

    @property
    def encoding(self) -> dict | None:
        """The encoding proposed, if any."""
        return self.updates.get("encoding")


@dataclass
class Suggestion:
    """The remap suggested for every endpoint, and the fields left without a candidate (with why)."""

    assignments: list[Assignment] = field(default_factory=list)
    unmatched: list[tuple[str, ContractField, str]] = field(default_factory=list)

    def notes(self) -> list[str]:
        """One line per field remapped or left unmatched (review these before applying the patch)."""
        lines = []
        for a in self.assignments:
            tie = f"; TIE with {', '.join(a.ties)}: choose by hand" if a.ties else ""
            keys = "".join(f"; {k} {_flow(v)}" for k, v in a.updates.items())
            lines.append(f"{a.endpoint}.{a.spec.name}: {a.spec.path} -> {a.path} (score {a.score:.2f}; {a.note}{keys}{tie})")
        lines += [f"{e}.{f.name}: {f.path} has no candidate ({why})" for e, f, why in self.unmatched]
        return lines

    def patch(self, contract_file: Path, display: str) -> str:
        """A unified diff of ``contract_file`` (named ``display`` in the diff's headers), for ``git apply``."""
        old = contract_file.read_text()
        new = old
        for a in self.assignments:
            span = _entry(new, a.endpoint, a.spec.name)
            if span is None:
                continue
            start, end = span
            new = new[:start] + _edited(new[start:end], a) + new[end:]
        diff = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                    f"a/{display}", f"b/{display}")
        return "".join(diff)


def _flow(value: object) -> str:
    """``value`` as YAML flow text (a key or text JSON-quoted, so ``"yes"`` stays text)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_flow(v)}" if not isinstance(k, str) or k in _QUOTE or
                               not re.fullmatch(r"[a-z_]+", k) else f"{k}: {_flow(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return json.dumps(value)


_QUOTE = _TRUE | _FALSE | {"null", "~"}


def _scalar(text: str) -> str:
    """A path as YAML flow text: quoted when it holds a flow indicator (``[``, ``]``)."""
    return json.dumps(text) if re.search(r"[\[\]{},:#]", text) else text


def _entry(text: str, endpoint: str, name: str) -> tuple[int, int] | None:
    """Where the flow mapping ``{name: <name>, ...}`` of ``endpoint`` lies in the contract's text."""
    start, end = _section(text, endpoint)
    match = re.compile(rf"\{{name: {re.escape(name)},").search(text, start, end)
    if match is None:
        return None
    depth, i, quoted = 0, match.start(), False
    while i < len(text):
        char = text[i]
        if char == '"' and text[i - 1] != "\\":
            quoted = not quoted
        elif not quoted and char in "{[":
            depth += 1
        elif not quoted and char in "}]":
            depth -= 1
            if depth == 0:
                return match.start(), i + 1
        i += 1
    return None


def _edited(entry: str, a: Assignment) -> str:
    """The flow mapping ``entry`` with the path of ``a`` and its keys set (a key present is replaced)."""
    entry = re.sub(r"(, path: )(\"[^\"]*\"|[^,]*)(,)", lambda m: f"{m.group(1)}{_scalar(a.path)}{m.group(3)}",
                   entry, count=1)
    for key, value in a.updates.items():
        present = re.search(rf"\b{key}: ", entry)
        if present is not None:
            value_start = present.end()
            value_end = _value_end(entry, value_start)
            entry = entry[:value_start] + _flow(value) + entry[value_end:]
        else:
            at = entry.index(", shown: ")
            entry = entry[:at] + f", {key}: {_flow(value)}" + entry[at:]
    return entry


def _value_end(text: str, start: int) -> int:
    """Where the flow value starting at ``start`` ends (before the next ``,`` or ``}`` at its depth)."""
    depth, quoted = 0, False
    for i in range(start, len(text)):
        char = text[i]
        if char == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif char in "{[":
            depth += 1
        elif char in "}]":
            if depth == 0:
                return i
            depth -= 1
        elif char == "," and depth == 0:
            return i
    return len(text)


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


def _read_at(spec: ContractField, observed: str, longest: Mapping[str, int], nullable_ok: bool) -> str:
    """The contract path that reads ``spec`` from the observed path (``serp[*].rank`` -> ``serp[0].rank``), or
    ``!why`` when it cannot."""
    if "[*]" not in observed or spec.type == "array":
        return observed
    array, rest = observed.split("[*]", 1)
    most = longest.get(array, 0)
    if most > 1:
        return (f"!{array} holds up to {most} elements per record: read one with {array}[N]{rest} or "
                f"{array}[?key=value]{rest} by hand")
    if not nullable_ok:
        return f"!{array} may be empty (a null), and the field is never null"
    return f"{array}[0]{rest}"


def _suggest_endpoint(out: Suggestion, contract: Contract, thresholds: ThresholdTable, profile: EndpointProfile,
                      profiler: Profiler) -> None:
    endpoint = profile.endpoint
    failing = [f for f in check_profile(contract, thresholds, profile, None, profiler)
               if f.problem in ("absent", "wrong_type", "undecodable")]
    fields = [contract.field(endpoint, f.path) for f in failing]
    wanted = [f for f in fields if f is not None]
    if not wanted:
        return
    own = {f.observed for f in wanted}
    pool = [s for s in profile.paths.values() if s.types and set(s.types) != {"object"} and not s.path.endswith("[*]")
            and s.path.count("[*]") <= 1
            and (not contract.reads(endpoint, s.path, set(s.types)) or s.path in own)]
    # each candidate's values read once, for every field; its example (the most frequent value) taken from them
    plain = [s.path for s in pool if set(s.types) != {"array"} and "[*]" not in s.path]
    counts = profiler.value_counts_of(plain)
    counts.update({s.path: profiler.element_counts(s.path) for s in pool if "[*]" in s.path})
    values = {path: {json.loads(k): n for k, n in texts.items()} for path, texts in counts.items()}
    arrays = {s.path.split("[*]", 1)[0] for s in pool if "[*]" in s.path}
    longest = {a: profiler.longest_array(a) for a in arrays}
    for s in pool:
        if s.path in values:
            s.example = _example(values[s.path])
        elif set(s.types) == {"array"}:
            element = values.get(s.path + "[*]") or profiler.element_counts(s.path + "[*]")
            s.example = next(iter(element), None)
    scored: list[tuple[float, str, str, _Fit]] = []
    refused: dict[str, list[tuple[float, str, str]]] = {}
    for spec in wanted:
        for stats in pool:
            path = _read_at(spec, stats.path, longest, spec.nullable)
            element = profile.paths.get(stats.path + "[*]")
            fit = (path[1:] if path.startswith("!") else
                   _fit(spec, stats, values.get(stats.path, {}), path, element.types if element else {}))
            if isinstance(fit, str):
                refused.setdefault(spec.name, []).append((_name_score(spec, stats.path), stats.path, fit))
                continue
            fit.score = _score(spec, stats, stats.example, fit)
            if fit.score < 0:
                refused.setdefault(spec.name, []).append(
                    (_name_score(spec, stats.path), stats.path, f"its values look like {_pattern(stats.example)}, "
                                                                f"the field's like {_expected(spec)[0]}"))
                continue
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
        out.assignments.append(Assignment(endpoint, spec, fit.path, fit.updates, score, fit.note, ties))
    for spec in wanted:
        if spec.name not in taken_fields:
            near = sorted(refused.get(spec.name, []), key=lambda t: (-t[0], t[1]))
            why = (f"the closest, {near[0][1]}, was refused: {near[0][2]}" if near
                   else "no path the vendor sends is left")
            out.unmatched.append((endpoint, spec, why))
