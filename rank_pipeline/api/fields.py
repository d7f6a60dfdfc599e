"""The pipeline's Python-side reading of record fields the spec marks "not shown".

The staging SQL models (``dbt_like_sql/staging``) are where the warehouse reads invented fields. The
extractor needs exactly one such field in Python, to know which search engine's catalogue to ask for a
keyword's location row (the ``locations`` and ``languages`` declarations in :mod:`rank_pipeline.api.endpoints`
derive their requests from a keyword with these functions); it lives here, beside its fallback, so
meeting the vendor's real shape is a change in this file and in staging SQL only.

Spec facts used: a keyword "reads back with a ``location`` object whose ``code`` is the geo-target id";
the lookup endpoints take ``search_engine`` in ``google``, ``bing``, ``yahoo`` (default ``google``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SEARCH_ENGINES: tuple[str, ...] = ("google", "bing", "yahoo")
"""Engines named by the lookup endpoints (spec, "What the service does")."""


def keyword_location_code(attributes: Mapping[str, Any]) -> str | None:
    """``attributes.location.code`` of a keyword record (shown in the spec), as a string, or None."""
    location = attributes.get("location")
    if isinstance(location, Mapping) and location.get("code") not in (None, ""):
        return str(location["code"])
    return None


def keyword_search_engines(attributes: Mapping[str, Any]) -> tuple[str, ...]:
    """The engine(s) whose location catalogue holds this keyword's location row.

    Not shown in the spec. Reads the sandbox's assumed ``attributes.searchEngine`` (a string) when it
    names a known engine; otherwise every engine, so a different vendor shape costs a few more lookup
    requests but loses no reference row.
    """
    engine = attributes.get("searchEngine")
    if isinstance(engine, Mapping):
        engine = engine.get("name")
    if isinstance(engine, str) and engine.strip().lower() in SEARCH_ENGINES:
        return (engine.strip().lower(),)
    return SEARCH_ENGINES


def keyword_combination(attributes: Mapping[str, Any]) -> tuple[str, str, str, str, str] | None:
    """The combination a keyword record tracks: ``(word, engine, device, location code, language code)``.

    Only ``location.code`` is shown in the spec; the word, engine, device and language are read from
    the sandbox's assumed ``attributes.keyword``, ``searchEngine``, ``device`` and ``language.code``
    (the same fields ``staging.stg_keywords`` reads). Engine, device and language are lower-cased and
    the word trimmed, as keyword create normalises them (spec, "Keyword create: body"). None when a
    part is missing, so an unreadable record is never taken for a wanted keyword.
    """
    # Any, not Any | None: each is checked to be a non-blank str before it is used
    word: Any = attributes.get("keyword")
    engine: Any = attributes.get("searchEngine")
    device: Any = attributes.get("device")
    language: Any = attributes.get("language")
    language = language.get("code") if isinstance(language, Mapping) else language
    location = keyword_location_code(attributes)
    parts = (word, engine, device, language)
    if location is None or not all(isinstance(p, str) and p.strip() for p in parts):
        return None
    return (word.strip(), engine.strip().lower(), device.strip().lower(), location, language.strip().lower())
