"""Keyword create body rules, pure function level (spec: "Keyword create: body", "Errors")."""

from __future__ import annotations

import copy

import pytest

from rank_pipeline.sandbox import catalogues
from rank_pipeline.sandbox.keyword_create import (
    DOCS_URL,
    KeywordCreateError,
    SearchEngineEntry,
    location_lookup_q,
    validate_keyword_create,
)

ABSENT = object()
FREQUENCIES = ["daily", "weekly", "monthly"]
ENGINES = ["google", "bing", "yahoo"]
DEVICES = ["desktop", "mobile"]


def entry(**fields):
    base = {"name": "google", "device": "desktop", "location": "2840", "language": "en"}
    for key, value in fields.items():
        if value is ABSENT:
            base.pop(key)
        else:
            base[key] = value
    return base


def body(**fields):
    keyword = {"frequency": "daily", "words": ["running shoes"], "search_engines": [entry()]}
    for key, value in fields.items():
        if value is ABSENT:
            keyword.pop(key)
        else:
            keyword[key] = value
    return {"keyword": keyword}


def errors_of(payload, status=422):
    with pytest.raises(KeywordCreateError) as info:
        validate_keyword_create(payload)
    assert info.value.status == status
    for error in info.value.errors:
        assert error["status"] == status
    return info.value.errors


# --- body rule 4: wrapping resource object ----------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        None,
        [],
        "keyword",
        {},
        body()["keyword"],  # the fields without their wrapper
        {"keyword": None},
        {"keyword": []},
        {"keyword": "running shoes"},
        {"keywords": body()["keyword"]},
    ],
)
def test_keyword_create__without_wrapping_resource_object_is_400(payload):
    (error,) = errors_of(payload, status=400)
    assert error["code"] == "bad_request"
    assert '"keyword"' in error["detail"]
    assert "title" not in error and "source" not in error


# --- validation_failed: single entry for a wrong body shape ----------------------------------------

SHAPE_CASES = [
    ("frequency", {"frequency": ABSENT}),
    ("frequency", {"frequency": None}),
    ("words", {"words": ABSENT}),
    ("words", {"words": None}),
    ("words", {"words": "running shoes"}),
    ("words", {"words": []}),
    ("words", {"words": [""]}),
    ("words", {"words": ["   ", "\t"]}),
    ("words", {"words": ["running shoes", 7]}),
    ("words", {"words": [None]}),
    ("words", {"words": [["nested"]]}),
    ("words", {"words": {"0": "running shoes"}}),
    ("search_engines", {"search_engines": ABSENT}),
    ("search_engines", {"search_engines": None}),
    ("search_engines", {"search_engines": []}),
    ("search_engines", {"search_engines": {}}),
    ("search_engines", {"search_engines": entry()}),
    ("search_engines", {"search_engines": "google"}),
    ("search_engines", {"search_engines": [1]}),
    ("search_engines", {"search_engines": [entry(), "google"]}),
    ("search_engines", {"search_engines": [[entry()]]}),
]


@pytest.mark.parametrize(("field", "fields"), SHAPE_CASES)
def test_validation_failed__single_entry_for_wrong_body_shape(field, fields):
    (error,) = errors_of(body(**fields))
    assert error["code"] == "validation_failed"
    assert error["title"] == f"Invalid {field}"
    assert error["source"] == {"pointer": f"/{field}"}
    assert error["meta"] == {"field": field}
    assert error["detail"]


def test_validation_failed__search_engines_detail_is_the_spec_text():
    (error,) = errors_of(body(search_engines=[]))
    assert error["detail"] == "search_engines must be a non-empty array of objects"


@pytest.mark.parametrize(
    ("fields", "reported"),
    [
        ({"frequency": ABSENT, "words": [], "search_engines": []}, "frequency"),
        ({"words": [1], "search_engines": "x"}, "words"),
        ({"frequency": ABSENT, "search_engines": [1]}, "frequency"),
        # a shape error wins over catalogue values and hides them
        ({"frequency": "hourly", "search_engines": []}, "search_engines"),
        ({"frequency": "hourly", "words": []}, "words"),
    ],
)
def test_validation_failed__first_shape_error_in_body_field_order_only(fields, reported):
    (error,) = errors_of(body(**fields))
    assert error["code"] == "validation_failed"
    assert error["meta"]["field"] == reported


# --- invalid_reference_value: one entry per failing catalogue field ---------------------------------

LONG = "x" * 150

# (fields of the keyword object, field, title, meta.value)
REFERENCE_CASES = [
    ({"frequency": ""}, "frequency", "Missing frequency", ""),
    ({"frequency": "   "}, "frequency", "Missing frequency", "   "),
    ({"frequency": "hourly"}, "frequency", "Unknown frequency", "hourly"),
    ({"frequency": 7}, "frequency", "Unknown frequency", "7"),
    ({"frequency": ["daily"]}, "frequency", "Unknown frequency", '["daily"]'),
    ({"search_engines": [entry(name=ABSENT)]}, "name", "Missing name", None),
    ({"search_engines": [entry(name=None)]}, "name", "Missing name", None),
    ({"search_engines": [entry(name="")]}, "name", "Missing name", ""),
    ({"search_engines": [entry(name="duckduckgo")]}, "name", "Unknown name", "duckduckgo"),
    ({"search_engines": [entry(name=1)]}, "name", "Unknown name", "1"),
    ({"search_engines": [entry(device=ABSENT)]}, "device", "Missing device", None),
    ({"search_engines": [entry(device=" ")]}, "device", "Missing device", " "),
    ({"search_engines": [entry(device="tablet")]}, "device", "Unknown device", "tablet"),
    ({"search_engines": [entry(device=True)]}, "device", "Unknown device", "true"),
    ({"search_engines": [entry(location=ABSENT)]}, "location", "Missing location", None),
    ({"search_engines": [entry(location="")]}, "location", "Missing location", ""),
    ({"search_engines": [entry(location="Paris")]}, "location", "Unknown location", "Paris"),
    ({"search_engines": [entry(location="United States")]}, "location", "Unknown location", "United States"),
    ({"search_engines": [entry(location=2840)]}, "location", "Unknown location", "2840"),
    ({"search_engines": [entry(location="99999999999")]}, "location", "Unknown location", "99999999999"),
    ({"search_engines": [entry(location="XX")]}, "location", "Unknown location", "XX"),
    ({"search_engines": [entry(location="USA")]}, "location", "Unknown location", "USA"),
    ({"search_engines": [entry(name="yahoo", location="BR")]}, "location", "Unknown location", "BR"),
    ({"search_engines": [entry(location=LONG)]}, "location", "Unknown location", "x" * 100),
    ({"search_engines": [entry(language=ABSENT)]}, "language", "Missing language", None),
    ({"search_engines": [entry(language="")]}, "language", "Missing language", ""),
    ({"search_engines": [entry(language="xx")]}, "language", "Unknown language", "xx"),
    ({"search_engines": [entry(language="eng")]}, "language", "Unknown language", "eng"),
    ({"search_engines": [entry(language="0000")]}, "language", "Unknown language", "0000"),
    ({"search_engines": [entry(name="yahoo", language="ko")]}, "language", "Unknown language", "ko"),
    ({"search_engines": [entry(language=0)]}, "language", "Unknown language", "0"),
]


@pytest.mark.parametrize(("fields", "field", "title", "value"), REFERENCE_CASES)
def test_invalid_reference_value__title_pointer_and_meta(fields, field, title, value):
    (error,) = errors_of(body(**fields))
    assert error["code"] == "invalid_reference_value"
    assert error["title"] == title
    pointer = "/frequency" if field == "frequency" else f"/search_engines/0/{field}"
    assert error["source"] == {"pointer": pointer}
    meta = error["meta"]
    assert meta["field"] == field
    assert meta["value"] == value
    assert meta["docs"] == DOCS_URL
    engine = fields.get("search_engines", [{}])[0].get("name", "google")
    if field in ("location", "language"):
        assert meta["search_engine"] == engine
        endpoint = "/v1/locations" if field == "location" else "/v1/languages"
        assert meta["lookup"].startswith(f"{endpoint}?search_engine={engine}")
        assert "allowed" not in meta
    else:
        assert "search_engine" not in meta and "lookup" not in meta
        assert meta["allowed"] == {"frequency": FREQUENCIES, "name": ENGINES, "device": DEVICES}[field]
    if title.startswith("Missing"):
        assert error["detail"].startswith(f"No {field} given")
    else:
        assert value[:20] in error["detail"]  # the value as sent
        if field in ("location", "language"):
            assert engine in error["detail"] and meta["lookup"] in error["detail"]
        else:
            assert ", ".join(meta["allowed"]) in error["detail"]


def test_invalid_reference_value__location_detail_says_id_string_or_iso_code():
    (error,) = errors_of(body(search_engines=[entry(location="Berlin")]))
    detail = error["detail"]
    assert "geo-target id as a string" in detail and "ISO 3166-1 alpha-2" in detail
    assert "/v1/locations?search_engine=google&q=Berlin" in detail


def test_invalid_reference_value__global_language_has_its_own_message():
    (global_error,) = errors_of(body(search_engines=[entry(language="0000")]))
    (unknown_error,) = errors_of(body(search_engines=[entry(language="xx")]))
    assert "Global" in global_error["detail"] and "cannot be tracked" in global_error["detail"]
    assert "Global" not in unknown_error["detail"]


def test_invalid_reference_value__every_failure_in_one_response_in_spec_order():
    errors = errors_of(
        body(
            frequency="hourly",
            search_engines=[
                entry(name="google", device="tablet", location="Paris", language="xx"),
                entry(),  # valid entry contributes nothing
                entry(name="bing", device=ABSENT, location="", language="0000"),
            ],
        )
    )
    assert [e["source"]["pointer"] for e in errors] == [
        "/frequency",
        "/search_engines/0/device",
        "/search_engines/0/location",
        "/search_engines/0/language",
        "/search_engines/2/device",
        "/search_engines/2/location",
        "/search_engines/2/language",
    ]
    assert {e["code"] for e in errors} == {"invalid_reference_value"}


def test_keyword_create__unknown_name_skips_location_and_language():
    errors = errors_of(
        body(
            search_engines=[
                entry(name="altavista", device="tablet", location="Paris", language="xx"),
                entry(name="bing", location="Paris"),
            ]
        )
    )
    assert [e["source"]["pointer"] for e in errors] == [
        "/search_engines/0/name",
        "/search_engines/0/device",
        "/search_engines/1/location",
    ]


@pytest.mark.parametrize(("name", "title"), [(ABSENT, "Missing name"), ("", "Missing name"), ("bingo", "Unknown name")])
def test_keyword_create__missing_name_also_skips_location_and_language(name, title):
    errors = errors_of(body(search_engines=[entry(name=name, location="nowhere", language="zz")]))
    assert [e["title"] for e in errors] == [title]


# --- meta.value echo (spec: "value" row of the meta table; Limits) ----------------------------------


@pytest.mark.parametrize(
    ("sent", "echoed"),
    [
        (2840, "2840"),
        (ABSENT, None),
        (None, None),
        ("", ""),
        ("  ", "  "),
        (" Paris ", " Paris "),
        ("y" * 100, "y" * 100),
        ("y" * 101, "y" * 100),
        ("é" * 250, "é" * 100),
        (12.5, "12.5"),
        (False, "false"),
        ({"id": 1}, '{"id":1}'),
    ],
)
def test_meta_value__echo_rules(sent, echoed):
    (error,) = errors_of(body(search_engines=[entry(location=sent)]))
    assert error["meta"]["value"] == echoed


# --- meta.lookup q pre-fill (spec: "lookup" row of the meta table) ---------------------------------


@pytest.mark.parametrize(
    ("sent", "lookup"),
    [
        ("Paris", "/v1/locations?search_engine=google&q=Paris"),
        ("Paris, France", "/v1/locations?search_engine=google&q=Paris"),
        ("New York,New York,United States", "/v1/locations?search_engine=google&q=New%20York"),
        ("  Lyon ,France", "/v1/locations?search_engine=google&q=Lyon"),
        ("São Paulo", "/v1/locations?search_engine=google&q=S%C3%A3o%20Paulo"),
        ("99999999999", "/v1/locations?search_engine=google"),  # a whole id
        ("XX", "/v1/locations?search_engine=google"),  # a whole ISO code
        ("zz", "/v1/locations?search_engine=google"),
        ("P,France", "/v1/locations?search_engine=google"),  # part before the comma too short
        (",France", "/v1/locations?search_engine=google"),
        ("", "/v1/locations?search_engine=google"),
        (ABSENT, "/v1/locations?search_engine=google"),
        (2840, "/v1/locations?search_engine=google"),
        ("a" * 150, "/v1/locations?search_engine=google&q=" + "a" * 100),
    ],
)
def test_meta_lookup__location_q_prefill(sent, lookup):
    (error,) = errors_of(body(search_engines=[entry(location=sent)]))
    assert error["meta"]["lookup"] == lookup


def test_meta_lookup__uses_the_entry_engine():
    (error,) = errors_of(body(search_engines=[entry(name=" BING ", location="Atlantis, Sea")]))
    assert error["meta"]["lookup"] == "/v1/locations?search_engine=bing&q=Atlantis"
    (error,) = errors_of(body(search_engines=[entry(name="Yahoo", language="xx")]))
    assert error["meta"]["lookup"] == "/v1/languages?search_engine=yahoo"


@pytest.mark.parametrize(("value", "q"), [("Paris", "Paris"), ("2840", None), ("US", None), ("A,B", None), (3, None)])
def test_location_lookup_q__direct(value, q):
    assert location_lookup_q(value) == q


# --- normalisation and the two location forms -------------------------------------------------------


@pytest.mark.parametrize("location", ["US", "us", " uS ", "2840", " 2840 "])
def test_keyword_create__iso_and_id_forms_resolve_to_the_same_location(location):
    request = validate_keyword_create(body(search_engines=[entry(location=location)]))
    assert request.entries == (SearchEngineEntry("google", "desktop", "2840", "en"),)


@pytest.mark.parametrize(("engine", "iso2"), [("google", "DE"), ("bing", "gb"), ("yahoo", "fr")])
def test_keyword_create__iso_code_resolves_to_that_engines_country_row(engine, iso2):
    request = validate_keyword_create(body(search_engines=[entry(name=engine, location=iso2)]))
    assert request.entries[0].location_code == catalogues.country_location(engine, iso2)["code"]


def test_keyword_create__iso_and_id_forms_in_one_call_are_one_entry():
    request = validate_keyword_create(body(search_engines=[entry(location="US"), entry(location="2840")]))
    assert len(request.entries) == 1


def test_keyword_create__values_are_trimmed_and_lower_cased():
    request = validate_keyword_create(
        body(
            frequency=" WEEKLY ",
            words=["  running shoes ", "", "trail shoes", "running shoes"],
            search_engines=[entry(name=" Google ", device="MOBILE", location="fr", language=" FR ")],
        )
    )
    assert request.frequency == "weekly"
    assert request.words == ("running shoes", "trail shoes")
    assert request.entries == (SearchEngineEntry("google", "mobile", "2250", "fr"),)


def test_keyword_create__city_id_is_valid_only_on_engines_that_serve_it():
    google_only = next(
        row["code"]
        for row in catalogues.locations("google")
        if row["variant"] == "City" and catalogues.location_by_code("yahoo", row["code"]) is None
    )
    assert validate_keyword_create(body(search_engines=[entry(location=google_only)])).entries
    (error,) = errors_of(body(search_engines=[entry(name="yahoo", location=google_only)]))
    assert error["title"] == "Unknown location" and "yahoo" in error["detail"]


def test_keyword_create__cartesian_product_of_words_and_entries():
    request = validate_keyword_create(
        body(
            words=["a", "b"],
            search_engines=[entry(), entry(device="mobile"), entry(name="bing", location="GB")],
        )
    )
    combos = request.combinations()
    assert len(combos) == 6
    assert {(w, e.name, e.device, e.location_code) for w, e in combos} == {
        (w, n, d, loc)
        for w in ("a", "b")
        for n, d, loc in [("google", "desktop", "2840"), ("google", "mobile", "2840"), ("bing", "desktop", "2826")]
    }


def test_keyword_create__validation_does_not_mutate_the_body():
    payload = body(search_engines=[entry(location=" us ", name="GOOGLE")])
    before = copy.deepcopy(payload)
    validate_keyword_create(payload)
    assert payload == before
