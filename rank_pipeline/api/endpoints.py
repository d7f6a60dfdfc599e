"""The API resources the pipeline reads, each declared once (spec "Resources and their fields", "Endpoints").

One :class:`Endpoint` per resource, in the spirit of dlt's ``rest_api`` resource config: its path,
its parent resource and how a parent record turns into the child's requests, the fields the spec shows
(flattened into the snapshot), a description, whether a 404 of the parent is tolerated, pagination.
Everything else is derived from :data:`CATALOG`:

- the extraction fan-out (:mod:`rank_pipeline.extract.day`: which lists are read, in which order, children
  of which parent, which lists are checkpointed for a resume);
- the snapshot schema (:data:`rank_pipeline.snapshots.schema.ENDPOINTS`, :data:`~rank_pipeline.snapshots.schema.SPEC_FIELDS`);
- the Dagster asset specs and their descriptions (:mod:`rank_pipeline.defs.extract_assets`,
  :mod:`rank_pipeline.defs.warehouse_assets`);
- the raw part of the data dictionary (:func:`render_markdown`, written by ``rank-pipeline docs``).

Adding an endpoint is one more entry here plus its staging model. Fields the spec marks "not shown" are
never declared: they stay in the snapshot's ``attributes`` JSON; the one not-shown field the extractor
needs (which search engine a keyword is tracked on) is read by its name in the vendor's contract, through
:mod:`rank_pipeline.api.fields`.

This module imports neither Dagster nor pyarrow: field types are named (:data:`FIELD_TYPES`) and mapped
to Arrow by the snapshot writer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rank_pipeline.api.fields import RecordFields, keyword_location_code, keyword_search_engines

__all__ = [
    "CATALOG",
    "COMMON_COLUMNS",
    "FIELD_TYPES",
    "Endpoint",
    "ListRequest",
    "SpecField",
    "by_name",
    "children_of",
    "raw_column_descriptions",
    "raw_docs",
    "render_markdown",
    "endpoint_names",
]

FieldType = Literal["string", "int64", "bool"]
FIELD_TYPES: tuple[str, ...] = ("string", "int64", "bool")
"""The field types a declaration may name (Arrow ``string``, ``int64``, ``bool_``)."""


@dataclass(frozen=True)
class SpecField:
    """A field the spec shows, flattened into its own snapshot column.

    ``path`` is the key path under the record's ``attributes`` (``("keywords", "usage")`` reads
    ``attributes.keywords.usage``); a missing key or a non-object on the way gives null.
    """

    column: str
    type: FieldType
    path: tuple[str, ...]
    description: str

    def get(self, attributes: Mapping[str, Any]) -> Any:
        """The field's value in ``attributes``, or None."""
        value: Any = attributes
        for key in self.path:
            if not isinstance(value, Mapping):
                return None
            value = value.get(key)
        return value


@dataclass(frozen=True)
class ListRequest:
    """One list (or single read) of a resource: ``GET path?params``.

    ``parent_id`` goes to the snapshot's ``parent_id`` column (the domain's id for a domain's keywords,
    the search engine for a catalogue row). ``parent_record_id`` is set when the list belongs to one
    parent record: the list is dropped when that record was deleted while the parent list was read, and
    its checkpoint is reused by a resumed run only when that record is unchanged.
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

    Spec: a keyword's ``location.code`` is the geo-target id; ``GET /v1/locations?code=&search_engine=``.
    The engine is not shown: read through :func:`rank_pipeline.api.fields.keyword_search_engines`.
    """
    attributes = record.get("attributes") or {}
    code = keyword_location_code(attributes, fields)
    if code is not None:
        for engine in keyword_search_engines(attributes, fields):
            yield ListRequest(resource.path, (("code", code), ("search_engine", engine)), parent_id=engine)


def languages_of_keyword(resource: Endpoint, record: Mapping[str, Any], fields: RecordFields) -> Iterator[ListRequest]:
    """One list per search engine a keyword may be tracked on (``GET /v1/languages?search_engine=``)."""
    for engine in keyword_search_engines(record.get("attributes") or {}, fields):
        yield ListRequest(resource.path, (("search_engine", engine),), parent_id=engine)


@dataclass(frozen=True)
class Endpoint:
    """One API resource as the pipeline reads it.

    Attributes:
        name: the snapshot folder, raw table and asset key suffix (``snapshots/<name>``, ``raw.<name>``).
        path: the endpoint (``{parent_id}`` is the parent record's id for a child of a resource).
        description: one sentence for asset descriptions and the docs.
        spec: the spec section that shows the resource.
        fields: the fields the spec shows, flattened into snapshot columns after the common ones.
        paginated: a list with the four pagination headers (spec "Limits"), or a single read
            (``data`` is one object, e.g. ``GET /v1/account/usage``).
        parent: the resource whose records this one is read for (None: read once per account).
        requests_from_parent: how one parent record turns into this resource's lists; requests are
            de-duplicated per account, so many keywords pointing at one location read it once.
        parent_404_tolerated: a 404 of a child list means the parent was deleted between its list
            and the child read; the parent id goes to the manifest's ``missing_parents``, the run goes on.
        checkpointed: each list is checkpointed for a resumed run of the same day
            (:mod:`rank_pipeline.extract.resume`); top-level lists are always read again.
        account_scoped: the records belong to the account (spec "Authentication" rule 4); False for the
            catalogues, whose rows are the same for every account that reads them.
    """

    name: str
    path: str
    description: str
    spec: str
    fields: tuple[SpecField, ...] = ()
    paginated: bool = True
    parent: str | None = None
    requests_from_parent: RequestsFromParent = each_parent_record
    parent_404_tolerated: bool = False
    checkpointed: bool = False
    account_scoped: bool = True

    def top_level_request(self) -> ListRequest:
        """The one request of a resource without a parent."""
        if self.parent is not None:
            raise ValueError(f"{self.name} is read per {self.parent} record, not once")
        return ListRequest(self.path)

    @property
    def endpoint(self) -> str:
        """``GET <path>`` as the docs and asset descriptions show it."""
        return f"GET {self.path}"


def _f(column: str, type_: FieldType, path: str, description: str) -> SpecField:
    return SpecField(column, type_, tuple(path.split(".")), description)


CATALOG: tuple[Endpoint, ...] = (
    Endpoint(
        name="domains",
        path="/v1/domains",
        description="Domains of each account, one Parquet snapshot per day.",
        spec='"Resources and their fields: Domain"',
        fields=(
            _f("domain", "string", "domain", "The tracked domain."),
            _f("host", "string", "host", "The tracked host."),
            _f("match_type", "string", "matchType", "How URLs are matched to the domain (`any` is a value)."),
            _f("project_name", "string", "projectName", "The domain's project name."),
        ),
    ),
    Endpoint(
        name="keywords",
        path="/v1/domains/{parent_id}/keywords",
        description="Keywords of each domain with their SERP position.",
        spec='"Resources and their fields: Keyword"',
        parent="domains",
        parent_404_tolerated=True,
        checkpointed=True,
        fields=(_f("location_code", "string", "location.code", "The geo-target id of the keyword's location."),),
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
        fields=(
            _f("api_enabled", "bool", "apiEnabled", "The plan includes API access."),
            _f("keywords_usage", "int64", "keywords.usage", "Keywords tracked."),
            _f("keywords_limit", "int64", "keywords.limit", "Keywords the plan allows."),
            _f("keywords_remaining", "int64", "keywords.remaining", "Keywords left under the limit."),
            _f("data_rows_usage", "int64", "dataRows.usage", "Data rows used in the billing cycle."),
            _f("data_rows_limit", "int64", "dataRows.limit", "Data rows the plan allows per cycle."),
            _f("data_rows_remaining", "int64", "dataRows.remaining", "Data rows left in the cycle."),
        ),
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
        fields=(_f("code", "string", "code", "The value to send as the catalogue value."),),
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
        fields=(_f("code", "string", "code", "The value to send as the catalogue value."),),
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
        columns = [f.column for f in r.fields]
        if len(set(columns)) != len(columns):
            raise ValueError(f"resource {r.name!r}: a column is declared twice")
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
    "attributes": "The record's full attributes as JSON: the fields the spec marks \"not shown\" are read "
                  "from here by the staging models only.",
    "loaded_at": "When the row was loaded into the warehouse (UTC).",
}
"""The columns every raw table has, before its declared fields (docs/concepts/completeness.md, "Snapshots")."""


def raw_column_descriptions(name: str) -> dict[str, str]:
    """``{column: description}`` of ``raw.<name>``: :data:`COMMON_COLUMNS`, then its declared fields.

    Raises:
        KeyError: no resource ``name``.
    """
    resource = by_name(name)
    return {**COMMON_COLUMNS, **{f.column: f"{f.description} From `attributes.{'.'.join(f.path)}`."
                                 for f in resource.fields}}


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

    Columns: the snapshot's common columns (docs/concepts/completeness.md, "Snapshots"), then the declared
    fields; everything else the API returns stays in ``attributes``.
    """
    lines = [
        "## raw",
        "",
        "One table per API resource, loaded from the Parquet snapshots; generated from the declarations in "
        "`rank_pipeline/api/endpoints.py`. Every table has the common columns `snapshot_date`, `account`, `id`, "
        "`type`, `parent_id`, `extracted_at` and `attributes` (the record's full attributes as JSON: "
        "fields the spec marks \"not shown\" are read from it by the staging models only), then the fields "
        "the spec shows, below.",
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
        if r.fields:
            lines += ["| column | description |", "|---|---|"]
            lines += [f"| `{f.column}` ({f.type}) | {f.description} From `attributes.{'.'.join(f.path)}`. |"
                      for f in r.fields]
        else:
            lines.append("No field shown by the spec: every attribute stays in `attributes`.")
        lines.append("")
    return "\n".join(lines)
