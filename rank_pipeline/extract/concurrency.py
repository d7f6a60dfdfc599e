"""Structured concurrency for the pipeline's fan-outs (:class:`asyncio.TaskGroup`, Python 3.11+).

:func:`run_all` replaces ``asyncio.gather``: the coroutines run as sibling tasks of one task group, so
the first failure cancels the siblings and waits for them to end before the caller goes on (for
example, before the HTTP clients close); and the failure is raised as itself, not as an exception
group, so callers keep catching ``RankTrackerError`` subclasses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

__all__ = ["run_all"]

T = TypeVar("T")


async def run_all(coroutines: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run ``coroutines`` concurrently; return their results in order.

    Raises:
        The first failure (the first leaf of the task group's exception group), after every sibling
        task was cancelled and has ended.
    """
    tasks: list[asyncio.Task[T]] = []
    try:
        async with asyncio.TaskGroup() as group:
            for coroutine in coroutines:
                tasks.append(group.create_task(coroutine))
    except BaseExceptionGroup as group_error:
        first: BaseException = group_error
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    return [task.result() for task in tasks]
