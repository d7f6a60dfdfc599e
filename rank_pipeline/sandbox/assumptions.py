"""The sandbox's assumptions: every value and record shape the spec marks "not shown" (constants and the
builders of every record served; timestamps ``YYYY-MM-DDTHH:MM:SSZ``), here only. Shapes:
docs/reference/sandbox.md, "Invented record shapes"; why: docs/concepts/sandbox.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, time

FREQUENCIES: tuple[str, ...] = ("daily", "weekly", "monthly")
DEVICES: tuple[str, ...] = ("desktop", "mobile")
MATCH_TYPES: tuple[str, ...] = ("any", "domain", "host", "url")
SEARCH_ENGINES: tuple[str, ...] = ("google", "bing", "yahoo")

BAD_REQUEST_CODE: str = "bad_request"
SERVER_ERROR_CODE: str = "server_error"
KEYWORD_CREATE_STATUS: int = 201
CAPTURE_TIME_UTC: time = time(6, 0, 0)


def timestamp(value: date | datetime) -> str:
    """Format a day (midnight UTC) or an aware/naive-UTC datetime as ``YYYY-MM-DDTHH:MM:SSZ``."""
    if not isinstance(value, datetime):
        value = datetime.combine(value, time(0, 0))
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.replace(microsecond=0).isoformat() + "Z"


def captured_at(day: date) -> str:
    """``results.organic.capturedAt`` of a keyword on ``day``: that day at :data:`CAPTURE_TIME_UTC`."""
    return timestamp(datetime.combine(day, CAPTURE_TIME_UTC))


def domain_record(domain_id: str, *, domain: str, host: str, match_type: str, project_name: str) -> dict:
    """A domain resource (spec, "Domain"): all four attributes are the spec's own fields."""
    return {
        "id": domain_id,
        "type": "domain",
        "attributes": {"domain": domain, "host": host, "matchType": match_type, "projectName": project_name},
    }


def keyword_record(
    keyword_id: str,
    *,
    keyword: str,
    search_engine: str,
    device: str,
    location: Mapping[str, str],
    language_code: str,
    frequency: str,
    tag_ids: Sequence[str],
    search_volume: int,
    created_at: str,
    position: int | None,
    url: str | None,
    captured: str,
) -> dict:
    """A keyword record (spec: only ``location.code`` is shown): ``location`` copies a catalogue row's ``code``,
    ``name``, ``variant``; ``position`` 1..100 or None (not ranking); ``url`` None exactly when position is.
    """
    return {
        "id": keyword_id,
        "type": "keyword",
        "attributes": {
            "keyword": keyword,
            "searchEngine": search_engine,
            "device": device,
            "location": {"code": location["code"], "name": location["name"], "variant": location["variant"]},
            "language": {"code": language_code},
            "frequency": frequency,
            "tagIds": list(tag_ids),
            "searchVolume": search_volume,
            "createdAt": created_at,
            "results": {"organic": {"position": position, "url": url, "capturedAt": captured}},
        },
    }


def competitor_record(competitor_id: str, *, domain: str, name: str, created_at: str) -> dict:
    """A competitor record (spec: "Competitor fields: not shown")."""
    return {
        "id": competitor_id,
        "type": "competitor",
        "attributes": {"domain": domain, "name": name, "createdAt": created_at},
    }


def tag_record(tag_id: str, *, name: str, color: str, created_at: str) -> dict:
    """A tag record (spec: "Tag fields: not shown"); ``color`` is ``#rrggbb``."""
    return {"id": tag_id, "type": "tag", "attributes": {"name": name, "color": color, "createdAt": created_at}}


def usage_record(
    account_id: str,
    *,
    api_enabled: bool,
    keywords_usage: int,
    keywords_limit: int,
    data_rows_usage: int,
    data_rows_limit: int,
) -> dict:
    """The ``data`` object of GET /v1/account/usage (spec, "Usage"); ``data.id`` is the account id
    (not shown in the spec). ``remaining`` is ``limit - usage``, never below 0."""
    return {
        "id": account_id,
        "type": "usage",
        "attributes": {
            "apiEnabled": api_enabled,
            "keywords": {
                "usage": keywords_usage,
                "limit": keywords_limit,
                "remaining": max(0, keywords_limit - keywords_usage),
            },
            "dataRows": {
                "usage": data_rows_usage,
                "limit": data_rows_limit,
                "remaining": max(0, data_rows_limit - data_rows_usage),
            },
        },
    }


def location_row(attributes: Mapping[str, str]) -> dict:
    """A location catalogue row as served by GET /v1/locations: ``id`` is the ``code``."""
    return {"id": attributes["code"], "type": "location", "attributes": dict(attributes)}


def language_row(attributes: Mapping[str, str]) -> dict:
    """A language catalogue row as served by GET /v1/languages: ``id`` is the ``code``."""
    return {"id": attributes["code"], "type": "language", "attributes": dict(attributes)}


def keyword_create_response(records: Sequence[dict]) -> dict:
    """Body of a successful keyword create (status :data:`KEYWORD_CREATE_STATUS`): ``{"data": records}``."""
    return {"data": list(records)}
