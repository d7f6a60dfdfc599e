"""Keyword create, ``POST /v1/domains/{domain_uuid}/keywords`` (spec "Keyword create: body", "Errors", "Limits"):
:func:`validate_keyword_create` and :func:`create_keywords`, checking 404, 400, 422, 422, 402 in that order,
else 201. Choices: docs/concepts/sandbox.md, "Keyword create".
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from rank_pipeline.errors import RankPipelineError
from rank_pipeline.sandbox import catalogues as _catalogues
from rank_pipeline.sandbox.assumptions import (
    BAD_REQUEST_CODE,
    DEVICES,
    FREQUENCIES,
    KEYWORD_CREATE_STATUS,
    SEARCH_ENGINES,
    keyword_create_response,
)
from rank_pipeline.sandbox.lookups import (
    DOCS_URL,
    Q_MAX_CHARS,
    Q_MIN_CHARS,
    errors_response,
    languages_lookup_path,
    locations_lookup_path,
    meta_value,
)

__all__ = [
    "DOCS_URL",
    "KeywordCreateError",
    "KeywordCreateRequest",
    "SearchEngineEntry",
    "create_keywords",
    "location_lookup_q",
    "routes",
    "validate_keyword_create",
]

_ISO_LIKE = re.compile(r"[A-Za-z]{2}")
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class SearchEngineEntry:
    """One normalised ``search_engines[]`` entry: lower-case ``name``/``device``, the geo-target id
    ``location_code`` (a string; an ISO country code already resolved to it), the lower-case
    ``language_code``."""

    name: str
    device: str
    location_code: str
    language_code: str


@dataclass(frozen=True)
class KeywordCreateRequest:
    """A valid keyword-create body, normalised: ``frequency`` lower case, ``words`` trimmed, non-blank, distinct,
    ``entries`` distinct, both in request order; :meth:`combinations` is their product, created.
    """

    frequency: str
    words: tuple[str, ...]
    entries: tuple[SearchEngineEntry, ...]

    def combinations(self) -> list[tuple[str, SearchEngineEntry]]:
        """``(word, entry)`` pairs, words outer: one keyword and one data row each (spec, Limits rule 2)."""
        return [(word, entry) for word in self.words for entry in self.entries]


class KeywordCreateError(RankPipelineError):
    """The request cannot be created: ``status`` (400, 404, 402 or 422) and the ``errors`` entries
    of the spec's envelope (spec, "Errors")."""

    def __init__(self, status: int, errors: list[dict]):
        super().__init__("; ".join(e["detail"] for e in errors))
        self.status = status
        self.errors = errors

    def response(self) -> JSONResponse:
        """This error as the spec's envelope response."""
        return errors_response(self.status, self.errors)


def location_lookup_q(value: Any) -> str | None:
    """The ``q`` pre-filled in a location error's ``meta.lookup`` (spec, "invalid_reference_value"):
    the part of ``value`` before its first comma, trimmed and cut to 100 characters; None when
    ``value`` is not a non-blank string, is a whole id (digits) or ISO code (two letters), or that
    part is shorter than 2 characters."""
    if not isinstance(value, str):
        return None
    whole = value.strip()
    if not whole or _DIGITS.fullmatch(whole) or _ISO_LIKE.fullmatch(whole):
        return None
    part = whole.split(",", 1)[0].strip()[:Q_MAX_CHARS]
    return part if len(part) >= Q_MIN_CHARS else None


def _bad_request(detail: str) -> KeywordCreateError:
    return KeywordCreateError(400, [{"status": 400, "code": BAD_REQUEST_CODE, "detail": detail}])


def _shape_error(field: str, detail: str) -> KeywordCreateError:
    return KeywordCreateError(
        422,
        [
            {
                "status": 422,
                "code": "validation_failed",
                "title": f"Invalid {field}",
                "detail": detail,
                "source": {"pointer": f"/{field}"},
                "meta": {"field": field},
            }
        ],
    )


def _is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _shown(value: Any) -> str | None:
    """The value as sent, for a detail text: a JSON literal, cut like ``meta.value`` (None when absent)."""
    return json.dumps(meta_value(value), ensure_ascii=False) if isinstance(value, str) else meta_value(value)


def _reference_error(
    field: str,
    value: Any,
    pointer: str,
    detail: str,
    *,
    search_engine: str | None = None,
    allowed: Sequence[str] | None = None,
    lookup: str | None = None,
) -> dict:
    meta: dict[str, Any] = {"field": field, "value": meta_value(value)}
    if search_engine is not None:
        meta["search_engine"] = search_engine
    if allowed is not None:
        meta["allowed"] = list(allowed)
    if lookup is not None:
        meta["lookup"] = lookup
    meta["docs"] = DOCS_URL
    return {
        "status": 422,
        "code": "invalid_reference_value",
        "title": f"{'Missing' if _is_blank(value) else 'Unknown'} {field}",
        "detail": detail,
        "source": {"pointer": pointer},
        "meta": meta,
    }


def _enumerated(field: str, value: Any, allowed: Sequence[str], pointer: str, errors: list[dict],
                engine: str | None = None, noun: str | None = None) -> str | None:
    """Check a value against a closed list (frequency, name, device); normalise or append an error."""
    if isinstance(value, str) and value.strip().lower() in allowed:
        return value.strip().lower()
    choices = ", ".join(allowed)
    where = f" for {engine}" if engine else ""
    if _is_blank(value):
        detail = f"No {field} given{where}: send one of {choices}."
    else:
        kind = "" if isinstance(value, str) else " (not a string)"
        detail = f"{field} {_shown(value)}{kind} is not a known {noun or field}{where}: send one of {choices} (case-insensitive)."
    errors.append(_reference_error(field, value, pointer, detail, allowed=allowed))
    return None


def _location(value: Any, engine: str, pointer: str, catalogue: ModuleType, errors: list[dict]) -> str | None:
    if isinstance(value, str):
        text = value.strip()
        row = None
        if _DIGITS.fullmatch(text):
            row = catalogue.location_by_code(engine, text)
        elif _ISO_LIKE.fullmatch(text):
            row = catalogue.country_location(engine, text)
        if row is not None:
            return row["code"]
    q = location_lookup_q(value)
    lookup = locations_lookup_path(engine, q)
    how = (
        f"send a geo-target id as a string (e.g. \"2840\") or an ISO 3166-1 alpha-2 country code "
        f"(e.g. \"US\"); look up ids via {lookup}."
    )
    if _is_blank(value):
        detail = f"No location given for {engine}: {how}"
    elif isinstance(value, int) and not isinstance(value, bool):
        detail = f"location {value} is a number, not a string, checked against {engine}: {how}"
    elif not isinstance(value, str):
        detail = f"location {_shown(value)} is not a string, checked against {engine}: {how}"
    elif _DIGITS.fullmatch(value.strip()):
        detail = f"location {_shown(value)} is not a {engine} geo-target id: {how}"
    elif _ISO_LIKE.fullmatch(value.strip()):
        detail = f"location {_shown(value)} is not a {engine} country (ISO 3166-1 alpha-2): {how}"
    else:
        detail = f"location {_shown(value)} is neither a geo-target id nor a country code (place names are not accepted) for {engine}: {how}"
    errors.append(_reference_error("location", value, pointer, detail, search_engine=engine, lookup=lookup))
    return None


def _language(value: Any, engine: str, pointer: str, catalogue: ModuleType, errors: list[dict]) -> str | None:
    row = catalogue.language(engine, value) if isinstance(value, str) else None
    if row is not None and row["code"] != _catalogues.GLOBAL_LANGUAGE_CODE:
        return row["code"]
    lookup = languages_lookup_path(engine)
    how = f"send a language code such as \"en\" (case-insensitive); list {engine}'s languages via {lookup}."
    if _is_blank(value):
        detail = f"No language given for {engine}: {how}"
    elif row is not None:  # the Global language
        detail = (
            f"language {_shown(value)} is the Global language, which cannot be tracked on {engine}: "
            f"{how}"
        )
    else:
        kind = "" if isinstance(value, str) else " (not a string)"
        detail = f"language {_shown(value)}{kind} is not a {engine} language: {how}"
    errors.append(_reference_error("language", value, pointer, detail, search_engine=engine, lookup=lookup))
    return None


def validate_keyword_create(body: Any, catalogue: ModuleType = _catalogues) -> KeywordCreateRequest:
    """Apply the body rules to a decoded JSON ``body`` (spec "Keyword create: body", "Errors"); returns the
    normalised request. ``catalogue``: ``location_by_code``, ``country_location``, ``language`` (default
    :mod:`rank_pipeline.sandbox.catalogues`). Raises :class:`KeywordCreateError`: 400 (no ``keyword``), 422 one
    ``validation_failed`` entry, or 422 every ``invalid_reference_value`` entry in the spec's order.
    """
    if not isinstance(body, dict) or not isinstance(body.get("keyword"), dict):
        raise _bad_request(
            'The body must be a JSON object wrapping the keyword in a "keyword" object: '
            '{"keyword": {"frequency": ..., "words": [...], "search_engines": [...]}}.'
        )
    keyword = body["keyword"]

    frequency = keyword.get("frequency")
    if frequency is None:
        raise _shape_error("frequency", f"frequency is required: send one of {', '.join(FREQUENCIES)}.")
    words = keyword.get("words")
    if (
        not isinstance(words, list)
        or not all(isinstance(w, str) for w in words)
        or not any(w.strip() for w in words)
    ):
        raise _shape_error("words", "words must be an array of strings with at least one non-blank string")
    engines = keyword.get("search_engines")
    if not isinstance(engines, list) or not engines or not all(isinstance(e, dict) for e in engines):
        raise _shape_error("search_engines", "search_engines must be a non-empty array of objects")

    errors: list[dict] = []
    norm_frequency = _enumerated("frequency", frequency, FREQUENCIES, "/frequency", errors)
    entries: list[SearchEngineEntry] = []
    for index, entry in enumerate(engines):
        base = f"/search_engines/{index}"
        name = _enumerated(
            "name", entry.get("name"), SEARCH_ENGINES, f"{base}/name", errors, noun="search engine"
        )
        device = _enumerated("device", entry.get("device"), DEVICES, f"{base}/device", errors, engine=name)
        if name is None:
            continue  # spec, body rule 2: location and language are not checked for an unknown name
        location = _location(entry.get("location"), name, f"{base}/location", catalogue, errors)
        language = _language(entry.get("language"), name, f"{base}/language", catalogue, errors)
        if device is not None and location is not None and language is not None:
            entries.append(SearchEngineEntry(name, device, location, language))
    if errors:
        raise KeywordCreateError(422, errors)
    assert norm_frequency is not None
    return KeywordCreateRequest(
        frequency=norm_frequency,
        words=tuple(dict.fromkeys(w.strip() for w in words if w.strip())),
        entries=tuple(dict.fromkeys(entries)),
    )


def _world(request: Request):
    world = getattr(request.app.state, "world", None)
    if world is None:  # pragma: no cover - wiring error in create_app
        raise RuntimeError("the sandbox app has no world: create_app must set app.state.world")
    return world


def create_keywords(world, account_id: str, domain_id: str, body: Any) -> list[dict]:
    """Validate ``body`` and create its keywords on ``domain_id`` of ``account_id``; returns the records. Raises
    :class:`KeywordCreateError`: 404 (checked first), those of :func:`validate_keyword_create`, 402 (nothing created).
    """
    from rank_pipeline.sandbox import world as world_module

    not_found = KeywordCreateError(404, [{"status": 404, "code": "not_found", "detail": "Domain not found"}])
    if world.domain(account_id, domain_id) is None:
        raise not_found
    request = validate_keyword_create(body)
    specs = [
        world_module.KeywordSpec(
            word=word,
            search_engine=entry.name,
            device=entry.device,
            location_code=entry.location_code,
            language_code=entry.language_code,
            frequency=request.frequency,
        )
        for word, entry in request.combinations()
    ]
    try:
        return list(world.create_keywords(account_id, domain_id, specs))
    except world_module.UnknownDomain as exc:  # removed between the check and the create
        raise not_found from exc
    except world_module.QuotaExceeded as exc:
        detail = (
            f"{exc} Each word and search-engine entry needs one keyword and one data row "
            "(combinations the domain already tracks cost nothing); read GET /v1/account/usage for "
            "what remains."
        )
        raise KeywordCreateError(402, [{"status": 402, "code": "over_quota", "detail": detail}]) from exc


async def create_keywords_endpoint(request: Request) -> Response:
    """``POST /v1/domains/{domain_uuid}/keywords``: 201 ``{"data": [...]}`` or the spec's error envelope."""
    account = request.state.account
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        body = None
    try:
        records = create_keywords(_world(request), account.account_id, request.path_params["domain_uuid"], body)
    except KeywordCreateError as exc:
        return exc.response()
    return JSONResponse(keyword_create_response(records), status_code=KEYWORD_CREATE_STATUS)


routes: list[Route] = [
    Route(
        "/v1/domains/{domain_uuid}/keywords",
        create_keywords_endpoint,
        methods=["POST"],
        name="create_keywords",
    ),
]
"""The keyword-create route, mounted by the sandbox's ``create_app``."""
