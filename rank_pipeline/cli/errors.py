"""The command line's own failures: bad input found after parsing (exit 2) and a failed run (exit 1)."""

from __future__ import annotations

from rank_pipeline.errors import EXIT_USAGE, RankPipelineError

__all__ = ["RunFailed", "UsageError"]


class UsageError(RankPipelineError):
    """Bad command-line input found after parsing (exit status 2)."""

    exit_status = EXIT_USAGE


class RunFailed(RankPipelineError):
    """A run failed (exit status 1); the message is the one line to print (the detail is in the log)."""
