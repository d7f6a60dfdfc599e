"""OpenAPI 3.1 description of the API as the spec states it, at ``GET /openapi.json`` (``openapi_route``);
invented shapes carry ``x-sandbox-assumption: true`` (docs/concepts/sandbox.md, "The OpenAPI document").
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from rank_pipeline.sandbox.assumptions import BAD_REQUEST_CODE, KEYWORD_CREATE_STATUS, SEARCH_ENGINES

__all__ = ["OPENAPI_PATH", "build_openapi", "openapi_document", "openapi_route"]

OPENAPI_PATH = "/openapi.json"
"""Where the sandbox serves the document (outside ``/v1``: not part of the vendor API)."""

_ASSUMED = {"x-sandbox-assumption": True}


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict) -> dict:
    return {"application/json": {"schema": schema}}


def _int_header(description: str) -> dict:
    return {"description": description, "required": True, "schema": {"type": "integer", "minimum": 0}}


_PAGINATION_HEADERS = {
    "X-Total-Count": _int_header("Records matching the request."),
    "X-Total-Pages": _int_header("Pages at the current page size; the last page has X-Current-Page equal to it."),
    "X-Per-Page": _int_header("Page size applied, after the cap of 1000."),
    "X-Current-Page": _int_header("The page returned (1-based)."),
}

_PAGE_PARAMETERS = [
    {
        "name": "page",
        "in": "query",
        "required": False,
        "description": "1-based page; a page beyond the last returns 200 with an empty data array.",
        "schema": {"type": "integer", "minimum": 1, "default": 1},
    },
    {
        "name": "per_page",
        "in": "query",
        "required": False,
        "description": "Page size; values above 1000 are capped to 1000.",
        "schema": {"type": "integer", "minimum": 1, "default": 100},
    },
]


def _uuid_parameter(name: str = "uuid", description: str = "Domain id.") -> dict:
    return {"name": name, "in": "path", "required": True, "description": description,
            "schema": {"type": "string"}}


def _common_responses() -> dict:
    return {
        "401": {"$ref": "#/components/responses/Unauthorized"},
        "403": {"$ref": "#/components/responses/Forbidden"},
        "429": {"$ref": "#/components/responses/RateLimited"},
    }


def _list_ok(item_schema: dict, description: str) -> dict:
    return {
        "description": description,
        "headers": copy.deepcopy(_PAGINATION_HEADERS),
        "content": _json({"type": "object", "required": ["data"],
                          "properties": {"data": {"type": "array", "items": item_schema}}}),
    }


def _list_operation(operation_id: str, summary: str, item: str, extra_params: list | None = None,
                    *, domain_path: bool = False, validation: bool = False) -> dict:
    responses = {"200": _list_ok(_ref(item), f"A page of {item} records.")}
    responses["400"] = {"$ref": "#/components/responses/BadRequest"}
    if domain_path:
        responses["404"] = {"$ref": "#/components/responses/NotFound"}
    if validation:
        responses["422"] = {"$ref": "#/components/responses/Unprocessable"}
    responses.update(_common_responses())
    params = ([_uuid_parameter()] if domain_path else []) + copy.deepcopy(_PAGE_PARAMETERS) + (extra_params or [])
    return {"operationId": operation_id, "summary": summary, "parameters": params, "responses": responses}


_STRING = {"type": "string"}


def _schemas() -> dict:
    """``components.schemas``: the error envelope, the account's resources, the catalogue rows and the
    bodies of keyword create, in that order."""
    return {**_error_schemas(), **_resource_schemas(), **_catalogue_schemas(), **_keyword_create_schemas()}


def _resource(type_name: str | None, attributes: dict, *, assumed: bool = False) -> dict:
    """A JSON:API resource object: ``id``, ``type`` (``type_name``, any string when None), ``attributes``."""
    schema = {
        "type": "object",
        "required": ["id", "type", "attributes"],
        "properties": {
            "id": _STRING,
            "type": {"const": type_name} if type_name else _STRING,
            "attributes": attributes,
        },
    }
    return {**schema, **_ASSUMED} if assumed else schema


def _error_schemas() -> dict:
    """``ErrorEntry`` and ``ErrorEnvelope`` (spec, "Errors")."""
    string = _STRING
    error_entry = {
        "type": "object",
        "description": "One error. Unknown extra fields are additive.",
        "required": ["status", "detail"],
        "properties": {
            "code": {"type": "string", "description": "Always present, except where the body is empty."},
            "status": {"type": "integer", "description": "Equals the HTTP status."},
            "detail": string,
            "title": {"type": "string", "description": "On invalid_reference_value and validation_failed."},
            "source": {"type": "object", "properties": {"pointer": string}},
            "meta": {
                "type": "object",
                "properties": {
                    "field": string,
                    "value": {"type": ["string", "null"], "maxLength": 100},
                    "search_engine": string,
                    "allowed": {"type": "array", "items": string},
                    "lookup": string,
                    "docs": string,
                },
            },
            "id": {"type": "string", "description": "On SERP errors."},
        },
    }
    envelope = {
        "type": "object",
        "required": ["errors"],
        "properties": {"errors": {"type": "array", "minItems": 1, "items": _ref("ErrorEntry")}},
    }
    return {"ErrorEntry": error_entry, "ErrorEnvelope": envelope}


def _resource_schemas() -> dict:
    """The account's resources: ``Domain``, ``Keyword``, ``Competitor``, ``Tag``, ``Usage``."""
    string = _STRING
    domain = _resource("domain", {
        "type": "object",
        "required": ["domain", "host", "matchType", "projectName"],
        "properties": {
            "domain": string,
            "host": string,
            "matchType": {"type": "string", "description": "Enumerated; `any` is a value, others not shown."},
            "projectName": string,
        },
    })
    keyword = _resource("keyword", {
        "type": "object",
        "description": "Only location.code is in the spec; other fields are the sandbox's.",
        "required": ["location"],
        "properties": {
            "location": {"type": "object", "required": ["code"], "properties": {"code": string}},
            "keyword": {**string, **_ASSUMED},
            "searchEngine": {**string, **_ASSUMED},
            "device": {**string, **_ASSUMED},
            "language": {"type": "object", "properties": {"code": string}, **_ASSUMED},
            "frequency": {**string, **_ASSUMED},
            "tagIds": {"type": "array", "items": string, **_ASSUMED},
            "searchVolume": {"type": "integer", **_ASSUMED},
            "createdAt": {**string, **_ASSUMED},
            "results": {"type": "object", **_ASSUMED},
        },
    })
    keyword["properties"]["type"] = {"type": "string", **_ASSUMED}
    quota = {
        "type": "object",
        "required": ["usage", "limit", "remaining"],
        "properties": {k: {"type": "integer"} for k in ("usage", "limit", "remaining")},
    }
    usage = _resource("usage", {
        "type": "object",
        "required": ["apiEnabled", "keywords", "dataRows"],
        "properties": {"apiEnabled": {"type": "boolean"}, "keywords": quota, "dataRows": quota},
    })
    return {
        "Domain": domain,
        "Keyword": keyword,
        "Competitor": _resource(None, {"type": "object"}, assumed=True),
        "Tag": _resource(None, {"type": "object"}, assumed=True),
        "Usage": usage,
    }


def _catalogue_schemas() -> dict:
    """The lookup rows: ``LocationRow`` and ``LanguageRow``."""
    string = _STRING
    location_row = _resource("location", {
        "type": "object",
        "required": ["code"],
        "properties": {
            "code": {"type": "string", "description": "Geo-target id: send it as search_engines[].location."},
            "name": {"type": "string", "description": "Built from City, Region, Country.", **_ASSUMED},
            "variant": {"type": "string", "description": "Country, City, Postal Code, and others."},
            "countryCode": {**string, **_ASSUMED},
        },
    })
    location_row["properties"]["type"] = {"type": "string", **_ASSUMED}
    language_row = _resource("language", {
        "type": "object",
        "required": ["code"],
        "properties": {"code": string, "name": {**string, **_ASSUMED}},
    })
    language_row["properties"]["type"] = {"type": "string", **_ASSUMED}
    return {"LocationRow": location_row, "LanguageRow": language_row}


def _keyword_create_schemas() -> dict:
    """Keyword create's request body and its (assumed) success body: ``KeywordCreateBody`` and
    ``KeywordCreateResponse``."""
    entry = {
        "type": "object",
        "required": ["name", "device", "location", "language"],
        "properties": {
            "name": {"type": "string", "description": "Search engine, case-insensitive, trimmed."},
            "device": {"type": "string", "description": "Case-insensitive, trimmed; `desktop` is a value."},
            "location": {"type": "string", "description": "Geo-target id as a string, or ISO 3166-1 alpha-2."},
            "language": {"type": "string", "description": "Language code of that engine; `0000` is rejected."},
        },
    }
    frequency = {"type": "string",
                 "description": "Case-insensitive; allowed values in meta.allowed of an error."}
    create_body = {
        "type": "object",
        "required": ["keyword"],
        "properties": {
            "keyword": {
                "type": "object",
                "required": ["frequency", "words", "search_engines"],
                "properties": {
                    "frequency": frequency,
                    "words": {"type": "array", "minItems": 1, "items": _STRING},
                    "search_engines": {"type": "array", "minItems": 1, "items": entry},
                },
            }
        },
    }
    created = {
        "type": "object",
        "required": ["data"],
        "properties": {"data": {"type": "array", "items": _ref("Keyword")}},
        **_ASSUMED,
    }
    return {"KeywordCreateBody": create_body, "KeywordCreateResponse": created}


def _responses() -> dict:
    envelope = _json(_ref("ErrorEnvelope"))
    retry = {"description": "Seconds to wait.", "required": True, "schema": {"type": "integer", "minimum": 0}}
    return {
        "Unauthorized": {"description": "Header missing, malformed, or key wrong. Empty body."},
        "Forbidden": {"description": "Plan lacks API access, or the action is forbidden. Empty body."},
        "NotFound": {"description": "Absent or in another account; detail `<Resource> not found`.",
                     "content": envelope},
        "BadRequest": {"description": f"Required parameter missing or malformed; code `{BAD_REQUEST_CODE}`.",
                       "content": envelope, **_ASSUMED},
        "Unprocessable": {"description": "invalid, invalid_reference_value or validation_failed.",
                          "content": envelope},
        "OverQuota": {"description": "over_quota: would exceed the keyword or data-row allowance; nothing created.",
                      "content": envelope},
        "RateLimited": {
            "description": "rate_limited; detail states the retry delay in seconds.",
            "headers": {
                "Retry-After": retry,
                "RateLimit-Limit": {"description": "The ceiling hit.", "required": True,
                                    "schema": {"type": "integer", "minimum": 1}},
                "RateLimit-Remaining": {"description": "Always 0.", "required": True,
                                        "schema": {"type": "integer", "const": 0}},
                "RateLimit-Reset": {**retry, "description": "Same value as Retry-After."},
            },
            "content": envelope,
        },
    }


@functools.cache
def _document() -> dict:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Rank-Tracking REST API (sandbox)",
            "version": "v1",
            "description": "As stated by shared/spec/rank-tracking-api.md. Shapes marked "
                           "x-sandbox-assumption are the sandbox's where the spec says 'not shown'.",
        },
        "security": [{"apiKey": []}],
        "paths": _paths(),
        "components": {
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "Authorization",
                           "description": "The key alone, no Bearer prefix."},
            },
            "schemas": _schemas(),
            "responses": _responses(),
        },
    }


def _paths() -> dict:
    """``paths``: every endpoint of the spec's "Endpoints" table."""
    locations_params, languages_params = _catalogue_parameters()
    return {
        "/v1/domains": {"get": _list_operation("listDomains", "Domains of the account.", "Domain")},
        "/v1/domains/{uuid}": {"get": _get_domain_operation()},
        "/v1/domains/{uuid}/keywords": {"get": _list_keywords_operation(),
                                        "post": _create_keywords_operation()},
        "/v1/domains/{uuid}/competitors": {"get": _list_operation(
            "listCompetitors", "Competitors of a domain.", "Competitor", domain_path=True)},
        "/v1/tags": {"get": _list_operation("listTags", "Tags of the account.", "Tag")},
        "/v1/account/usage": {"get": _usage_operation()},
        "/v1/locations": {"get": _list_operation(
            "listLocations", "Location catalogue of a search engine (not account-scoped).",
            "LocationRow", locations_params, validation=True)},
        "/v1/languages": {"get": _list_operation(
            "listLanguages", "Language catalogue of a search engine; 0000 never listed.",
            "LanguageRow", languages_params, validation=True)},
    }


def _catalogue_parameters() -> tuple[list, list]:
    """The query parameters of ``/v1/locations`` and of ``/v1/languages`` (besides the page ones)."""
    engine_param = {"name": "search_engine", "in": "query", "required": False,
                    "schema": {"type": "string", "enum": list(SEARCH_ENGINES), "default": "google"}}
    locations_params = [
        engine_param,
        {"name": "country", "in": "query", "required": False,
         "description": "ISO 3166-1 alpha-2 (case-insensitive); an unassigned code is a 422 too.",
         "schema": {"type": "string", "pattern": "^[A-Za-z]{2}$"}},
        {"name": "variant", "in": "query", "required": False,
         "description": "Country, City, Postal Code, and others.", "schema": {"type": "string"}},
        {"name": "code", "in": "query", "required": False, "description": "Exact geo-target id.",
         "schema": {"type": "string"}},
        {"name": "q", "in": "query", "required": False,
         "description": "Prefix of the City,Region,Country name.",
         "schema": {"type": "string", "minLength": 2, "maxLength": 100}},
    ]
    languages_params = [
        copy.deepcopy(engine_param),
        {"name": "q", "in": "query", "required": False,
         "description": "Exact code or a substring of the name.", "schema": {"type": "string"}},
    ]
    return locations_params, languages_params


def _get_domain_operation() -> dict:
    return {
        "operationId": "getDomain",
        "summary": "One domain.",
        "parameters": [_uuid_parameter()],
        "responses": {
            "200": {"description": "The domain.", "content": _json(
                {"type": "object", "required": ["data"], "properties": {"data": _ref("Domain")}})},
            "404": {"$ref": "#/components/responses/NotFound"},
            **_common_responses(),
        },
    }


def _list_keywords_operation() -> dict:
    return _list_operation(
        "listKeywords", "Keywords tracked on a domain.", "Keyword",
        [{"name": "results_organic_url", "in": "query", "required": False, "schema": {"type": "string"}}],
        domain_path=True,
    )


def _create_keywords_operation() -> dict:
    return {
        "operationId": "createKeywords",
        "summary": "Track the cartesian product of words and search_engines (all-or-nothing).",
        "description": "The spec names the path parameter domain_uuid.",
        "parameters": [_uuid_parameter()],
        "requestBody": {"required": True, "content": _json(_ref("KeywordCreateBody"))},
        "responses": {
            str(KEYWORD_CREATE_STATUS): {"description": "Created (success body not shown in the spec).",
                                         "content": _json(_ref("KeywordCreateResponse")), **_ASSUMED},
            "400": {"$ref": "#/components/responses/BadRequest"},
            "402": {"$ref": "#/components/responses/OverQuota"},
            "404": {"$ref": "#/components/responses/NotFound"},
            "422": {"$ref": "#/components/responses/Unprocessable"},
            **_common_responses(),
        },
    }


def _usage_operation() -> dict:
    return {
        "operationId": "getAccountUsage",
        "summary": "The account's plan usage.",
        "responses": {
            "200": {"description": "Usage.", "content": _json(
                {"type": "object", "required": ["data"], "properties": {"data": _ref("Usage")}})},
            **_common_responses(),
        },
    }



def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document as a fresh dict (callers may change their copy)."""
    return copy.deepcopy(_document())


async def _serve(request: Request) -> JSONResponse:
    return JSONResponse(_document())


openapi_route = Route(OPENAPI_PATH, _serve, methods=["GET"], name="openapi")
"""``GET /openapi.json``: the document, for the sandbox's ``create_app`` to mount."""


build_openapi = openapi_document
"""Alias of :func:`openapi_document` (the name ``rank_pipeline.sandbox`` re-exports)."""
