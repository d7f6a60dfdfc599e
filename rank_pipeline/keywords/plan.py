"""The plan: what a keywords file asks for, against what the account tracks, its catalogues and its quota.

Per file domain, wanted combinations (words x engines x devices x locations x languages, matched as keyword
create normalises them) are ``create`` (not tracked), ``exists`` or ``untracked`` (tracked, not in the file;
never removed). :func:`plan_online` reads the API, :func:`plan_offline` the latest snapshot; problems carry
their file line; :attr:`Plan.refusals` names a forecast 402. Design: docs/concepts/keywords.md, "The plan".
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

from rank_pipeline.api import RankTrackerClient
from rank_pipeline.api.fields import SEARCH_ENGINES, RecordFields, keyword_combination
from rank_pipeline.keywords.catalogue import GLOBAL_LANGUAGE, Allowed, Catalogue
from rank_pipeline.keywords.quota import Quota, contract_fields, read_quota, usage_quota
from rank_pipeline.keywords.schema import LoadedFile
from rank_pipeline.settings import ConfigurationError

__all__ = ["DomainPlan", "Plan", "Problem", "Quota", "UnreadableKeywords", "Wanted", "plan_offline", "plan_online",
           "usage_quota", "wanted_of"]

Key = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class Wanted:
    """One combination a group of the file asks for: ``domain``, ``group`` and ``*_i`` index the file's lists
    (for file lines); ``location_code`` is the resolved geo-target id (None until resolved, or unknown).
    """

    domain: int
    group: int
    word: str
    engine: str
    device: str
    location: str
    language: str
    frequency: str
    tags: tuple[str, ...]
    word_i: int
    engine_i: int
    device_i: int
    location_i: int
    language_i: int
    location_code: str | None = None

    @property
    def key(self) -> Key:
        return (self.word, self.engine, self.device, self.location_code or f"?{self.location}", self.language)

    def loc(self, field_name: str) -> tuple:
        """The file path of this combination's ``word``, ``engine``, ``device``, ``location``,
        ``language`` or ``frequency`` (for :meth:`LoadedFile.where`)."""
        base = ("domains", self.domain, "groups", self.group)
        if field_name == "frequency":
            return (*base, "frequency")
        plural = {"word": "words", "engine": "engines", "device": "devices", "location": "locations",
                  "language": "languages"}[field_name]
        return (*base, plural, getattr(self, f"{field_name}_i"))

    def describe(self) -> str:
        where = self.location if self.location_code in (None, self.location) else \
            f"{self.location}={self.location_code}"
        return f"{self.word!r} {self.engine}/{self.device} {where} {self.language} {self.frequency}"


def wanted_of(loaded: LoadedFile) -> list[list[Wanted]]:
    """Every combination of every group, per domain of the file (file order; duplicates across groups
    kept: the plan counts each key once)."""
    out: list[list[Wanted]] = []
    for di, entry in enumerate(loaded.model.domains):
        rows: list[Wanted] = []
        for gi, g in enumerate(entry.groups):
            for wi, word in enumerate(g.words):
                for ei, engine in enumerate(g.engines):
                    for vi, device in enumerate(g.devices):
                        for li, location in enumerate(g.locations):
                            for ai, language in enumerate(g.languages):
                                rows.append(Wanted(di, gi, word.strip(), engine.strip().lower(),
                                                   device.strip().lower(), location.strip(),
                                                   language.strip().lower(), g.frequency.strip().lower(),
                                                   tuple(g.tags), wi, ei, vi, li, ai))
        out.append(rows)
    return out


@dataclass(frozen=True)
class Problem:
    """Something in the file the API would refuse: where (a file path of keys) and what."""

    loc: tuple
    message: str

    def render(self, loaded: LoadedFile) -> str:
        return f"{loaded.where(self.loc)}: {self.message}"


@dataclass
class DomainPlan:
    """One domain of the file: its id and account, and the combinations to create, already tracked, or
    tracked but not in the file (``untracked``: ``(key, keyword id)``). ``wanted`` holds every
    combination of the file for it, locations resolved where possible."""

    index: int
    name: str
    account: str | None
    domain_id: str | None
    wanted: list[Wanted] = field(default_factory=list)
    create: list[Wanted] = field(default_factory=list)
    exists: list[Wanted] = field(default_factory=list)
    untracked: list[tuple[Key, str]] = field(default_factory=list)


@dataclass
class Plan:
    """The whole plan (docs/concepts/keywords.md, "The plan"). ``pending`` is True when something is to be created;
    ``refusals`` lists why apply would refuse before sending anything (problems, quota)."""

    loaded: LoadedFile
    domains: list[DomainPlan]
    problems: list[Problem]
    quotas: list[Quota]
    source: str
    offline: bool = False
    requests: int = 0

    @property
    def to_create(self) -> int:
        return sum(len(d.create) for d in self.domains)

    @property
    def existing(self) -> int:
        return sum(len(d.exists) for d in self.domains)

    @property
    def untracked(self) -> int:
        return sum(len(d.untracked) for d in self.domains)

    @property
    def pending(self) -> bool:
        return self.to_create > 0

    @property
    def refusals(self) -> list[str]:
        out = [p.render(self.loaded) for p in self.problems]
        out += [q.refusal for q in self.quotas if q.refusal]
        return out

    def summary(self) -> str:
        head = (f"Plan: {self.to_create} to create, {self.existing} already tracked, {self.untracked} tracked "
                "but not in the file (reported, never removed: the API has no delete)")
        if self.problems:
            head += f"; {len(self.problems)} problem(s) in the file"
        if any(q.refusal for q in self.quotas):
            head += "; over quota (402)"
        return head + "."

    def render(self, untracked_shown: int = 10) -> str:
        """The plan as text: per domain the creates (with file lines), counts, the untracked keywords
        (the first ``untracked_shown``), then problems, quota and the summary line."""
        lines = [f"keywords plan of {self.loaded.path} against {self.source}"
                 + (" (offline: the latest snapshot; catalogues not checked)" if self.offline else "")]
        for d in self.domains:
            ident = f"account {d.account}, id {d.domain_id}" if d.domain_id else "not resolved"
            lines.append(f"domain {d.name} ({ident}): {len(d.create)} to create, {len(d.exists)} already "
                         f"tracked, {len(d.untracked)} tracked but not in the file")
            for w in d.create:
                lines.append(f"  + create {w.describe()}  [{self.loaded.path}:{self.loaded.line(w.loc('word'))}]")
            for key, keyword_id in d.untracked[:untracked_shown]:
                word, engine, device, code, language = key
                lines.append(f"  ? not in the file: {word!r} {engine}/{device} {code} {language} (id {keyword_id})")
            if len(d.untracked) > untracked_shown:
                lines.append(f"  ? ... and {len(d.untracked) - untracked_shown} more tracked but not in the file")
        for p in self.problems:
            lines.append(f"error: {p.render(self.loaded)}")
        for q in self.quotas:
            lines.append(q.render())
        lines.append(self.summary())
        return "\n".join(lines)


# -- comparing ---------------------------------------------------------------------------------------


class UnreadableKeywords(ConfigurationError):
    """Tracked keyword records whose combination cannot be read: the vendor sends another shape than the
    the vendor's contract reads (:func:`rank_pipeline.api.fields.keyword_combination`). A plan would take them for missing and
    create them again (keyword creation is not idempotent), so there is no plan."""


def _text(fields: RecordFields, endpoint: str, name: str, attributes: Any) -> str | None:
    value = fields.value(endpoint, name, attributes) if isinstance(attributes, Mapping) else None
    return None if value is None or isinstance(value, Mapping | list) else str(value)


def tracked_combinations(records: Iterable[Mapping[str, Any]], fields: RecordFields | None = None) -> dict[Key, str]:
    """``{combination: keyword id}`` of keyword records, read through the vendor's contract ``fields`` (default:
    the models folder's). Raises UnreadableKeywords: a record's combination cannot be read (one line).
    """
    out: dict[Key, str] = {}
    reader = contract_fields(fields)
    for record in records:
        attributes = record.get("attributes") if isinstance(record, Mapping) else None
        combo = keyword_combination(attributes, reader) if isinstance(attributes, Mapping) else None
        if combo is None:
            raise UnreadableKeywords(
                f"keyword {record.get('id') if isinstance(record, Mapping) else record!r}: its word, search engine, "
                "device, location or language is not where the vendor's contract (sources/vendor_contract.yml) "
                "reads them (the vendor sends another shape: see `rank-pipeline profile --suggest`); no plan is made, since a keyword it cannot "
                "read would be created again")
        out.setdefault(combo, str(record.get("id")))
    return out


def compare(domain: DomainPlan, wanted: list[Wanted], tracked: Mapping[Key, str]) -> DomainPlan:
    """Fill ``domain``'s create / exists / untracked from resolved ``wanted`` rows and ``tracked``."""
    seen: set[Key] = set()
    domain.wanted, domain.create, domain.exists = list(wanted), [], []
    for w in wanted:
        if w.key in seen:
            continue
        seen.add(w.key)
        (domain.exists if w.key in tracked else domain.create).append(w)
    domain.untracked = sorted(((k, i) for k, i in tracked.items() if k not in seen), key=lambda kv: kv[0])
    return domain


def _resolve_domains(loaded: LoadedFile, held: Mapping[str, Mapping[str, str]],
                     problems: list[Problem]) -> list[DomainPlan]:
    """Domain names -> ids: ``held`` is ``{account: {domain name (lower case): id}}``."""
    out = []
    for di, entry in enumerate(loaded.model.domains):
        name = entry.domain.strip().lower()
        accounts = [entry.account] if entry.account else list(held)
        if entry.account and entry.account not in held:
            problems.append(Problem(("domains", di, "account"),
                                    f"account {entry.account!r} is not configured (configured: "
                                    f"{', '.join(held) or 'none'}); set RANK_TRACKER_ACCOUNTS or fix the name"))
            out.append(DomainPlan(di, entry.domain, None, None))
            continue
        found = [(a, held[a][name]) for a in accounts if name in held.get(a, {})]
        if not found:
            problems.append(Problem(("domains", di, "domain"),
                                    f"no domain named {entry.domain!r} in account(s) {', '.join(accounts)}; "
                                    "use the domain's name as GET /v1/domains reports it"))
            out.append(DomainPlan(di, entry.domain, None, None))
        elif len(found) > 1:
            problems.append(Problem(("domains", di, "domain"),
                                    f"accounts {', '.join(a for a, _ in found)} all hold a domain named "
                                    f"{entry.domain!r}: add `account:` to say which"))
            out.append(DomainPlan(di, entry.domain, None, None))
        else:
            out.append(DomainPlan(di, entry.domain, found[0][0], found[0][1]))
    return out


def _check_entry_values(w: Wanted, allowed: Allowed | None, problems: dict[tuple, Problem]) -> bool:
    """Engine, device and frequency against ``allowed``; the Global language. True when the engine is
    known (so its location and language are checked, spec body rule 2)."""
    def add(field_name: str, message: str) -> None:
        loc = w.loc(field_name)
        problems.setdefault(loc, Problem(loc, message))

    engines = allowed.engines if allowed is not None else SEARCH_ENGINES
    if allowed is not None and allowed.frequencies is not None and w.frequency not in allowed.frequencies:
        add("frequency", f"unknown frequency {w.frequency!r}: use one of {', '.join(allowed.frequencies)}")
    if w.engine not in engines:
        add("engine", f"unknown search engine {w.engine!r}: use one of {', '.join(engines)} (its locations "
                      "and languages are not checked until it is fixed)")
        return False
    devices = allowed.devices_of(w.engine) if allowed is not None else None
    if devices is not None and w.device not in devices:
        add("device", f"unknown device {w.device!r} for {w.engine}: use one of {', '.join(devices)}")
    if w.language == GLOBAL_LANGUAGE:
        add("language", f"the Global language {GLOBAL_LANGUAGE!r} cannot be tracked: send a language code "
                        f"such as \"en\" (list them with GET /v1/languages?search_engine={w.engine})")
        return False
    return True


# -- online ---------------------------------------------------------------------------------------------


async def _read_list(client: RankTrackerClient, path: str, params: dict | None = None) -> list[dict]:
    rows: list[dict] = []
    await client.list_records(path, params or {}, rows.extend)
    return rows


async def read_tracked(client: RankTrackerClient, domain_id: str) -> dict[Key, str]:
    """The domain's tracked combinations, read now (``GET /v1/domains/{uuid}/keywords``, every page)."""
    return tracked_combinations(await _read_list(client, f"/v1/domains/{domain_id}/keywords"))


async def plan_online(loaded: LoadedFile, clients: Mapping[str, RankTrackerClient], source: str,
                      catalogues: dict[str, Catalogue] | None = None) -> Plan:
    """Plan ``loaded`` against the API (docs/concepts/keywords.md, "The plan"); ``clients``: configured account
    name -> client; ``catalogues`` (account -> :class:`Catalogue`) is filled and may be passed again.

    Raises rank_pipeline.api.RankTrackerError: a read failed (after the client's retries).
    """
    problems: list[Problem] = []
    reader = contract_fields(None)
    domain_lists = await asyncio.gather(*(_read_list(c, "/v1/domains") for c in clients.values()))
    held = {account: {(_text(reader, "domains", "domain", r.get("attributes")) or "").lower(): str(r["id"])
                      for r in rows}
            for account, rows in zip(clients, domain_lists, strict=True)}
    domains = _resolve_domains(loaded, held, problems)
    catalogues = catalogues if catalogues is not None else {}
    for d in domains:
        if d.account and d.account not in catalogues:
            catalogues[d.account] = Catalogue(clients[d.account], d.domain_id, reader)
    found: dict[tuple, Problem] = {}
    wanted_all = wanted_of(loaded)
    resolved: list[list[Wanted]] = []
    for d, wanted in zip(domains, wanted_all, strict=True):
        catalogue = catalogues.get(d.account) if d.account else None
        allowed = await catalogue.allowed() if catalogue is not None else None
        rows = []
        for w in wanted:
            if not _check_entry_values(w, allowed, found) or catalogue is None:
                rows.append(w)
                continue
            code = await catalogue.location_code(w.engine, w.location)
            if code is None:
                loc = w.loc("location")
                found.setdefault(loc, Problem(loc, (
                    f"{w.location!r} is not a {w.engine} location (neither a geo-target id of its catalogue nor "
                    f"a country it serves): look it up with GET /v1/locations?search_engine={w.engine}&q=<name>")))
            if w.language not in await catalogue.languages(w.engine):
                loc = w.loc("language")
                found.setdefault(loc, Problem(loc, (
                    f"{w.language!r} is not a {w.engine} language: list them with "
                    f"GET /v1/languages?search_engine={w.engine}")))
            rows.append(replace(w, location_code=code))
        resolved.append(rows)
    problems += sorted(found.values(), key=lambda p: loaded.line(p.loc))
    tracked = await asyncio.gather(*(read_tracked(clients[d.account], d.domain_id)
                                     if d.domain_id and d.account is not None else _none() for d in domains))
    for d, rows, t in zip(domains, resolved, tracked, strict=True):
        compare(d, rows, t) if d.domain_id else d.wanted.extend(rows)
    quotas = []
    for account, client in clients.items():
        needed = sum(len(d.create) for d in domains if d.account == account)
        if needed:
            quotas.append(await read_quota(client, account, needed, reader))
    requests = sum(c.stats.requests for c in clients.values())
    return Plan(loaded, domains, problems, quotas, source, requests=requests)


async def _none() -> dict:
    return {}


# -- offline -------------------------------------------------------------------------------------------


def plan_offline(loaded: LoadedFile, snapshots_uri: Path | str, accounts: Iterable[str] | None = None,
                 day: date | None = None) -> Plan:
    """Plan ``loaded`` against the latest committed snapshot (or ``day``'s), without a request; ``accounts``
    limits the accounts. Raises FileNotFoundError: no committed ``keywords`` snapshot under ``snapshots_uri``.
    """
    import json

    from rank_pipeline.snapshots.reader import list_snapshot_dates, read_snapshot

    dates = list_snapshot_dates(snapshots_uri, "keywords")
    if day is None:
        if not dates:
            raise FileNotFoundError(f"no committed keywords snapshot under {snapshots_uri}: run `rank-pipeline "
                                    "extract` (or the daily job) first, or plan without --offline")
        day = dates[-1]

    def rows(resource: str) -> list[dict]:
        if day not in list_snapshot_dates(snapshots_uri, resource):
            return []
        table = read_snapshot(snapshots_uri, resource, day)
        return table.select([c for c in ("account", "id", "parent_id", "attributes")
                             if c in table.column_names]).to_pylist()

    reader = contract_fields(None)
    wanted_accounts = set(accounts) if accounts is not None else None
    held: dict[str, dict[str, str]] = {}
    for r in rows("domains"):
        if wanted_accounts is None or r["account"] in wanted_accounts:
            name = _text(reader, "domains", "domain", json.loads(r["attributes"])) or ""
            held.setdefault(r["account"], {})[name.lower()] = r["id"]
    problems: list[Problem] = []
    domains = _resolve_domains(loaded, held, problems)
    countries: dict[tuple[str, str], str] = {}
    for r in rows("locations"):
        a = json.loads(r["attributes"])
        country = _text(reader, "locations", "country_code", a)
        if _text(reader, "locations", "location_variant", a) == "Country" and country:
            countries[(str(r["parent_id"]), country.upper())] = _text(reader, "locations", "location_code", a) \
                or str(r["id"])
    tracked: dict[str, dict[Key, str]] = {}
    for r in rows("keywords"):
        tracked.setdefault(str(r["parent_id"]), {}).update(
            tracked_combinations([{"id": r["id"], "attributes": json.loads(r["attributes"])}], reader))
    found: dict[tuple, Problem] = {}
    for d, wanted in zip(domains, wanted_of(loaded), strict=True):
        resolved = []
        for w in wanted:
            _check_entry_values(w, None, found)
            code = w.location if w.location.isdigit() else countries.get((w.engine, w.location.upper()))
            resolved.append(replace(w, location_code=code))
        compare(d, resolved, tracked.get(d.domain_id, {})) if d.domain_id else d.wanted.extend(resolved)
    problems += sorted(found.values(), key=lambda p: loaded.line(p.loc))
    quotas = []
    usage = {r["account"]: json.loads(r["attributes"]) for r in rows("usage")}
    for account in held:
        needed = sum(len(d.create) for d in domains if d.account == account)
        if needed:
            quotas.append(usage_quota(account, needed, usage.get(account), reader, as_of=f"snapshot of {day}"))
    return Plan(loaded, domains, problems, quotas, f"the snapshot of {day} in {snapshots_uri}", offline=True)
