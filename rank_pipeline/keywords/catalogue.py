"""The vendor's catalogues as keyword create checks them, through the API, cached for one run (spec "Keyword
create: body", the lookups, "invalid_reference_value"); allowed values come from one probe create that must
fail (docs/concepts/keywords.md, "The catalogues").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rank_pipeline.api import RankTrackerClient, RankTrackerError, TransportError, ValidationError
from rank_pipeline.api.errors import ServerError
from rank_pipeline.api.fields import SEARCH_ENGINES, RecordFields
from rank_pipeline.settings import models_dir
from rank_pipeline.transform.contract import loaded_contract

__all__ = ["GLOBAL_LANGUAGE", "Allowed", "Catalogue"]

log = logging.getLogger(__name__)

GLOBAL_LANGUAGE = "0000"
"""The Global language: never listed, refused by keyword create (spec, "Keyword create: body")."""
PROBE_WORD = "rank-pipeline catalogue probe"


@dataclass(frozen=True)
class Allowed:
    """What keyword create accepts, from a probe's ``meta.allowed`` (None: the API did not say).

    ``devices`` maps an engine to its devices; key ``""`` holds the devices listed for an unknown engine.
    """

    frequencies: tuple[str, ...] | None
    engines: tuple[str, ...]
    devices: dict[str, tuple[str, ...] | None]

    def devices_of(self, engine: str) -> tuple[str, ...] | None:
        return self.devices.get(engine, self.devices.get(""))


def _pointer(entry: dict) -> str:
    source = entry.get("source")
    return source.get("pointer", "") if isinstance(source, dict) else ""


def _allowed_of(entry: dict) -> tuple[str, ...] | None:
    meta = entry.get("meta")
    values = meta.get("allowed") if isinstance(meta, dict) else None
    if isinstance(values, list) and all(isinstance(v, str) for v in values):
        return tuple(v.lower() for v in values)
    return None


class Catalogue:
    """One account's view of the catalogues, cached for one run (docs/concepts/keywords.md, "The catalogues"):
    ``client`` (paced), ``probe_domain_id`` (the probe create's domain), ``fields`` (the contract; default the
    models folder's).
    """

    def __init__(self, client: RankTrackerClient, probe_domain_id: str | None, fields: RecordFields | None = None):
        self.client = client
        self.probe_domain_id = probe_domain_id
        self.fields = fields if fields is not None else loaded_contract(models_dir())
        self._allowed: Allowed | None = None
        self._locations: dict[tuple[str, str], str | None] = {}
        self._languages: dict[str, frozenset[str]] = {}
        self.requests = 0

    async def allowed(self) -> Allowed:
        """Frequencies, engines and devices keyword create accepts (one probe per run; docs/concepts/keywords.md).
        Raises RankTrackerError: no 422 after three tries (a probe cannot create anything, so it is retried).
        """
        if self._allowed is not None:
            return self._allowed
        if self.probe_domain_id is None:
            self._allowed = Allowed(None, SEARCH_ENGINES, {})
            return self._allowed
        body = {"keyword": {
            "frequency": "",
            "words": [PROBE_WORD],
            "search_engines": [{"name": "", "device": "", "location": "", "language": ""}]
            + [{"name": e, "device": "", "location": "", "language": ""} for e in SEARCH_ENGINES],
        }}
        errors: list[dict] = []
        for attempt in range(3):
            self.requests += 1
            try:
                await self.client.post_once(f"/v1/domains/{self.probe_domain_id}/keywords", body)
            except ValidationError as exc:
                errors = exc.errors
                break
            except (TransportError, ServerError) as exc:
                log.info("catalogue probe lost (%s); a probe creates nothing, asking again", exc.detail)
                if attempt == 2:
                    raise
                continue
            raise RankTrackerError(
                "the API accepted a keyword create with a blank frequency, which the spec says it refuses "
                "(\"Missing frequency\"); stopping before sending anything else")
        frequencies = None
        engines: tuple[str, ...] = SEARCH_ENGINES
        devices: dict[str, tuple[str, ...] | None] = {}
        for entry in errors:
            pointer = _pointer(entry)
            if pointer == "/frequency":
                frequencies = _allowed_of(entry)
            elif pointer == "/search_engines/0/name":
                engines = _allowed_of(entry) or SEARCH_ENGINES
            elif pointer.startswith("/search_engines/") and pointer.endswith("/device"):
                index = int(pointer.split("/")[2])
                devices["" if index == 0 else SEARCH_ENGINES[index - 1]] = _allowed_of(entry)
        self._allowed = Allowed(frequencies, engines, devices)
        return self._allowed

    async def location_code(self, engine: str, value: str) -> str | None:
        """The geo-target id ``value`` (an id or an ISO country code) stands for on ``engine``, or None
        when the engine's catalogue has no such location."""
        value = value.strip()
        key = (engine, value.upper())
        if key not in self._locations:
            if value.isdigit():
                params = {"search_engine": engine, "code": value}
            else:
                params = {"search_engine": engine, "country": value.upper(), "variant": "Country"}
            self.requests += 1
            try:
                rows = await self.client.get("/v1/locations", params)
            except ValidationError:  # a malformed country code (spec: 422 invalid_reference_value)
                rows = []
            codes = [self._code("locations", "location_code", r) for r in rows or [] if isinstance(r, dict)]
            self._locations[key] = value if value.isdigit() and value in codes else (
                codes[0] if codes and not value.isdigit() else None)
        return self._locations[key]

    async def languages(self, engine: str) -> frozenset[str]:
        """The language codes ``engine`` serves (lower case; ``0000`` is never among them)."""
        if engine not in self._languages:
            rows: list[dict] = []
            result = await self.client.list_records("/v1/languages", {"search_engine": engine}, rows.extend)
            self.requests += result.pages
            self._languages[engine] = frozenset(
                self._code("languages", "language_code", r).lower() for r in rows if isinstance(r, dict))
        return self._languages[engine]

    def _code(self, endpoint: str, name: str, row: Mapping[str, Any]) -> str:
        """A catalogue row's code: the contract's field ``name`` of ``endpoint``, else the row's ``id``."""
        attributes = row.get("attributes")
        value = self.fields.value(endpoint, name, attributes) if isinstance(attributes, Mapping) else None
        return str(value if value is not None else row.get("id"))
