"""Whether an observed path's values fit a contracted field, read how, and a 0..1 score, or why not: the
candidates of a remap and of the check's lines (docs/concepts/shape-check.md, "Whether a path fits a field").
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rank_pipeline.shape.profile import EndpointProfile, PathStats, Profiler
from rank_pipeline.transform.contract import ContractField, Encoding
from rank_pipeline.transform.timestamps import EPOCH_MILLISECONDS, EPOCH_SECONDS, ISO8601

__all__ = ["MAX_SENTINELS", "TEXT_FORMATS", "Fit", "expected", "fit", "name_score", "pattern", "read_at", "score", "example",
           "Observed", "observe"]

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


def pattern(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    return next((name for name, regex in _PATTERNS if regex.match(value)), None)


def _words(text: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    words = {w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if len(w) > 1}
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words}


def expected(spec: ContractField) -> tuple[str | None, set[str]]:
    """The pattern a field's values should have, and the values its description lists (``(google, bing)``)."""
    shapes = {pattern(e) for e in spec.examples} - {None}
    text = spec.description.lower()
    cue = next((shape for word, shape in _CUES if word in text), None)
    listed = re.search(r"\(([^()]*,[^()]*)\)", spec.description)
    known = {v.strip().lower() for v in listed.group(1).split(",") if v.strip() and "..." not in v} if listed else set()
    return (next(iter(shapes)) if len(shapes) == 1 else cue), known


@dataclass
class Fit:
    """A candidate that fits a field: the path to write, the entry's keys to set (``encoding``, ``values``,
    ``fold_case``), its score and a note on its values."""

    path: str
    score: float
    updates: dict
    note: str


TEXT_FORMATS = ("%d/%m/%Y %H:%M:%S", "%m/%d/%Y %H:%M:%S", "%d.%m.%Y %H:%M:%S", "%d-%m-%Y %H:%M:%S",
                 "%Y/%m/%d %H:%M:%S", "%d/%m/%Y %H:%M", "%m/%d/%Y %H:%M", "%d.%m.%Y %H:%M", "%Y/%m/%d %H:%M",
                 "%Y%m%d%H%M%S", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%Y/%m/%d", "%Y%m%d")
"""The ``strptime`` formats a timestamp sent as text is tried in (ISO 8601 first, as ``iso8601``)."""
_EPOCHS = ((EPOCH_SECONDS, 1e8, 1e10), (EPOCH_MILLISECONDS, 1e11, 1e13))
"""Epoch formats and the range of their values (1973 to 2286)."""
TRUE_WORDS = {"yes", "y", "true", "1", "on", "t"}
FALSE_WORDS = {"no", "n", "false", "0", "off", "f"}


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
    for fmt in (ISO8601, *TEXT_FORMATS):
        probe = spec.model_copy(update={"encoding": Encoding(timestamp_format=fmt), "values": None})
        if all(probe.decode(v)[0] for v in values):
            return ({} if fmt == ISO8601 else {"timestamp_format": fmt}), f"read as {fmt}"
    return None


def _known_values(spec: ContractField) -> list[str]:
    """Our values of an enum field: its ``values`` (a map's values), else those its description lists."""
    if spec.values is not None:
        return list(dict.fromkeys(str(v) for v in (spec.values.values() if isinstance(spec.values, dict)
                                                    else spec.values)))
    return sorted(expected(spec)[1])


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
    flags = {v: (str(v).lower() in TRUE_WORDS) if str(v).lower() in TRUE_WORDS | FALSE_WORDS else None for v in sent}
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


def fit(spec: ContractField, stats: PathStats, values: Mapping[Any, int], path: str,
         element_types: Mapping[str, int]) -> Fit | str:
    """How ``stats`` (an observed path, ``{value: records}`` of its values, most frequent first, and the types
    of its elements when it is an array) fits ``spec`` when read at ``path``: a :class:`Fit`, or why it does
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
    return Fit(path, 0.0, updates, note)


def _sample(values: Mapping[Any, int]) -> str:
    shown = [json.dumps(v) for v in list(values)[:2]]
    return "its values " + ", ".join(shown) + (" ..." if len(values) > 2 else "")


def example(values: Mapping[Any, int]) -> object:
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


def name_score(spec: ContractField, path: str) -> float:
    """How alike a candidate's path is to the field's path and name, 0..1 (docs/concepts/shape-check.md,
    "Whether a path fits a field")."""
    target, seen = _words(spec.path) | _words(spec.name), _words(path)
    overlap = len(target & seen) / len(seen) if seen else 0.0
    last = difflib.SequenceMatcher(None, _last(spec.path), _last(path)).ratio()
    return max(overlap, last if last >= 0.6 else 0.0)


def _last(path: str) -> str:
    return re.sub(r"\[[^\]]*\]", "", path.rsplit(".", 1)[-1]).lower()


def score(spec: ContractField, stats: PathStats, example: object, fit: Fit) -> float:
    shape, known = expected(spec)
    observed = pattern(example)
    value = 1.0 if known and isinstance(example, str) and example.lower() in known else (
        1.0 if shape is not None and observed == shape else 0.0)
    if spec.type == "timestamp" or "values" in fit.updates:
        value = 1.0  # every value decodes as a timestamp, or maps one to one to the field's values
    elif shape is not None and observed is not None and observed != shape:
        value = -0.5
    seen = _words(stats.path)
    described = len(_words(spec.description) & seen) / len(seen) if seen else 0.0
    return round(0.5 * value + 0.33 * name_score(spec, stats.path) + 0.17 * described, 3)


def read_at(spec: ContractField, observed: str, longest: Mapping[str, int], nullable_ok: bool) -> str:
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




@dataclass
class Observed:
    """The candidates of an endpoint's day and what judging them needs: the observed leaf paths (``pool``),
    ``{path: {value: records}}`` of their values (through arrays: every element's), the most elements each
    array on the way holds in one record (``longest``), and the profile (its ``[*]`` paths give an array's
    element types)."""

    pool: list[PathStats]
    values: dict[str, dict[Any, int]]
    longest: dict[str, int]
    profile: EndpointProfile

    def fits(self, spec: ContractField, stats: PathStats) -> Fit | str:
        """How ``stats`` fits ``spec`` (:func:`fit`, read at :func:`read_at`'s path), or why it does not."""
        path = read_at(spec, stats.path, self.longest, spec.nullable)
        if path.startswith("!"):
            return path[1:]
        element = self.profile.paths.get(stats.path + "[*]")
        return fit(spec, stats, self.values.get(stats.path, {}), path, element.types if element else {})


def observe(profiler: Profiler, profile: EndpointProfile, pool: list[PathStats]) -> Observed:
    """Read the values of ``pool`` (leaf paths of ``profile``, at most one ``[*]`` each) in one pass, and the
    longest arrays on their way; each path's ``example`` is set to its most frequent value."""
    plain = [s.path for s in pool if set(s.types) != {"array"} and "[*]" not in s.path]
    counts = profiler.value_counts_of(plain)
    arrays = [s.path for s in pool if set(s.types) == {"array"}]
    counts.update(profiler.element_counts_of([s.path for s in pool if "[*]" in s.path] + arrays))
    values = {path: {_hashable(k): n for k, n in texts.items()} for path, texts in counts.items()}
    longest = profiler.longest_arrays(sorted({s.path.split("[*]", 1)[0] for s in pool if "[*]" in s.path}))
    for s in pool:
        if s.path in values:
            s.example = example(values[s.path])
    return Observed(pool, values, longest, profile)


def _hashable(text: str) -> Any:
    """A value's JSON text parsed, an array or an object kept as its text (a path of mixed types)."""
    value = json.loads(text)
    return text if isinstance(value, list | dict) else value
