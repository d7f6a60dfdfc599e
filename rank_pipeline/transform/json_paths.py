"""The contract's path grammar: dotted keys, a key optionally followed by ``[N]``, ``[?key=value]`` or ``[*]``;
:func:`locate` finds one in a record, absent or null (docs/reference/vendor-contract.md, "Paths").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ABSENT", "Step", "locate", "observed_path", "parse_path"]

_KEY = r"[A-Za-z_][\w-]*"
_STEP = re.compile(rf"({_KEY})(?:\[(?:(\d+)|(\*)|\?({_KEY})=([^\]\[]+))\])?")
_PATH = re.compile(rf"{_STEP.pattern}(?:\.{_STEP.pattern})*")


@dataclass(frozen=True)
class Step:
    """One key of a contract path and its selector: ``key``, ``index`` (``[N]``, 0-based), ``match``
    (``[?key=value]`` as ``(key, value)``) or ``every`` (``[*]``).
    """

    key: str
    index: int | None = None
    match: tuple[str, str] | None = None
    every: bool = False

    @property
    def selects(self) -> bool:
        """Whether the key holds an array an element of which is taken (``[N]``, ``[?k=v]``, ``[*]``)."""
        return self.index is not None or self.match is not None or self.every

    @property
    def observed(self) -> str:
        """The key as a profile names it: ``serp[*]`` for any selector (:mod:`rank_pipeline.shape.profile`)."""
        return self.key + ("[*]" if self.selects else "")


def parse_path(path: str) -> tuple[Step, ...]:
    """The steps of a contract path (``results.serp[0].rank`` -> results, serp[0], rank).
    Raises ValueError: not a path of the grammar.
    """
    if not _PATH.fullmatch(path):
        raise ValueError(f"path {path!r}: dotted keys, each optionally followed by [N], [?key=value] or [*]")
    steps = []
    for part in _split(path):
        m = _STEP.fullmatch(part)
        assert m is not None  # the whole path matched
        key, index, every, match_key, match_value = m.groups()
        steps.append(Step(key, int(index) if index is not None else None,
                          (match_key, match_value) if match_key else None, every is not None))
    return tuple(steps)


def _split(path: str) -> list[str]:
    """``path`` split at its dots outside ``[...]`` (a matched value may hold a dot)."""
    parts, depth, current = [], 0, ""
    for char in path:
        depth += char == "["
        depth -= char == "]"
        if char == "." and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def observed_path(steps: tuple[Step, ...]) -> str:
    """The path a profile gives the value at ``steps`` (``results.serp[*].rank``)."""
    return ".".join(s.observed for s in steps)


ABSENT = object()
"""What :meth:`ContractField.locate_in` is given for a record without the keys to the array."""


_NO_MATCH = object()


def locate(steps: tuple[Step, ...], node: Any) -> tuple[bool, Any]:
    """``(present, value)`` at ``steps`` below ``node`` (module doc; ``[*]``: the list of each element's value,
    None where an element lacks it)."""
    for i, step in enumerate(steps):
        if not isinstance(node, Mapping) or step.key not in node:
            return False, None
        node = node[step.key]
        if not step.selects:
            continue
        if not isinstance(node, list):
            return False, None  # another type where an array is read: reported as the type change
        if step.every:
            return True, [locate(steps[i + 1:], element)[1] for element in node]
        if step.index is not None:
            if step.index >= len(node):
                return True, None
            node = node[step.index]
        else:
            assert step.match is not None
            key, wanted = step.match
            node = next((e for e in node if isinstance(e, Mapping) and _as_text(e.get(key)) == wanted), _NO_MATCH)
            if node is _NO_MATCH:
                return True, None
    return True, node


def _as_text(value: Any) -> str | None:
    """A scalar as text, as the generated SQL compares it (``true``, ``3``, ``2.5``); None for others."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, str | int | float) else None
