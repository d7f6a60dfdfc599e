"""Why a Dagster run or step failed, told in one line: the innermost error, its message without its class name,
whether a check evaluation was blocking, and the data folder's lock timeout that failed a run.

Shared by the command line's last line, the alert digests and ``ops.run_history.failure_reason``.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

__all__ = ["error_line", "innermost_error", "is_blocking", "lock_timeout_message"]

def innermost_error(error: Any) -> Any:
    """The innermost cause of a Dagster ``SerializableErrorInfo`` (``error.cause`` followed to its end)."""
    while error is not None and getattr(error, "cause", None) is not None:
        error = error.cause
    return error


def is_blocking(evaluation: Any) -> bool:
    """Whether a Dagster asset check evaluation (``AssetCheckEvaluation``) came from a blocking check: its own
    ``blocking`` flag, or, for evaluations stored before Dagster recorded it, severity ERROR."""
    import dagster as dg

    if evaluation.blocking is not None:
        return bool(evaluation.blocking)
    return evaluation.severity == dg.AssetCheckSeverity.ERROR


def error_line(error: Any, *, whole: bool = False) -> str:
    """Why a step or run failed, on one line: the innermost error's message without its class (``whole``: every
    line joined; ``"failed"`` without a message), for the command line, the digests and ``failure_reason``.
    """
    error = innermost_error(error)
    message = (getattr(error, "message", "") or "").strip()
    text = " ".join(message.split()) if whole else (message.splitlines()[0] if message else "")
    cls_name = getattr(error, "cls_name", None)
    if cls_name and f"{cls_name}: " in text[:200]:
        text = text.split(f"{cls_name}: ", 1)[1]
    return text or "failed"


def lock_timeout_message(result: dg.ExecuteInProcessResult) -> str | None:
    """The one-line :class:`rank_pipeline.folder_lock.LockTimeout` message that failed ``result``, if any."""
    for event in result.all_events:
        if event.event_type not in (dg.DagsterEventType.RESOURCE_INIT_FAILURE, dg.DagsterEventType.STEP_FAILURE):
            continue
        error = getattr(event.event_specific_data, "error", None)
        while error is not None:
            if error.cls_name == "LockTimeout":
                return error.message.split(": ", 1)[-1].strip()
            error = error.cause
    return None
