"""The order in which ``make test``'s xdist workers are handed the tests' work units (``tests/conftest.py``
applies it at collection)."""

from __future__ import annotations

HEAVY_KINDS = (("spark", "cluster"), ("browser", "daemon", "postgres"), ("slow", "e2e"))
"""Marker sets of the work units that start first, in this order: Spark (a JVM, the longest and the most CPU);
a browser, a daemon or a server (long, mostly waiting); whole runs and commands in subprocesses; then the rest."""


def heaviest_first(items: list) -> list:
    """``items`` with the heaviest work units first, each unit's tests together and in their own order.

    A unit is what one xdist worker takes whole (``make test``: ``--dist loadgroup``): an ``xdist_group``,
    or a module's test. The units go by :data:`HEAVY_KINDS`, and within one kind the units of more tests
    first. xdist hands them out in this order as workers free up (two each at the start), so the longest
    ones start at once on workers of their own and the short ones fill in at the end (the longest-first
    rule), instead of a long unit starting late and running alone: the ``spark`` group (the equality
    module, the doors and the cluster, over ten minutes under load) queued behind the any-order Spark test
    on one worker made that worker the whole run's length. ``make test`` passes ``--no-loadscope-reorder``:
    xdist would otherwise order every unit by its number of tests, whatever its kind."""
    def unit(item) -> str:
        group = item.get_closest_marker("xdist_group")
        if group is not None:
            return str(group.kwargs.get("name") or group.args[0])
        return item.nodeid

    units: dict[str, list] = {}
    marks: dict[str, set[str]] = {}
    for item in items:
        units.setdefault(unit(item), []).append(item)
        marks.setdefault(unit(item), set()).update(m.name for m in item.iter_markers())

    def kind(u: str) -> int:
        return next((i for i, kinds in enumerate(HEAVY_KINDS) if marks[u] & set(kinds)), len(HEAVY_KINDS))

    ordered = sorted(units, key=lambda u: (kind(u), -len(units[u])))  # stable: ties keep collection order
    return [item for u in ordered for item in units[u]]
