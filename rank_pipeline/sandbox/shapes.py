"""Other shapes the sandbox can serve its keyword records in: the same world under other names and types.

The spec shows one field of a keyword record (``location.code``); everything else is invented
(:mod:`rank_pipeline.sandbox.assumptions`). A real vendor will send another shape, which the spec allows
just as well. These shapes let a user (and the tests) watch the pipeline's contract check fail on a shape it
was not written for, then fix it by an edit of the contract (docs/tutorials/vendor-shape.md, "Meeting your
vendor's shape"). Every shape carries exactly the same information as the default one, so after the edit
the marts equal the default shape's, row by row.

Shapes (``RANK_SANDBOX_SHAPE``, or ``rank-pipeline sandbox --shape``):

``default``
    the invented shape of :func:`rank_pipeline.sandbox.assumptions.keyword_record`.
``vendor-b``
    renamed and nested otherwise: ``phrase`` (the keyword), ``engine: {"name", "device"}``,
    ``location`` (unchanged: the spec shows ``location.code``), ``language`` as a plain string (``"en"``),
    ``frequency``, ``tagIds``, ``searchVolume``, ``createdAt`` (unchanged), and
    ``serp: {"rank", "landingPage", "capturedAt"}`` instead of ``results.organic``.
``language-string``
    the default shape but ``language`` is the plain string ``"en"`` instead of ``{"code": "en"}``: a type
    change alone.
``vendor-c``
    renames outside keywords and values sent as text: keywords ``term`` (the keyword), the position as text
    under ``results.organic.rank`` (``"1"`` .. ``"100"``, ``"-"`` when not ranking), ``monthlySearches``
    (the search volume as text, ``""`` when unknown); tags ``label`` and ``hex``; competitors ``website``
    and ``title``.
``vendor-d``
    epoch timestamps, ids inside objects, a number as text, another timestamp format, a renamed usage
    object: keywords ``created`` (epoch seconds, an integer) for ``createdAt``, ``labels: [{"uuid": <tag
    id>}, ...]`` for ``tagIds`` (``[]`` without tags), ``searchVolume`` as text (``"1200"``; null stays
    null), ``results.organic.checked`` (``"21/11/2026 06:00:00"``, ``%d/%m/%Y %H:%M:%S`` UTC) for
    ``results.organic.capturedAt``; tags ``createdMs`` (epoch milliseconds) for ``createdAt``; usage
    ``rowQuota`` for ``dataRows`` (same keys).
``vendor-e``
    a scalar moved into an array of objects, a category as a flag: keywords ``results.serp: [{"rank",
    "landingPage"}]`` for ``results.organic`` (``[]`` when not ranking), the capture time at the top as
    ``checkedAt`` (``"2026-11-21 06:00:00"``, UTC, no ``T``, no ``Z``), ``mobile: "yes"`` / ``"no"`` for
    ``device`` (``mobile`` / ``desktop``).
``engine-upper``
    the default shape with the search engine in upper case (``"GOOGLE"``): an enum's values in another case,
    for a vendor whose case changes from one day to the next (``engine-upper@2026-11-23``).

Timestamps of the default shape have whole seconds (:func:`rank_pipeline.sandbox.assumptions.timestamp`),
so every format above carries them exactly.

A shape may start on a day: ``vendor-b@2026-11-23`` serves the default shape before that simulated day and
``vendor-b`` from it on (a vendor renaming fields under an installation that has run for months).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime

__all__ = ["SHAPES", "ShapeSetting", "parse_shape"]


def _vendor_b(record: dict) -> dict:
    a = record["attributes"]
    organic = a["results"]["organic"]
    attributes = {
        "phrase": a["keyword"],
        "engine": {"name": a["searchEngine"], "device": a["device"]},
        "location": a["location"],
        "language": a["language"]["code"],
        "frequency": a["frequency"],
        "tagIds": a["tagIds"],
        "searchVolume": a["searchVolume"],
        "createdAt": a["createdAt"],
        "serp": {"rank": organic["position"], "landingPage": organic["url"], "capturedAt": organic["capturedAt"]},
    }
    return {**record, "attributes": attributes}


def _language_string(record: dict) -> dict:
    a = dict(record["attributes"])
    a["language"] = a["language"]["code"]
    return {**record, "attributes": a}


def _vendor_c_keyword(record: dict) -> dict:
    a = dict(record["attributes"])
    organic = dict(a["results"]["organic"])
    position = organic.pop("position")
    organic["rank"] = "-" if position is None else str(position)
    a["results"] = {"organic": organic}
    a["term"] = a.pop("keyword")
    volume = a.pop("searchVolume")
    a["monthlySearches"] = "" if volume is None else str(volume)
    return {**record, "attributes": a}


def _vendor_c_tag(record: dict) -> dict:
    a = dict(record["attributes"])
    a["label"], a["hex"] = a.pop("name"), a.pop("color")
    return {**record, "attributes": a}


def _vendor_c_competitor(record: dict) -> dict:
    a = dict(record["attributes"])
    a["website"], a["title"] = a.pop("domain"), a.pop("name")
    return {**record, "attributes": a}


def _instant(text: str) -> datetime:
    """A default-shape timestamp (``YYYY-MM-DDTHH:MM:SSZ``) as an aware UTC datetime."""
    return datetime.fromisoformat(text).astimezone(UTC)


def _vendor_d_keyword(record: dict) -> dict:
    a = dict(record["attributes"])
    a["created"] = int(_instant(a.pop("createdAt")).timestamp())
    a["labels"] = [{"uuid": tag_id} for tag_id in a.pop("tagIds")]
    volume = a["searchVolume"]
    a["searchVolume"] = None if volume is None else str(volume)
    organic = dict(a["results"]["organic"])
    organic["checked"] = _instant(organic.pop("capturedAt")).strftime("%d/%m/%Y %H:%M:%S")
    a["results"] = {**a["results"], "organic": organic}
    return {**record, "attributes": a}


def _vendor_d_tag(record: dict) -> dict:
    a = dict(record["attributes"])
    a["createdMs"] = int(_instant(a.pop("createdAt")).timestamp()) * 1000
    return {**record, "attributes": a}


def _vendor_d_usage(record: dict) -> dict:
    a = dict(record["attributes"])
    a["rowQuota"] = a.pop("dataRows")
    return {**record, "attributes": a}


def _vendor_e_keyword(record: dict) -> dict:
    a = dict(record["attributes"])
    organic = a["results"]["organic"]
    serp = [] if organic["position"] is None else [{"rank": organic["position"], "landingPage": organic["url"]}]
    a["results"] = {"serp": serp}
    a["checkedAt"] = _instant(organic["capturedAt"]).strftime("%Y-%m-%d %H:%M:%S")
    a["mobile"] = {"mobile": "yes", "desktop": "no"}[a.pop("device")]
    return {**record, "attributes": a}


def _engine_upper(record: dict) -> dict:
    a = dict(record["attributes"])
    a["searchEngine"] = a["searchEngine"].upper()
    return {**record, "attributes": a}


Converter = Callable[[dict], dict]

SHAPES: dict[str, dict[str, Converter]] = {
    "default": {},
    "vendor-b": {"keywords": _vendor_b},
    "language-string": {"keywords": _language_string},
    "vendor-c": {"keywords": _vendor_c_keyword, "tags": _vendor_c_tag, "competitors": _vendor_c_competitor},
    "vendor-d": {"keywords": _vendor_d_keyword, "tags": _vendor_d_tag, "usage": _vendor_d_usage},
    "vendor-e": {"keywords": _vendor_e_keyword},
    "engine-upper": {"keywords": _engine_upper},
}
"""Shape name -> ``{endpoint: the function turning a default record into that shape}`` (others unchanged)."""


class ShapeSetting:
    """A shape, and the simulated day it starts on (None: every day)."""

    def __init__(self, name: str = "default", since: date | None = None):
        self.name, self.since = name, since

    def record(self, endpoint: str, record: dict, today: date) -> dict:
        """``record`` (a default-shape record of ``endpoint``) as served on ``today``."""
        convert = SHAPES[self.name].get(endpoint)
        if convert is None or (self.since is not None and today < self.since):
            return record
        return convert(record)

    def keyword(self, record: dict, today: date) -> dict:
        """``record`` (a default-shape keyword record) as served on ``today``."""
        return self.record("keywords", record, today)

    def __str__(self) -> str:
        return self.name + (f"@{self.since}" if self.since else "")


def parse_shape(text: str | None) -> ShapeSetting:
    """``NAME`` or ``NAME@YYYY-MM-DD`` (empty: ``default``).

    Raises:
        ValueError: an unknown name or a malformed day (the message lists the shapes).
    """
    text = (text or "").strip() or "default"
    name, _, since = text.partition("@")
    if name not in SHAPES:
        raise ValueError(f"unknown sandbox shape {name!r}; the shapes are {', '.join(SHAPES)} "
                         "(optionally NAME@YYYY-MM-DD, from that simulated day on)")
    try:
        day = date.fromisoformat(since) if since else None
    except ValueError:
        raise ValueError(f"sandbox shape {text!r}: {since!r} is not a day (YYYY-MM-DD)") from None
    return ShapeSetting(name, day)
