"""The Python-side reading of a keyword record's fields, by their names in the vendor's contract.

Each function takes the contract as :class:`RecordFields` (anything with its ``value`` method) and reads
``keyword``, ``search_engine``, ``device``, ``location_code`` or ``language_code`` of ``keywords``; lookups
default ``search_engine`` to ``google`` (spec "GET /v1/locations: query").
Design: docs/concepts/api-client.md, "Reading a record's fields".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["SEARCH_ENGINES", "RecordFields", "keyword_combination", "keyword_location_code", "keyword_search_engines"]

SEARCH_ENGINES: tuple[str, ...] = ("google", "bing", "yahoo")
"""Engines named by the lookup endpoints (spec, "What the service does")."""


class RecordFields(Protocol):
    """The vendor's contract as a reader of records (:meth:`rank_pipeline.transform.contract.Contract.value`)."""

    def value(self, endpoint: str, name: str, attributes: Mapping[str, Any]) -> Any:
        """The decoded value of the field ``name`` of an ``endpoint`` record's ``attributes``, None when absent."""
        ...


_SCALARS = (str, int, float, bool, type(None))
_MEMO: dict[tuple[int, type, Any], tuple[Any, str | None]] = {}
_MEMO_MAX = 100_000


def _read_text(fields: RecordFields, name: str, attributes: Mapping[str, Any]) -> str | None:
    value = fields.value("keywords", name, attributes)
    if value is None or isinstance(value, Mapping | list) or str(value).strip() == "":
        return None
    return str(value)


def _text(fields: RecordFields, name: str, attributes: Mapping[str, Any]) -> str | None:
    """The field ``name`` as text (None: absent, empty or not a scalar), remembered per value as sent when
    ``fields`` locates values (the contract's ``named(...).locate``): the decoding depends on that value
    alone, and a day's keywords repeat a few engines and locations many times."""
    named = getattr(fields, "named", None)
    if named is None:
        return _read_text(fields, name, attributes)
    spec = named("keywords", name)
    sent = spec.locate(attributes)[1]
    if type(sent) not in _SCALARS:
        return _read_text(fields, name, attributes)
    key = (id(spec), type(sent), sent)
    found = _MEMO.get(key)
    if found is not None and found[0] is spec:
        return found[1]
    text = _read_text(fields, name, attributes)
    if len(_MEMO) < _MEMO_MAX:
        _MEMO[key] = (spec, text)  # the field held: its id is not reused while remembered
    return text


def keyword_location_code(attributes: Mapping[str, Any], fields: RecordFields) -> str | None:
    """The keyword's ``location_code`` (the geo-target id, shown in the spec), as a string, or None."""
    return _text(fields, "location_code", attributes)


def keyword_search_engines(attributes: Mapping[str, Any], fields: RecordFields) -> tuple[str, ...]:
    """The engine(s) whose location catalogue holds this keyword's location row: its ``search_engine`` (not
    shown in the spec) when it names a known engine; otherwise every engine, so a record the contract does
    not read costs a few more lookup requests but loses no reference row."""
    engine = _text(fields, "search_engine", attributes)
    if engine is not None and engine.strip().lower() in SEARCH_ENGINES:
        return (engine.strip().lower(),)
    return SEARCH_ENGINES


def keyword_combination(attributes: Mapping[str, Any], fields: RecordFields) -> tuple[str, str, str, str, str] | None:
    """The combination a keyword record tracks, ``(word, engine, device, location code, language code)``, read by
    the contract's names and normalised as keyword create does (spec "Keyword create: body"); None when a part
    is missing, so an unreadable record is never taken for a wanted keyword.
    """
    word, engine, device, location, language = (
        _text(fields, name, attributes)
        for name in ("keyword", "search_engine", "device", "location_code", "language_code"))
    if word is None or engine is None or device is None or location is None or language is None:
        return None
    return (word.strip(), engine.strip().lower(), device.strip().lower(), location, language.strip().lower())
