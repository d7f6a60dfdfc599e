"""The order in which ``make test``'s xdist workers are handed the tests' work units (``tests/conftest.py``
applies it at collection)."""

from __future__ import annotations

HEAVY_KINDS = (("spark", "cluster"), ("browser", "daemon", "postgres"), ("slow", "e2e"))
"""Marker sets of the work units that start first: Spark (a JVM, the longest and the most CPU), interleaved
with those that start a browser, a daemon or a server (long, mostly waiting); then whole runs and commands in
subprocesses; then the rest."""


def heaviest_first(items: list) -> list:
    """``items`` with the heaviest work units first, each unit's tests together and in their own order.

    A unit is what one xdist worker takes whole (``make test``: ``--dist loadgroup``): an ``xdist_group``,
    or a module's test. xdist hands out units in this order as workers free up, so the long ones start while
    every worker is busy and the short ones fill in at the end (the longest-first rule), instead of one long
    unit starting last and running alone. The Spark units alternate with the browser, daemon and server
    units, so that two of the first four workers run Spark, not all four (four JVM builds at once on two
    cores took each about 2.5 times as long). ``make test`` passes ``--no-loadscope-reorder``: xdist would
    otherwise order the units by their number of tests."""
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
    tiers: list[list[str]] = [[] for _ in range(len(HEAVY_KINDS) + 1)]
    for u, found in marks.items():
        tiers[next((i for i, kinds in enumerate(HEAVY_KINDS) if found & set(kinds)), len(HEAVY_KINDS))].append(u)
    spark, waiting = tiers[0], tiers[1]
    alternated = [u for pair in zip(spark, waiting, strict=False) for u in pair]
    alternated += spark[len(waiting):] + waiting[len(spark):]
    return [item for u in alternated + [u for tier in tiers[2:] for u in tier] for item in units[u]]
