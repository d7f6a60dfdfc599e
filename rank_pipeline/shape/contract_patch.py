"""A remap written as a patch of the contract's text: each field's flow mapping (``{name: ..., path: ...}``)
edited in place, its ``path`` set (quoted when it holds ``[`` or ``]``) and any ``encoding``, ``values`` or
``fold_case`` set or replaced, so the rest of the file (comments, order, layout) stays as the user wrote it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from rank_pipeline.shape.fitting import FALSE_WORDS, TRUE_WORDS

__all__ = ["edited_contract", "flow"]


def edited_contract(text: str, edits: list[tuple[str, str, str, Mapping[str, object]]]) -> str:
    """``text`` (the contract) with each ``(endpoint, field name, new path, {key: value})`` of ``edits`` applied;
    a field not found is left as it is."""
    for endpoint, name, path, updates in edits:
        span = _entry(text, endpoint, name)
        if span is not None:
            start, end = span
            text = text[:start] + _edited(text[start:end], path, updates) + text[end:]
    return text


def flow(value: object) -> str:
    """``value`` as YAML flow text (a key or text JSON-quoted, so ``"yes"`` stays text)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {flow(v)}" if not isinstance(k, str) or k in _QUOTE or
                               not re.fullmatch(r"[a-z_]+", k) else f"{k}: {flow(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return json.dumps(value)


_QUOTE = TRUE_WORDS | FALSE_WORDS | {"null", "~"}


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


def _edited(entry: str, path: str, updates: Mapping[str, object]) -> str:
    """The flow mapping ``entry`` with ``path`` and ``updates`` set (a key present is replaced)."""
    entry = re.sub(r"(, path: )(\"[^\"]*\"|[^,]*)(,)", lambda m: f"{m.group(1)}{_scalar(path)}{m.group(3)}",
                   entry, count=1)
    for key, value in updates.items():
        present = re.search(rf"\b{key}: ", entry)
        if present is not None:
            value_start = present.end()
            value_end = _value_end(entry, value_start)
            entry = entry[:value_start] + flow(value) + entry[value_end:]
        else:
            at = entry.index(", shown: ")
            entry = entry[:at] + f", {key}: {flow(value)}" + entry[at:]
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


