"""The sandbox's assumptions: every value and shape that the spec marks "not shown".

The spec (``shared/spec/rank-tracking-api.md``) is the only document about the vendor API. Where it
says "not shown", the sandbox still has to answer something, so it picks one behaviour here, in one
module, and documents it. The pipeline must not depend on these being right: it keeps every record's
full ``attributes`` JSON and reads invented fields only through the staging SQL models
(``dbt_like_sql/staging``), so meeting the real vendor's shape is a one-place change there.

Constants
---------
FREQUENCIES
    Allowed ``frequency`` values of keyword create ("allowed values: not shown").
DEVICES
    Allowed ``search_engines[].device`` values (spec: ``desktop`` is a value; others not shown).
MATCH_TYPES
    Allowed domain ``matchType`` values (spec: ``any`` is a value; others not shown).
SEARCH_ENGINES
    The engines named by the lookup endpoints (spec, "What the service does").
"""

from __future__ import annotations

FREQUENCIES: tuple[str, ...] = ("daily", "weekly", "monthly")
DEVICES: tuple[str, ...] = ("desktop", "mobile")
MATCH_TYPES: tuple[str, ...] = ("any", "domain", "host", "url")
SEARCH_ENGINES: tuple[str, ...] = ("google", "bing", "yahoo")
