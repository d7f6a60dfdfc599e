"""The OpenAPI document against the spec's tables, and real sandbox payloads against its schemas
(spec: "Endpoints", "Authentication", "Errors", "429 response", "Limits" rule 4)."""

from __future__ import annotations

import asyncio
from datetime import date

import httpx
import jsonschema_rs
import pytest
from starlette.applications import Starlette

from rank_pipeline.sandbox import catalogues
from rank_pipeline.sandbox.assumptions import keyword_create_response
from rank_pipeline.sandbox.keyword_create import KeywordCreateError, create_keywords, validate_keyword_create
from rank_pipeline.sandbox.lookups import LookupQueryError, query_locations
from rank_pipeline.sandbox.openapi import OPENAPI_PATH, openapi_document, openapi_route
from rank_pipeline.sandbox.world import AccountSpec, World, WorldConfig

DOC = openapi_document()

# the spec's "Endpoints" table (uuid and domain_uuid are one path template, see openapi.py)
SPEC_ENDPOINTS = [
    ("get", "/v1/domains"),
    ("get", "/v1/domains/{uuid}"),
    ("post", "/v1/domains/{uuid}/keywords"),
    ("get", "/v1/domains/{uuid}/keywords"),
    ("get", "/v1/domains/{uuid}/competitors"),
    ("get", "/v1/tags"),
    ("get", "/v1/account/usage"),
    ("get", "/v1/locations"),
    ("get", "/v1/languages"),
]
PAGINATED = [e for e in SPEC_ENDPOINTS if e[0] == "get" and e[1] not in ("/v1/domains/{uuid}", "/v1/account/usage")]


def operations():
    for path, item in DOC["paths"].items():
        for method, operation in item.items():
            yield method, path, operation


def resolve(node):
    while "$ref" in node:
        target = DOC
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def validator(schema_name):
    return jsonschema_rs.validator_for({"$ref": f"#/components/schemas/{schema_name}", "components": DOC["components"]})


def test_openapi__is_3_1_and_has_exactly_the_spec_endpoints():
    assert DOC["openapi"].startswith("3.1")
    assert sorted((m, p) for m, p, _ in operations()) == sorted(SPEC_ENDPOINTS)


def test_openapi__security_is_an_api_key_in_the_authorization_header():
    assert DOC["components"]["securitySchemes"]["apiKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": "The key alone, no Bearer prefix.",
    }
    assert DOC["security"] == [{"apiKey": []}]


@pytest.mark.parametrize(("method", "path"), SPEC_ENDPOINTS)
def test_openapi__401_and_403_have_empty_bodies_and_429_has_its_headers(method, path):
    responses = DOC["paths"][path][method]["responses"]
    for status in ("401", "403"):
        assert "content" not in resolve(responses[status])
    limited = resolve(responses["429"])
    assert set(limited["headers"]) == {"Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"}
    assert all(h["required"] for h in limited["headers"].values())
    assert limited["headers"]["RateLimit-Remaining"]["schema"]["const"] == 0
    assert resolve(limited["content"]["application/json"]["schema"]) == DOC["components"]["schemas"]["ErrorEnvelope"]


@pytest.mark.parametrize(("method", "path"), PAGINATED)
def test_openapi__paginated_lists_send_the_four_headers_and_take_page_parameters(method, path):
    operation = DOC["paths"][path][method]
    ok = operation["responses"]["200"]
    assert set(ok["headers"]) == {"X-Total-Count", "X-Total-Pages", "X-Per-Page", "X-Current-Page"}
    assert {"page", "per_page"} <= {p["name"] for p in operation["parameters"]}
    assert ok["content"]["application/json"]["schema"]["properties"]["data"]["type"] == "array"


def test_openapi__keyword_create_documents_every_status_of_the_spec():
    responses = DOC["paths"]["/v1/domains/{uuid}/keywords"]["post"]["responses"]
    assert {"201", "400", "402", "404", "422", "401", "403", "429"} == set(responses)
    assert responses["201"]["x-sandbox-assumption"] is True
    assert resolve(responses["400"])["x-sandbox-assumption"] is True


def test_openapi__lookup_parameters_follow_the_spec_tables():
    params = {p["name"]: p for p in DOC["paths"]["/v1/locations"]["get"]["parameters"]}
    assert set(params) == {"search_engine", "country", "variant", "code", "q", "page", "per_page"}
    assert params["search_engine"]["schema"] == {"type": "string", "enum": ["google", "bing", "yahoo"], "default": "google"}
    assert (params["q"]["schema"]["minLength"], params["q"]["schema"]["maxLength"]) == (2, 100)
    languages = {p["name"] for p in DOC["paths"]["/v1/languages"]["get"]["parameters"]}
    assert languages == {"search_engine", "q", "page", "per_page"}


def test_openapi__invented_shapes_are_marked():
    schemas = DOC["components"]["schemas"]
    for name in ("Competitor", "Tag", "KeywordCreateResponse"):
        assert schemas[name]["x-sandbox-assumption"] is True
    keyword_attributes = schemas["Keyword"]["properties"]["attributes"]["properties"]
    assert "x-sandbox-assumption" not in keyword_attributes["location"]  # location.code is in the spec
    assert all(v.get("x-sandbox-assumption") for k, v in keyword_attributes.items() if k != "location")


def test_openapi__every_ref_resolves_and_every_schema_compiles():
    def refs(node):
        if isinstance(node, dict):
            if "$ref" in node:
                yield node["$ref"]
            for value in node.values():
                yield from refs(value)
        elif isinstance(node, list):
            for value in node:
                yield from refs(value)

    for ref in refs(DOC):
        assert resolve({"$ref": ref})
    for name in DOC["components"]["schemas"]:
        validator(name)


def test_openapi__document_is_a_fresh_copy():
    openapi_document()["paths"].clear()
    assert openapi_document()["paths"]


# --- real payloads against the schemas --------------------------------------------------------------


def test_openapi__lookup_rows_and_lookup_errors_match_their_schemas():
    location = validator("LocationRow")
    for row in catalogues.locations("yahoo"):
        location.validate({"id": row["code"], "type": "location", "attributes": row})
    language = validator("LanguageRow")
    for row in catalogues.languages("google"):
        language.validate({"id": row["code"], "type": "language", "attributes": row})
    with pytest.raises(LookupQueryError) as info:
        query_locations({"search_engine": "x" * 150, "country": "USA", "q": "a"})
    validator("ErrorEnvelope").validate({"errors": info.value.errors})


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"keyword": {"words": ["a"], "search_engines": [{}]}},
        {"keyword": {"frequency": 5, "words": ["a"], "search_engines": [{"name": "google", "location": 2840}, {}]}},
    ],
)
def test_openapi__keyword_create_errors_match_the_envelope(payload):
    with pytest.raises(KeywordCreateError) as info:
        validate_keyword_create(payload)
    validator("ErrorEnvelope").validate({"errors": info.value.errors})


def test_openapi__world_records_and_create_response_match_their_schemas():
    world = World(WorldConfig(seed=5, accounts=(AccountSpec("a", domains=1, keywords_per_domain=(5, 5)),)),
                  today=date(2026, 2, 1))
    account = world.account("a")
    domain = world.domains(account.account_id)[0]
    validator("Domain").validate(domain)
    validator("Usage").validate(world.usage(account.account_id))
    for record in world.keywords(domain["id"]):
        validator("Keyword").validate(record)
    for record in world.competitors(domain["id"]):
        validator("Competitor").validate(record)
    body = {"keyword": {"frequency": "daily", "words": ["zz"],
                        "search_engines": [{"name": "google", "device": "desktop", "location": "US", "language": "en"}]}}
    validator("KeywordCreateBody").validate(body)
    records = create_keywords(world, account.account_id, domain["id"], body)
    validator("KeywordCreateResponse").validate(keyword_create_response(records))


def test_openapi_route__serves_the_document():
    app = Starlette(routes=[openapi_route])

    async def get():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://sandbox") as client:
            return await client.get(OPENAPI_PATH)

    response = asyncio.run(get())
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == DOC
