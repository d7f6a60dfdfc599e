"""What the vendor really sends: every JSON path of a day's records with records present, null and per JSON
type (absent and null apart), from one DuckDB query (docs/concepts/shape-check.md, "The profile").
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from rank_pipeline.snapshots.reader import list_snapshot_dates, snapshot_files
from rank_pipeline.snapshots.schema import ENDPOINTS, SnapshotError
from rank_pipeline.snapshots.storage import Store, store_for
from rank_pipeline.transform.contract import ContractField
from rank_pipeline.transform.json_paths import ABSENT

__all__ = ["EndpointProfile", "PathStats", "Profiler", "attributes_table", "profile_day", "profile_records"]

JSON_TYPES: dict[str, str] = {
    "VARCHAR": "string", "UBIGINT": "integer", "BIGINT": "integer", "HUGEINT": "integer",
    "UHUGEINT": "integer", "DOUBLE": "number", "BOOLEAN": "boolean", "NULL": "null", "JSON": "object",
}
"""DuckDB's ``json_structure`` type names -> JSON types (``JSON``: an empty object or mixed values)."""


@dataclass
class PathStats:
    """One path of an endpoint's records, counts in records: ``path`` (below ``attributes``, ``tagIds[*]``),
    ``present`` (key held), ``null`` (JSON null), ``types`` (``{JSON type: records}`` of non-null values);
    ``distinct``, ``example``, ``minimum``, ``maximum`` from :meth:`Profiler.values`; ``undecodable``,
    ``outside`` (``{value as sent: records}``, the check's).
    """

    path: str
    present: int = 0
    null: int = 0
    types: dict[str, int] = field(default_factory=dict)
    distinct: int | None = None
    example: object = None
    minimum: float | None = None
    maximum: float | None = None
    undecodable: dict[str, int] = field(default_factory=dict)
    outside: dict[str, int] = field(default_factory=dict)

    @property
    def filled(self) -> int:
        """Records where the value is present and not null."""
        return self.present - self.null

    def type_label(self) -> str:
        """The types seen, most frequent first (``integer``, ``integer|string``); ``null`` when only nulls."""
        ordered = sorted(self.types, key=lambda t: (-self.types[t], t))
        return "|".join(ordered) if ordered else "null"


@dataclass
class EndpointProfile:
    """Every path observed in one endpoint's records (a day or a live sample): ``endpoint``, ``records`` read,
    ``paths`` (``{path: PathStats}`` in first-seen order), ``decoded`` (encoded fields counted as decoded).
    """

    endpoint: str
    records: int
    paths: dict[str, PathStats] = field(default_factory=dict)
    decoded: bool = False

    def share(self, count: int) -> float:
        """``count`` as a share of the records (0.0 when there is none)."""
        return count / self.records if self.records else 0.0

    def to_json(self) -> dict:
        """JSON-safe: ``{"endpoint", "records", "paths": [{path, types, present_share, null_share, ...}]}``."""
        return {"endpoint": self.endpoint, "records": self.records, "paths": [
            {"path": s.path, "types": dict(s.types), "present": s.present, "null": s.null,
             "present_share": round(self.share(s.present), 6), "null_share": round(self.share(s.null), 6),
             "distinct": s.distinct, "example": s.example}
            for s in self.paths.values()]}


def _walk(structure: object, prefix: str, weight: int, out: dict[str, PathStats], element: bool = False) -> None:
    """Add one record structure (``json_structure``'s JSON, parsed) under ``prefix`` to ``out``."""
    for key, value in structure.items() if isinstance(structure, dict) else ():
        path = f"{prefix}.{key}" if prefix else key
        stats = out.setdefault(path, PathStats(path))
        stats.present += weight
        if isinstance(value, dict):
            stats.types["object"] = stats.types.get("object", 0) + weight
            _walk(value, path, weight, out)
        elif isinstance(value, list):
            stats.types["array"] = stats.types.get("array", 0) + weight
            inner = value[0] if value else "NULL"
            if inner != "NULL":  # an empty array (or one of nulls) tells nothing of its elements
                item = out.setdefault(f"{path}[*]", PathStats(f"{path}[*]"))
                item.present += weight
                if isinstance(inner, dict):
                    item.types["object"] = item.types.get("object", 0) + weight
                    _walk(inner, f"{path}[*]", weight, out)
                elif isinstance(inner, list):
                    item.types["array"] = item.types.get("array", 0) + weight
                else:
                    kind = JSON_TYPES.get(str(inner), "object")
                    item.types[kind] = item.types.get(kind, 0) + weight
        elif value == "NULL":
            stats.null += weight
        else:
            kind = JSON_TYPES.get(str(value), "object")
            stats.types[kind] = stats.types.get(kind, 0) + weight


def _kind(value: object) -> str:
    """The JSON type of a parsed value (``null`` for None)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "object")


def _json_path(path: str) -> str:
    """A dotted path (``a.b[*]``) as a DuckDB JSON path (``$."a"."b"[*]``), keys quoted."""
    parts = []
    for part in path.split("."):
        star = part.endswith("[*]")
        name = part[:-3] if star else part
        parts.append('"' + name.replace('"', '\\"') + '"' + ("[*]" if star else ""))
    return "$." + ".".join(parts)


def _each(paths: Sequence[str]) -> str:
    """A SELECT of ``(i, v)``: each record's JSON value at each of ``paths`` (no ``[*]``), ``i`` the path's index
    (one parse per record for all of them)."""
    listed = ", ".join("'" + _json_path(p).replace("'", "''") + "'" for p in paths)
    return (f"select unnest(range({len(paths)})) as i, unnest(json_extract(attributes::json, [{listed}])) as v "
            "from records")


@functools.cache
def _in_memory() -> duckdb.DuckDBPyConnection:
    """The process's one in-memory DuckDB for profiling: each :class:`Profiler` opens a connection to it
    (``cursor()``, about a millisecond) instead of a database of its own (tens of milliseconds each, seven
    times a day's shape check)."""
    return duckdb.connect()


class Profiler:
    """The records of one endpoint (an Arrow table with a string column ``attributes``) in an in-memory
    DuckDB; :meth:`profile` for the paths, :meth:`values` for their distinct counts and examples."""

    def __init__(self, endpoint: str, attributes: pa.Table):
        self.endpoint = endpoint
        self._con = _in_memory().cursor()  # its own connection: ``records`` is registered on it alone
        self._con.register("records", attributes)
        self.records = attributes.num_rows
        self._attributes = attributes
        self._located: dict[str, dict[str, int]] = {}

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Profiler:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def profile(self) -> EndpointProfile:
        """Every path with its presence, nulls and types (one parse per record)."""
        result = EndpointProfile(self.endpoint, self.records)
        rows = self._con.execute(
            "select json_structure(attributes::json) as s, count(*) from records "
            "where attributes is not null group by 1").fetchall()
        for structure, count in rows:
            _walk(json.loads(structure), "", int(count), result.paths)
        return result

    def locate(self, fields: Sequence[ContractField]) -> dict[str, PathStats]:
        """``{field path: PathStats}`` of contracted fields selecting array elements (``serp[0].rank``,
        ``engines[?name=google].rank``, ``labels[*].uuid``), found as :meth:`ContractField.locate` finds them; a
        projection's type is ``array`` when every element has the field's ``items`` type, else ``array of <types>``.
        """
        out = {f.path: PathStats(f.path) for f in fields}
        counts: dict[str, dict[str, int]] = {f.path: {} for f in fields}
        if not fields:
            return out
        bases = list(dict.fromkeys(f.array_base[0] for f in fields))
        listed = ", ".join("'" + _json_path(".".join(b)).replace("'", "''") + "'" for b in bases)
        rows = self._con.execute(  # the arrays alone leave DuckDB: each record's small part parsed here
            f"select json_extract(attributes::json, [{listed}])::varchar[] from records "
            "where attributes is not null").fetchall()
        at = {b: i for i, b in enumerate(bases)}
        for (found,) in rows:
            arrays = [ABSENT if text is None else json.loads(text) for text in found]
            for f in fields:
                present, value = f.locate_in(arrays[at[f.array_base[0]]])
                if not present:
                    continue
                stats = out[f.path]
                stats.present += 1
                if value is None:
                    stats.null += 1
                    continue
                kind = _kind(value)
                if isinstance(value, list):
                    kinds = {_kind(v) for v in value} - {f.items or "string"}
                    kind = "array" if not kinds else "array of " + "|".join(sorted(kinds))
                else:
                    key = json.dumps(value)
                    counts[f.path][key] = counts[f.path].get(key, 0) + 1
                stats.types[kind] = stats.types.get(kind, 0) + 1
        for path, found in counts.items():
            self._located[path] = dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0])))
        return out

    def value_counts(self, path: str) -> dict[str, int]:
        """``{value as JSON text: records}`` of the non-null values of ``path`` (a scalar path, or a field
        path :meth:`locate` found), most frequent first."""
        if path in self._located:
            return self._located[path]
        rows = self._con.execute(
            f"select v::varchar, count(*) from (select json_extract(attributes::json, '{_json_path(path)}') as v "
            "from records) where v is not null and json_type(v) <> 'NULL' group by 1 order by 2 desc, 1").fetchall()
        return {str(v): int(n) for v, n in rows}

    def element_counts_of(self, paths: Sequence[str]) -> dict[str, dict[str, int]]:
        """``{path: {value as JSON text: elements}}`` of the non-null values at ``paths`` through one array
        each (``results.serp[*].rank``: every element's rank; ``tagIds``: every element), most frequent first;
        each record's JSON parsed once for all of them."""
        if not paths:
            return {}
        arrays = [p.split("[*]", 1)[0] for p in paths]
        rests = [p.split("[*]", 1)[1].lstrip(".") if "[*]" in p else "" for p in paths]
        value = "case i " + " ".join(
            f"when {i} then " + (f"json_extract(e, '{_json_path(r)}')" if r else "e") for i, r in enumerate(rests)) + " end"
        return self._counted(
            f"with found as ({_each(arrays)}), elements as (select i, unnest(json_extract(v, '$[*]')) as e "
            f"from found where json_type(v) = 'ARRAY') select i, {value} as v from elements", paths)

    def longest_arrays(self, paths: Sequence[str]) -> dict[str, int]:
        """``{path: the most elements the array at path holds in one record}`` (paths without ``[*]``; 0: none),
        each record's JSON parsed once for all of them."""
        if not paths:
            return {}
        rows = self._con.execute(f"select i, max(json_array_length(v)) from ({_each(paths)}) "
                                 "where json_type(v) = 'ARRAY' group by i").fetchall()
        found = {paths[i]: int(n or 0) for i, n in rows}
        return {p: found.get(p, 0) for p in paths}

    def value_counts_of(self, paths: Sequence[str]) -> dict[str, dict[str, int]]:
        """``{path: value_counts(path)}`` of scalar ``paths``, each record's JSON parsed once for all of them."""
        if not paths:
            return {}
        return self._counted(_each(paths), paths)

    def _counted(self, source: str, paths: Sequence[str]) -> dict[str, dict[str, int]]:
        """``{path: {value as JSON text: count}}``, most frequent first, of ``source``'s rows ``(i, v)`` (``i``
        the index of a path in ``paths``; null and JSON null values left out)."""
        rows = self._con.execute(
            f"select i, v::varchar as t, count(*) as n from ({source}) where v is not null and json_type(v) <> 'NULL' "
            "group by i, t order by i, n desc, t").fetchall()
        out: dict[str, dict[str, int]] = {p: {} for p in paths}
        for i, v, n in rows:
            out[paths[i]][str(v)] = int(n)
        return out

    def values(self, profile: EndpointProfile, paths: Iterable[str] | None = None) -> None:
        """Fill ``distinct``, ``example`` (the most frequent non-null value, up to 80 characters) and, for
        numbers, ``minimum``/``maximum`` of ``paths`` (default every path) of ``profile``, in place."""
        wanted = [p for p in (paths if paths is not None else profile.paths) if p in profile.paths]
        for path in wanted:
            stats = profile.paths[path]
            if set(stats.types) <= {"object"}:
                continue  # an object's own value is its children
            numeric = bool(set(stats.types) & {"integer", "number"}) and not set(stats.types) - {"integer", "number"}
            source = (f"select unnest(json_extract(attributes::json, '{_json_path(path)}')) as v from records"
                      if "[*]" in path else
                      f"select json_extract(attributes::json, '{_json_path(path)}') as v from records")
            query = (f"with vals as ({source}), filled as (select v from vals where v is not null "
                     f"and json_type(v) <> 'NULL') select count(distinct v), "
                     f"(select v::varchar from filled group by v order by count(*) desc, v::varchar limit 1)"
                     + (", min(v::double), max(v::double)" if numeric else "") + " from filled")
            row = self._con.execute(query).fetchone()
            assert row is not None  # an aggregate without group by: one row
            stats.distinct = int(row[0])
            example = row[1]
            if example is not None:
                try:
                    example = json.loads(example)
                except ValueError:
                    pass
                if isinstance(example, str) and len(example) > 80:
                    example = example[:77] + "..."
            stats.example = example
            if numeric:
                stats.minimum, stats.maximum = row[2], row[3]


def attributes_table(snapshots_uri: Path | str | Store, endpoint: str, day: date) -> pa.Table:
    """The ``attributes`` column of one committed snapshot (every account), as an Arrow table.

    Raises:
        rank_pipeline.snapshots.schema.SnapshotError: no committed snapshot of ``endpoint`` for ``day``, or
            one of its files is missing or unreadable.
    """
    store = store_for(snapshots_uri)
    tables = []
    for path in snapshot_files(store, endpoint, day):
        try:
            # one file: ParquetFile, not read_table, whose dataset module imports pandas (a third of a second)
            tables.append(pq.ParquetFile(path, filesystem=store.fs).read(columns=["attributes"]))
        except (OSError, pa.ArrowException) as exc:  # listed in the manifest, but missing or damaged
            raise SnapshotError(
                f"the {endpoint} snapshot for {day} is damaged: {store.display(path)} is listed in its manifest "
                f"but cannot be read ({exc}); re-extract {endpoint} for {day} or restore the file from a backup"
            ) from exc
    if not tables:
        return pa.table({"attributes": pa.array([], pa.string())})
    return pa.concat_tables(tables)


def profile_records(endpoint: str, records: Sequence[Mapping], *, values: bool = True) -> EndpointProfile:
    """The profile of API records (``{"id", "type", "attributes"}`` dicts, e.g. a live sample)."""
    texts = [json.dumps(r.get("attributes")) if isinstance(r, Mapping) and r.get("attributes") is not None
             else None for r in records]
    with Profiler(endpoint, pa.table({"attributes": pa.array(texts, pa.string())})) as profiler:
        result = profiler.profile()
        if values:
            profiler.values(result)
    return result


def profile_day(snapshots_uri: Path | str | Store, day: date | None = None, *,
                endpoints: Sequence[str] = ENDPOINTS, values: bool = True) -> tuple[date, dict[str, EndpointProfile]]:
    """The profile of each endpoint's committed snapshot of ``day`` (default the latest): ``(day, {endpoint:
    EndpointProfile})``, endpoints without that day left out. Raises LookupError: nothing committed under
    ``snapshots_uri`` (one line saying what to run).
    """
    store = store_for(snapshots_uri)
    if day is None:
        days = sorted({d for e in endpoints for d in list_snapshot_dates(store, e)})
        if not days:
            raise LookupError(f"no committed snapshot under {store.display(store.root)}: run "
                              "`rank-pipeline run` (or `extract`) first, or profile the API with --live N")
        day = days[-1]
    profiles: dict[str, EndpointProfile] = {}
    for endpoint in endpoints:
        if day not in list_snapshot_dates(store, endpoint):
            continue
        with Profiler(endpoint, attributes_table(store, endpoint, day)) as profiler:
            profiles[endpoint] = profiler.profile()
            if values:
                profiler.values(profiles[endpoint])
    return day, profiles
