"""Other shapes the sandbox can serve its records in (``RANK_SANDBOX_SHAPE``, ``NAME`` or ``NAME@YYYY-MM-DD``),
each carrying exactly the default's information (docs/reference/sandbox.md, "Other shapes";
docs/concepts/sandbox.md, "Other shapes").
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
    Raises ValueError: an unknown name or a malformed day (the message lists the shapes).
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
