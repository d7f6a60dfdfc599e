"""The API resources the pipeline reads, each declared once in :data:`CATALOG` (spec "Resources and their
fields", "Endpoints").

The extraction fan-out, snapshot folders, raw tables, Dagster asset specs and the raw part of the data
dictionary are derived from it. No record field is declared here (those are the vendor's contract's).
Design: docs/concepts/architecture.md, "One declaration per endpoint". Imports neither Dagster nor pyarrow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rank_pipeline.api.fields import RecordFields, keyword_location_code, keyword_search_engines

__all__ = [
    "CATALOG",
    "COMMON_COLUMNS",
    "Endpoint",
    "ListRequest",
    "by_name",
    "children_of",
    "raw_column_descriptions",
    "raw_docs",
    "render_markdown",
    "endpoint_names",
]

@dataclass(frozen=True)
class ListRequest:
    """One list (or single read) of a resource, ``GET path?params``: ``parent_id`` goes to the snapshot's column (a
    domain's id, a catalogue's engine); ``parent_record_id``: the list is dropped when that record was deleted
    mid-read, and its checkpoint reused only while the record is unchanged.
    """

    path: str
    params: tuple[tuple[str, str], ...] = ()
    parent_id: str | None = None
    parent_record_id: str | None = None


RequestsFromParent = Callable[["Endpoint", Mapping[str, Any], RecordFields], Iterator[ListRequest]]
"""``(child endpoint, parent record, the vendor's contract) -> the child's lists``; the contract reads a field
the spec does not show by its name (:mod:`rank_pipeline.api.fields`)."""


def each_parent_record(resource: Endpoint, record: Mapping[str, Any], fields: RecordFields) -> Iterator[ListRequest]:
    """One list per parent record, its path's ``{parent_id}`` being the record's ``id``."""
    parent_id = str(record["id"])
    yield ListRequest(resource.path.format(parent_id=parent_id), parent_id=parent_id, parent_record_id=parent_id)


def locations_of_keyword(resource: Endpoint, record: Mapping[str, Any], fields: RecordFields) -> Iterator[ListRequest]:
    """One list per search engine and location code a keyword points to.

    Spec: a keyword's location code is the geo-target id; ``GET /v1/locations?code=&search_engine=``.
    Both are read by their contract names (``location_code``, ``search_engine``) through
    :mod:`rank_pipeline.api.fields`.
    """
    attributes = record.get("attributes") or {}
    code = keyword_location_code(attributes, fields)
    if code is not None:
        for engine in keyword_search_engines(attributes, fields):
            yield _lookup(resource.path, (("code", code), ("search_engine", engine)), engine)


def languages_of_keyword(resource: Endpoint, record: Mapping[str, Any], fields: RecordFields) -> Iterator[ListRequest]:
    """One list per search engine a keyword may be tracked on (``GET /v1/languages?search_engine=``)."""
    for engine in keyword_search_engines(record.get("attributes") or {}, fields):
        yield _lookup(resource.path, (("search_engine", engine),), engine)


@lru_cache(maxsize=65_536)
def _lookup(path: str, params: tuple[tuple[str, str], ...], engine: str) -> ListRequest:
    """A catalogue list's request, made once per distinct request (many keywords share one)."""
    return ListRequest(path, params, parent_id=engine)


@dataclass(frozen=True)
class Endpoint:
    """One API resource as the pipeline reads it (docs/concepts/architecture.md, "One declaration per endpoint").

    Attributes:
        name: the snapshot folder, raw table and asset key suffix (``snapshots/<name>``, ``raw.<name>``).
        path: the endpoint (``{parent_id}``: the parent record's id); description, spec: one sentence, and
            the spec section that shows the resource.
        paginated: a list with the four pagination headers (spec "Limits"), else a single read.
        parent: the resource whose records this one is read for (None: read once per account).
        requests_from_parent: how one parent record turns into lists (de-duplicated per account).
        parent_404_tolerated: a child list's 404 means the parent was deleted mid-run (``missing_parents``).
        checkpointed: each list is checkpointed for a resumed run (:mod:`rank_pipeline.extract.resume`).
        account_scoped: the records belong to the account; False for the catalogues.
        reads: the parent's contract fields that ``requests_from_parent`` reads, when its requests depend on
            them alone and name no ``parent_record_id`` (the extractor reads only those); None: the whole record.
    """

    name: str
    path: str
    description: str
    spec: str
    paginated: bool = True
    parent: str | None = None
    requests_from_parent: RequestsFromParent = each_parent_record
    parent_404_tolerated: bool = False
    checkpointed: bool = False
    account_scoped: bool = True
    reads: tuple[str, ...] | None = None

    def top_level_request(self) -> ListRequest:
        """The one request of a resource without a parent."""
        if self.parent is not None:
            raise ValueError(f"{self.name} is read per {self.parent} record, not once")
        return ListRequest(self.path)

    @property
    def endpoint(self) -> str:
        """``GET <path>`` as the docs and asset descriptions show it."""
        return f"GET {self.path}"


CATALOG: tuple[Endpoint, ...] = (
    Endpoint(
        name="domains",
        path="/v1/domains",
        description="Domains of each account, one Parquet snapshot per day.",
        spec='"Resources and their fields: Domain"',
    ),
    Endpoint(
        name="keywords",
        path="/v1/domains/{parent_id}/keywords",
        description="Keywords of each domain with their SERP position.",
        spec='"Resources and their fields: Keyword"',
        parent="domains",
        parent_404_tolerated=True,
        checkpointed=True,
    ),
    Endpoint(
        name="competitors",
        path="/v1/domains/{parent_id}/competitors",
        description="Competitors of each domain.",
        spec='"Other resources" (competitor fields: not shown)',
        parent="domains",
        parent_404_tolerated=True,
        checkpointed=True,
    ),
    Endpoint(
        name="tags",
        path="/v1/tags",
        description="Tags of each account.",
        spec='"Other resources" (tag fields: not shown)',
    ),
    Endpoint(
        name="usage",
        path="/v1/account/usage",
        description="Account usage and plan limits, one row per account and day.",
        spec='"Resources and their fields: Usage"',
        paginated=False,
    ),
    Endpoint(
        name="locations",
        path="/v1/locations",
        description="Location catalogue rows the keywords point to (one list per search engine and code).",
        spec='"Location catalogue row", "GET /v1/locations: query"',
        parent="keywords",
        requests_from_parent=locations_of_keyword,
        checkpointed=True,
        account_scoped=False,
        reads=("location_code", "search_engine"),
    ),
    Endpoint(
        name="languages",
        path="/v1/languages",
        description="Language catalogue rows of every search engine in use.",
        spec='"GET /v1/languages: query"',
        parent="keywords",
        requests_from_parent=languages_of_keyword,
        checkpointed=True,
        account_scoped=False,
        reads=("search_engine",),
    ),
)
"""Every resource the pipeline snapshots, in extraction order; a parent comes before its children."""


def endpoint_names() -> tuple[str, ...]:
    """The declared resources' names, in declaration order."""
    return tuple(r.name for r in CATALOG)


def by_name(name: str) -> Endpoint:
    """The declaration of ``name``.

    Raises:
        KeyError: ``name`` is not declared (the message lists the declared names).
    """
    for resource in CATALOG:
        if resource.name == name:
            return resource
    raise KeyError(f"unknown resource {name!r}; declared: {', '.join(endpoint_names())}")


def children_of(name: str | None) -> tuple[Endpoint, ...]:
    """Resources read per record of ``name`` (None: the top-level resources), in declaration order."""
    return tuple(r for r in CATALOG if r.parent == name)


def _validate(catalog: tuple[Endpoint, ...]) -> None:
    seen: set[str] = set()
    for r in catalog:
        if r.name in seen:
            raise ValueError(f"resource {r.name!r} is declared twice")
        if r.parent is not None and r.parent not in seen:
            raise ValueError(f"resource {r.name!r}: its parent {r.parent!r} must be declared before it")
        if r.parent is not None and not r.paginated:
            raise ValueError(f"resource {r.name!r}: a child resource must be a paginated list")
        if r.parent_404_tolerated and r.parent is None:
            raise ValueError(f"resource {r.name!r}: only a child resource can tolerate its parent's 404")
        seen.add(r.name)


_validate(CATALOG)


COMMON_COLUMNS: dict[str, str] = {
    "snapshot_date": "The day of the snapshot (UTC), the partition.",
    "account": "The configured account the record was read with.",
    "id": "The record's id in the API.",
    "type": "The record's JSON:API type.",
    "parent_id": "The parent record's id (the domain of a keyword, the search engine of a location), "
                 "null for a top-level resource.",
    "extracted_at": "When the extractor read the record (UTC).",
    "attributes": "The record's full attributes as JSON, as the vendor sent them: the fields the models read "
                  "are declared in the vendor's contract and read through it (`vendor.<endpoint>`).",
    "loaded_at": "When the row was loaded into the warehouse (UTC).",
}
"""The columns of every raw table, and all of them (docs/concepts/completeness.md, "Snapshots"): a field of a
record is read from ``attributes`` through the vendor's contract, never flattened into a column of its own."""


def raw_column_descriptions(name: str) -> dict[str, str]:
    """``{column: description}`` of ``raw.<name>``: :data:`COMMON_COLUMNS`.

    Raises:
        KeyError: no resource ``name``.
    """
    by_name(name)
    return dict(COMMON_COLUMNS)


def raw_docs() -> dict[str, tuple[str, dict[str, str]]]:
    """``{resource: (description (endpoint), {column: description})}`` for every declared resource: what the
    models' documentation site says of the raw tables (:func:`rank_pipeline.transform.site.write_site`)."""
    return {r.name: (f"{r.description} ({r.endpoint})", raw_column_descriptions(r.name)) for r in CATALOG}


def _read_how(r: Endpoint) -> str:
    if r.parent is None:
        return "once per account" + ("" if r.paginated else " (single read, not paginated)")
    rule = (r.requests_from_parent.__doc__ or "").strip().splitlines()[0].rstrip(".")
    return f"per record of `{r.parent}` ({rule[0].lower() + rule[1:]}), de-duplicated per account"


def render_markdown() -> str:
    """The raw part of the data dictionary: one section per declared resource (Markdown).

    Columns: the snapshot's columns (:data:`COMMON_COLUMNS`, docs/concepts/completeness.md, "Snapshots"); the
    fields of ``attributes`` the models read are the vendor's contract's (``sources/vendor_contract.yml``).
    """
    lines = [
        "## raw",
        "",
        "One table per API resource, loaded from the Parquet snapshots; generated from the declarations in "
        "`rank_pipeline/api/endpoints.py`. Every table has the same columns: `snapshot_date`, `account`, `id`, "
        "`type`, `parent_id`, `extracted_at`, `attributes` (the record's full attributes as JSON, as the vendor "
        "sent them) and `loaded_at`. The fields of `attributes` the models read, shown by the spec or not, are "
        "declared once, by name and JSON path, in the vendor's contract (`sources/vendor_contract.yml`): a "
        "staging model reads them by name from `vendor.<endpoint>`, the raw table flattened by the contract.",
        "",
    ]
    lines += [f"- [`raw.{r.name}`](#raw{r.name}) ({r.endpoint})" for r in CATALOG] + [""]
    for r in CATALOG:
        lines += [f"### raw.{r.name}", "", r.description, ""]
        lines.append(f"- Endpoint: `{r.endpoint}`, read {_read_how(r)}")
        lines.append(f"- Spec: {r.spec}")
        if r.parent is not None:
            parent = "the parent record's `id`" if r.requests_from_parent is each_parent_record else "the search engine"
            lines.append(f"- `parent_id`: {parent}")
        if r.parent_404_tolerated:
            lines.append(f"- A 404 of a list means its `{r.parent}` record was deleted during the run: "
                         "listed in the manifest's `missing_parents`, not an error")
        lines.append("- Scope: " + ("the account's own records" if r.account_scoped
                                    else "a catalogue, the same rows for every account"))
        lines.append("")
    return "\n".join(lines)
