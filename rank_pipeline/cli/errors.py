"""The command line's own failures: bad input found after parsing (exit 2) and a failed run (exit 1)."""

from __future__ import annotations


class UsageError(Exception):
    """Bad command-line input found after parsing (exit status 2)."""


class RunFailed(Exception):
    """A run failed (exit status 1); the message is the one line to print."""


def first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else text
