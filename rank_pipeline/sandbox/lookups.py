"""``GET /v1/locations`` and ``GET /v1/languages`` (spec "GET /v1/locations: query", "GET /v1/languages:
query"): ``routes``, the rules as :func:`query_locations` and :func:`query_languages` (422:
:class:`LookupQueryError`), and the error helpers keyword create shares (docs/concepts/sandbox.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import pycountry
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from rank_pipeline.errors import RankPipelineError
from rank_pipeline.sandbox import catalogues
from rank_pipeline.sandbox.assumptions import language_row, location_row

__all__ = [
    "DOCS_URL",
    "META_VALUE_MAX_CHARS",
    "Q_MAX_CHARS",
    "Q_MIN_CHARS",
    "LookupQueryError",
    "errors_response",
    "languages_lookup_path",
    "list_languages",
    "list_locations",
    "locations_lookup_path",
    "meta_value",
    "query_languages",
    "query_locations",
    "routes",
]

DOCS_URL = "https://docs.example.com/rank-tracking/reference-values"
"""``meta.docs`` of every ``invalid_reference_value`` entry: the reference-values guide (sandbox
assumption; the spec writes it as ``{docs_url}``)."""

META_VALUE_MAX_CHARS = 100
"""``meta.value`` echoes at most this many characters (spec, "Limits": truncated beyond 100)."""
Q_MIN_CHARS = 2
"""Shortest accepted ``q`` on ``GET /v1/locations`` (spec, "Limits")."""
Q_MAX_CHARS = 100
"""Longest accepted ``q`` on ``GET /v1/locations`` (spec, "Limits")."""

_LOCATION_PARAMS = ("search_engine", "country", "variant", "code", "q")
_LANGUAGE_PARAMS = ("search_engine", "q")
_ISO_ALPHA2 = frozenset(c.alpha_2 for c in pycountry.countries)


class LookupQueryError(RankPipelineError):
    """A lookup query broke one or more rules: ``errors`` holds the spec's 422 entries (``status``, ``code``,
    ``title``, ``detail``, ``source.pointer``, ``meta``) in the order the parameters are checked.
    """

    def __init__(self, errors: list[dict]):
        super().__init__("; ".join(e["detail"] for e in errors))
        self.errors = errors
        self.status = 422


def meta_value(value: Any) -> str | None:
    """The ``meta.value`` echo of a sent value (spec "invalid_reference_value"), cut to
    :data:`META_VALUE_MAX_CHARS` characters: None stays None, a string itself, an integer its digits,
    anything else its compact JSON.
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value
    elif isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text[:META_VALUE_MAX_CHARS]


def locations_lookup_path(search_engine: str, q: str | None = None) -> str:
    """A query path for the locations endpoint, e.g. ``/v1/locations?search_engine=google&q=Paris``.

    Used as ``meta.lookup`` (spec, "invalid_reference_value"); values are percent-encoded.
    """
    params = {"search_engine": search_engine}
    if q is not None:
        params["q"] = q
    return "/v1/locations?" + urlencode(params, quote_via=quote)


def languages_lookup_path(search_engine: str) -> str:
    """A query path for the languages endpoint, e.g. ``/v1/languages?search_engine=bing``."""
    return "/v1/languages?" + urlencode({"search_engine": search_engine}, quote_via=quote)


def errors_response(status: int, errors: list[dict]) -> JSONResponse:
    """The spec's error envelope ``{"errors": [...]}`` with HTTP status ``status`` (spec, "Envelope")."""
    return JSONResponse({"errors": errors}, status_code=status)


def _validation_failed(param: str, detail: str) -> dict:
    return {
        "status": 422,
        "code": "validation_failed",
        "title": f"Invalid {param}",
        "detail": detail,
        "source": {"pointer": f"/{param}"},
        "meta": {"field": param},
    }


def _single_strings(params: Mapping, names: Sequence[str]) -> tuple[dict[str, str | None], list[dict]]:
    """Each named parameter's single string value (None when absent), plus shape errors."""
    keys = list(params.keys())
    values: dict[str, str | None] = {}
    errors: list[dict] = []
    for name in names:
        sent = _getlist(params, name)
        bracketed = any(k.startswith(name + "[") for k in keys)
        if bracketed or len(sent) > 1:
            errors.append(_validation_failed(name, f"{name} must be a string"))
            values[name] = None
        else:
            values[name] = sent[0] if sent else None
    return values, errors


def _getlist(params: Mapping, name: str) -> list[str]:
    if hasattr(params, "getlist"):
        return list(params.getlist(name))
    value = params.get(name)
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _search_engine(value: str | None, errors: list[dict]) -> str | None:
    """The normalised engine (default google), or None after appending its error."""
    if value is None:
        return "google"
    if value in catalogues.SEARCH_ENGINES:
        return value
    allowed = ", ".join(catalogues.SEARCH_ENGINES)
    if not value.strip():
        title, detail = (
            "Missing search_engine",
            f"No search_engine given: send one of {allowed}, or leave the parameter out for google.",
        )
    else:
        title, detail = (
            "Unknown search_engine",
            f"search_engine {value!r} is not a supported search engine: send one of {allowed}, "
            "or leave the parameter out for google.",
        )
    errors.append(
        {
            "status": 422,
            "code": "invalid_reference_value",
            "title": title,
            "detail": detail,
            "source": {"pointer": "/search_engine"},
            "meta": {
                "field": "search_engine",
                "value": meta_value(value),
                "allowed": list(catalogues.SEARCH_ENGINES),
                "docs": DOCS_URL,
            },
        }
    )
    return None


def _country(value: str, engine: str | None, errors: list[dict]) -> str | None:
    iso2 = value.upper()
    if iso2 in _ISO_ALPHA2:
        return iso2
    listing = locations_lookup_path(engine or "google")
    if not value.strip():
        title = "Missing country"
        detail = f"No country given: send an ISO 3166-1 alpha-2 country code such as US, or list the countries with {listing}."
    else:
        title = "Unknown country"
        detail = (
            f"country {value!r} is not an ISO 3166-1 alpha-2 country code: send a two-letter code "
            f"such as US, or list the countries with {listing}."
        )
    meta: dict[str, Any] = {"field": "country", "value": meta_value(value)}
    if engine is not None:
        meta["search_engine"] = engine
    meta["lookup"] = listing
    meta["docs"] = DOCS_URL
    errors.append(
        {
            "status": 422,
            "code": "invalid_reference_value",
            "title": title,
            "detail": detail,
            "source": {"pointer": "/country"},
            "meta": meta,
        }
    )
    return None


def query_locations(params: Mapping) -> tuple[str, list[dict]]:
    """Apply "GET /v1/locations: query" to ``params`` (a multi-dict); returns ``(search_engine, rows)``.
    Raises :class:`LookupQueryError` (422) with every failing parameter's entry.
    """
    values, errors = _single_strings(params, _LOCATION_PARAMS)
    engine = None
    if not _is_shape_error(errors, "search_engine"):
        engine = _search_engine(values["search_engine"], errors)
    country = values["country"]
    iso2 = _country(country, engine, errors) if country is not None else None
    q = values["q"]
    if q is not None:
        if len(q) < Q_MIN_CHARS:
            errors.append(_validation_failed("q", f"q must be at least {Q_MIN_CHARS} characters"))
        elif len(q) > Q_MAX_CHARS:
            errors.append(_validation_failed("q", f"q must be at most {Q_MAX_CHARS} characters"))
    errors.sort(key=lambda e: _LOCATION_PARAMS.index(e["meta"]["field"]))
    if errors:
        raise LookupQueryError(errors)
    assert engine is not None
    code, variant = values["code"], values["variant"]
    if country is None and code is None and q is None:
        rows = catalogues._catalogue(engine).countries
    else:
        rows = catalogues._catalogue(engine).locations
    prefix = q.casefold() if q is not None else None
    wanted_variant = variant.strip().casefold() if variant is not None else None
    out = [
        row
        for row in rows
        if (iso2 is None or row["countryCode"] == iso2)
        and (code is None or row["code"] == code)
        and (prefix is None or row["name"].casefold().startswith(prefix))
        and (wanted_variant is None or row["variant"].casefold() == wanted_variant)
    ]
    return engine, [dict(row) for row in out]


def _is_shape_error(errors: list[dict], param: str) -> bool:
    return any(e["meta"]["field"] == param for e in errors)


def query_languages(params: Mapping) -> tuple[str, list[dict]]:
    """Apply "GET /v1/languages: query" to ``params``; returns ``(search_engine, rows)`` whose code equals ``q`` or
    name contains it, never ``0000``. Raises :class:`LookupQueryError` (422): unknown engine, ``q`` not a string.
    """
    values, errors = _single_strings(params, _LANGUAGE_PARAMS)
    engine = None
    if not _is_shape_error(errors, "search_engine"):
        engine = _search_engine(values["search_engine"], errors)
    errors.sort(key=lambda e: _LANGUAGE_PARAMS.index(e["meta"]["field"]))
    if errors:
        raise LookupQueryError(errors)
    assert engine is not None
    rows: Sequence[dict] = catalogues._catalogue(engine).languages
    q = (values["q"] or "").strip().casefold()
    if q:
        rows = [r for r in rows if r["code"] == q or q in r["name"].casefold()]
    return engine, [dict(row) for row in rows]




async def list_locations(request: Request) -> Response:
    """``GET /v1/locations``: paginated location records, or 422 with the query's error entries."""
    from rank_pipeline.sandbox.pagination import paginated_response

    try:
        _, rows = query_locations(request.query_params)
    except LookupQueryError as exc:
        return errors_response(exc.status, exc.errors)
    return paginated_response(request, [location_row(row) for row in rows])


async def list_languages(request: Request) -> Response:
    """``GET /v1/languages``: paginated language records, or 422 with the query's error entries."""
    from rank_pipeline.sandbox.pagination import paginated_response

    try:
        _, rows = query_languages(request.query_params)
    except LookupQueryError as exc:
        return errors_response(exc.status, exc.errors)
    return paginated_response(request, [language_row(row) for row in rows])


routes: list[Route] = [
    Route("/v1/locations", list_locations, methods=["GET"], name="list_locations"),
    Route("/v1/languages", list_languages, methods=["GET"], name="list_languages"),
]
"""The lookup routes, mounted by the sandbox's ``create_app``."""
