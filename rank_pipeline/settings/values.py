"""What every settings module shares: :class:`ConfigurationError` and the reader of a bounded number."""

from __future__ import annotations

import math
from collections.abc import Mapping

from rank_pipeline.errors import EXIT_USAGE, RankPipelineError

__all__ = ["ConfigurationError"]


class ConfigurationError(RankPipelineError, ValueError):
    """A setting is missing or malformed; the message says which variable and what to set (exit 2)."""

    __module__ = "rank_pipeline.settings"  # its public name, as the exit-statuses page lists it (re-exported there)
    exit_status = EXIT_USAGE


def _number(env: Mapping[str, str], name: str, default: float, kind: type, low: float, high: float) -> float:
    """The variable ``name`` as ``kind`` (int or float) within ``[low, high]``, or ``default`` when unset."""
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    what = "a whole number" if kind is int else "a number"
    try:
        value = kind(raw.strip())
    except ValueError:
        raise ConfigurationError(
            f"{name}={raw!r} is not {what}; set it between {low:g} and {high:g} or unset it (default {default:g})"
        ) from None
    if not math.isfinite(value) or not low <= value <= high:
        raise ConfigurationError(
            f"{name}={raw!r} is out of range; set it between {low:g} and {high:g} or unset it (default {default:g})"
        )
    return value
