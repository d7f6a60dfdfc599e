"""The world's records as served: JSON:API dicts (:mod:`rank_pipeline.sandbox.assumptions`), fresh copies.

A domain's keyword records of a day are cached (64 lists; a write bumps the domain's version); the app's list
route reads the cached records themselves (``shared``), which nothing changes.
"""

from __future__ import annotations

from datetime import date, timedelta

from rank_pipeline.sandbox import assumptions as A
from rank_pipeline.sandbox.world.generation import competitor_schedule
from rank_pipeline.sandbox.world.positions import position, ranking_url
from rank_pipeline.sandbox.world.queries import existing_keywords
from rank_pipeline.sandbox.world.state import AccountState, Domain, Keyword, WorldState

__all__ = ["competitor_records", "domain_record", "keyword_record", "keyword_records", "tag_records"]

_RECORD_LISTS_KEPT = 64


def domain_record(d: Domain) -> dict:
    """The domain's record (it exists on every day)."""
    return A.domain_record(d.id, domain=d.name, host=d.host, match_type=d.match_type, project_name=d.project_name)


def keyword_record(state: WorldState, d: Domain, k: Keyword, day: date, captured: str | None = None) -> dict:
    """The keyword's record with its position, URL and capture time of ``day`` (position and URL None when
    it does not rank or does not exist that day); ``captured``: ``A.captured_at(day)``, when the caller has it."""
    pos = position(state.config, k, day) if k.exists(day) else None
    location = _catalogue_location_by_code(k.engine, k.location_code)
    return A.keyword_record(
        k.id,
        keyword=k.word,
        search_engine=k.engine,
        device=k.device,
        location=location,
        language_code=k.language_code,
        frequency=k.frequency,
        tag_ids=k.tag_ids,
        search_volume=k.search_volume,
        created_at=k.created_at,
        position=pos,
        url=ranking_url(state.config, k, day) if pos is not None else None,
        captured=captured or A.captured_at(day),
    )


def keyword_records(state: WorldState, d: Domain, day: date, *, shared: bool = False) -> list[dict]:
    """Records of the domain's keywords existing on ``day``, ordered by (keyword text, engine, device,
    location code, language code, id): fresh copies, or with ``shared`` the cached records themselves,
    which the caller must not change (the app's read path only encodes them)."""
    with state.lock:
        key = ("kw", d.id, day, d.version)
        cached = state.records.get(key)
        if cached is None:
            kws = sorted(existing_keywords(state, d, day), key=lambda k: (*k.combination(), k.id))
            captured = A.captured_at(day)
            cached = [keyword_record(state, d, k, day, captured) for k in kws]
            state.records[key] = cached
            while len(state.records) > _RECORD_LISTS_KEPT:
                state.records.popitem(last=False)
        else:
            state.records.move_to_end(key)
    return cached if shared else _copy_records(cached)


def competitor_records(state: WorldState, d: Domain, day: date) -> list[dict]:
    """Records of the domain's competitors existing on ``day``, ordered by creation then id."""
    rows = [c for c in competitor_schedule(state.config, d) if c[3] <= day and (c[4] is None or day < c[4])]
    rows.sort(key=lambda c: (c[3], c[0]))
    return [
        A.competitor_record(cid, domain=dom, name=name, created_at=A.timestamp(created))
        for cid, dom, name, created, _ in rows
    ]


def tag_records(state: WorldState, account: AccountState) -> list[dict]:
    """Records of the account's tags (all created 400 days before ``start_date``)."""
    created = A.timestamp(state.config.start_date - timedelta(days=400))
    return [A.tag_record(tid, name=n, color=c, created_at=created) for tid, n, c in account.tags]


def _copy_records(records: list[dict]) -> list[dict]:
    out = []
    for r in records:
        a = r["attributes"]
        attrs = dict(a)
        attrs["location"] = dict(a["location"])
        attrs["language"] = dict(a["language"])
        attrs["tagIds"] = list(a["tagIds"])
        attrs["results"] = {"organic": dict(a["results"]["organic"])}
        out.append({"id": r["id"], "type": r["type"], "attributes": attrs})
    return out


_LOCATION_CACHE: dict[tuple[str, str], dict] = {}


def _catalogue_location_by_code(engine: str, code: str) -> dict:
    row = _LOCATION_CACHE.get((engine, code))
    if row is None:
        from rank_pipeline.sandbox import catalogues

        row = catalogues.location_by_code(engine, code)
        if row is None:
            raise LookupError(f"the {engine} location catalogue has no row with code {code!r}")
        _LOCATION_CACHE[(engine, code)] = row
    return row
