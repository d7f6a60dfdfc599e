"""The order in which ``make test``'s xdist workers are handed the tests' work units (``tests/conftest.py``
applies it at collection)."""

from __future__ import annotations

HEAVY_KINDS = (("spark", "cluster"), ("browser", "daemon", "postgres"), ("slow", "e2e"))
"""Marker sets of the work units that start first, in this order: Spark (a JVM, the longest); a browser, a
daemon or a server; whole runs and commands in subprocesses; then the rest."""


def heaviest_first(items: list) -> list:
    """``items`` with the heaviest work units first, each unit's tests in their own order.

    A unit is what one xdist worker takes whole (``make test``: ``--dist loadgroup``): an ``xdist_group``,
    or a module's test. xdist hands out units in this order as workers free up, so the long ones start while
    every worker is busy and the short ones fill in at the end (the longest-first rule), instead of one long
    unit starting last and running alone). ``make test`` passes ``--no-loadscope-reorder``: xdist would
    otherwise order the units by their number of tests."""
    def unit(item) -> str:
        group = item.get_closest_marker("xdist_group")
        if group is not None:
            return str(group.kwargs.get("name") or group.args[0])
        return item.nodeid

    marks: dict[str, set[str]] = {}
    for item in items:
        marks.setdefault(unit(item), set()).update(m.name for m in item.iter_markers())
    rank = {u: next((i for i, kinds in enumerate(HEAVY_KINDS) if found & set(kinds)), len(HEAVY_KINDS))
            for u, found in marks.items()}
    order = {id(item): i for i, item in enumerate(items)}
    return sorted(items, key=lambda item: (rank[unit(item)], order[id(item)]))
