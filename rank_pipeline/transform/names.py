"""Default names of data tests, short and stable because each becomes a Dagster asset check
(``not_null_<col>``, ``unique_<col>``, ``accepted_<col>``, ``<col>_in_<table>``, ``unique_<columns>``, the
expression in words; at most 48 characters, no hash). Table: docs/concepts/models.md, "Test names".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_NAME_LENGTH", "default_test_name", "slug"]

MAX_NAME_LENGTH = 48

_OPERATOR_WORDS = (("<>", " ne "), ("!=", " ne "), (">=", " ge "), ("<=", " le "), ("=", " eq "),
                   (">", " gt "), ("<", " lt "), ("+", " plus "), ("-", " minus "), ("*", " times "), ("/", " div "))


def slug(text: str, limit: int = MAX_NAME_LENGTH) -> str:
    """``ctr > 0 and ctr <= 1`` -> ``ctr_gt_0_and_ctr_le_1``, cut at a ``_`` boundary within ``limit``."""
    words = text.lower()
    for op, word in _OPERATOR_WORDS:
        words = words.replace(op, word)
    out = re.sub(r"[^a-z0-9]+", "_", words).strip("_") or "x"
    if len(out) > limit:
        cut = out[: limit + 1]
        out = cut[: cut.rfind("_")] if "_" in cut[1:] else out[:limit]
        out = re.sub(r"(_(and|or|not|is|the))+$", "", out)
    return out.strip("_")


def _short(column: str) -> str:
    if column == "snapshot_date":
        return "day"
    return column[:-3] if column.endswith("_id") and len(column) > 3 else column


def default_test_name(kind: str, column: str | None, params: Mapping[str, Any]) -> str:
    """The name of a test given without ``name:`` (docs/concepts/models.md, "Test names")."""
    if kind in ("not_null", "unique"):
        name = f"{kind}_{column}"
    elif kind == "accepted_values":
        name = f"accepted_{column}"
    elif kind == "relationships":
        name = f"{column}_in_{str(params['to']).split('.', 1)[-1]}"
    elif kind == "unique_combination":
        name = "unique_" + "_".join(_short(c) for c in params["columns"])
        if len(name) > MAX_NAME_LENGTH:
            name = "unique_grain"
    else:
        name = slug(str(params["expression"]))
    return re.sub(r"[^A-Za-z0-9_]", "_", name)
