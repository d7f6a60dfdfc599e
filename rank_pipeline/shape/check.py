"""The blocking shape check: each day's committed records against the contract (absent, another type, empty)
and the day before (drift), a failure naming candidate paths and the contract to edit
(docs/concepts/shape-check.md, "The check").
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from rank_pipeline.shape import fitting
from rank_pipeline.shape.profile import EndpointProfile, PathStats, Profiler, attributes_table
from rank_pipeline.shape.thresholds import ThresholdTable
from rank_pipeline.snapshots.reader import list_snapshot_dates, read_manifest
from rank_pipeline.snapshots.schema import ENDPOINTS
from rank_pipeline.snapshots.storage import Store, store_for
from rank_pipeline.transform.contract import Contract, ContractField

__all__ = ["PathFinding", "ShapeResult", "check_profile", "check_snapshots"]

MAX_CANDIDATES = 3


@dataclass
class PathFinding:
    """One contracted path that failed on one day: ``problem`` (``absent``, ``wrong_type``, ``undecodable``,
    ``out_of_range``, ``null``, ``empty``, ``dropped`` or ``null_rise``), ``share`` (0..1), ``what`` (the
    line's words), ``candidates`` (paths that could hold it, formatted).
    """

    endpoint: str
    day: date | None
    path: str
    problem: str
    share: float
    what: str
    candidates: list[str] = field(default_factory=list)


@dataclass
class ShapeResult:
    """The shape check of one endpoint: ``days`` checked and their ``records``; ``findings`` (every failing path
    and day); ``unread`` (``{path: "type, share, e.g. value"}`` no contract entry reads); ``edit`` (the files a
    fix edits, the contract first).
    """

    endpoint: str
    days: list[date] = field(default_factory=list)
    records: int = 0
    findings: list[PathFinding] = field(default_factory=list)
    unread: dict[str, str] = field(default_factory=dict)
    edit: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.findings

    def lines(self) -> list[str]:
        """One line per failing path (and day): endpoint, path and share, candidates, the files to edit."""
        out = []
        edit = self.edit[0] if self.edit else "the vendor's contract"  # a remap is an edit of the contract alone
        for f in self.findings:
            seen = ("; seen instead: " + ", ".join(f.candidates)) if f.candidates else "; no candidate path seen"
            day = f" on {f.day}" if f.day is not None and len(self.days) > 1 else ""
            out.append(f"{f.endpoint}: {f.path} {f.what}{day}{seen}; edit {edit} "
                       "(`rank-pipeline profile --suggest` writes the edit for review)")
        return out


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def _types_ok(stats: PathStats, spec: ContractField) -> int:
    """Records whose non-null value has the declared type (an integer is also a number)."""
    allowed = {spec.type} | ({"integer"} if spec.type == "number" else set())
    return sum(n for t, n in stats.types.items() if t in allowed)


def _example(value: object) -> str:
    text = repr(value) if isinstance(value, str) else str(value).replace("True", "true").replace("False", "false")
    return text if len(text) <= 40 else text[:37] + "..."


def _similarity(a: str, b: str) -> float:
    """How alike two paths' names are, 0..1: the better of the whole paths and their last parts."""
    whole = difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()
    last = difflib.SequenceMatcher(None, a.rsplit(".", 1)[-1].lower(), b.rsplit(".", 1)[-1].lower()).ratio()
    return max(whole, last)


def _pool(spec: ContractField, endpoint: str, contract: Contract, profile: EndpointProfile,
          profiler: Profiler, observed: fitting.Observed | None) -> tuple[list[PathStats], fitting.Observed]:
    """The observed paths that could hold ``spec``'s value: no contracted leaf, values that fit the field
    (:mod:`rank_pipeline.shape.fitting`: its type, decoding, values and range); and the observation, made
    once per endpoint and day (``observed``, None the first time)."""
    if observed is None:
        leaves = [s for s in profile.paths.values()
                  if s.types and set(s.types) != {"object"} and not s.path.endswith("[*]") and s.path.count("[*]") <= 1
                  and not contract.reads(endpoint, s.path, set(s.types))]
        observed = fitting.observe(profiler, profile, leaves)
        profiler.values(profile, [s.path for s in leaves])
    pool = [s for s in observed.pool if s.path != spec.observed and isinstance(observed.fits(spec, s), fitting.Fit)]
    return pool, observed


def _describe(spec: ContractField, s: PathStats, profile: EndpointProfile) -> str:
    values = f" {s.minimum:g}..{s.maximum:g}" if s.minimum is not None and spec.type in ("integer", "number") else ""
    return (f"{s.path} ({s.type_label()}{values}, {_pct(profile.share(s.filled))} filled, "
            f"e.g. {_example(s.example)})")


def _assign_candidates(findings: list[tuple[PathFinding, ContractField]], endpoint: str, contract: Contract,
                       profile: EndpointProfile, profiler: Profiler) -> None:
    """Fill each finding's candidates: the closest names first, each observed path offered first to the
    missing path it resembles most (``engine.device`` to ``device``, not to ``keyword``); between equally
    unlike names, a path with nulls for a nullable field and a path never null for the others."""
    pools: dict[str, list[PathStats]] = {}
    observed: fitting.Observed | None = None
    for f, spec in findings:
        pools[f.path], observed = _pool(spec, endpoint, contract, profile, profiler, observed)
    best: dict[str, tuple[float, str]] = {}  # observed path -> (similarity, the missing path it fits best)
    for f, _ in findings:
        for s in pools[f.path]:
            score = _similarity(f.path, s.path)
            if score > best.get(s.path, (-1.0, ""))[0]:
                best[s.path] = (score, f.path)
    for f, spec in findings:
        def rank(s: PathStats, f=f, spec=spec) -> tuple:
            score, owner = best[s.path]
            taken = owner != f.path and score >= 0.5  # a close name of another missing path: theirs first
            nulls_fit = (s.null > 0) == spec.nullable
            similar = _similarity(f.path, s.path)
            return (taken, -(round(similar, 1) if similar >= 0.5 else 0.0), not nulls_fit, -s.filled, s.path)

        f.candidates = [_describe(spec, s, profile) for s in sorted(pools[f.path], key=rank)[:MAX_CANDIDATES]]


def decode_profile(contract: Contract, profile: EndpointProfile, profiler: Profiler) -> None:
    """Count ``profile``'s contracted fields (encoding, values, timestamp or range) as decoded, once, after adding
    paths that select array elements: a sentinel is null, a value that does not decode is ``undecodable``
    (:attr:`PathStats.undecodable`), a number out of range is listed (:attr:`PathStats.outside`).
    """
    if profile.decoded:
        return
    profile.decoded = True
    profile.paths.update(profiler.locate([f for f in contract.fields.get(profile.endpoint, ()) if f.selects]))
    for spec in contract.fields.get(profile.endpoint, ()):
        stats = profile.paths.get(spec.path)
        if (not spec.decoded and spec.range is None) or stats is None or not stats.filled or spec.type == "array":
            continue
        nulls, decoded = 0, 0
        undecodable: dict[str, int] = {}
        outside: dict[str, int] = {}
        for text, count in profiler.value_counts(spec.path).items():
            sent = json.loads(text)
            decodes, value = spec.decode(sent)
            if not decodes:
                undecodable[json.dumps(sent)[:40]] = count
            elif value is None:
                nulls += count
            else:
                decoded += count
                if spec.range is not None and isinstance(value, int | float) and not spec.range[0] <= value <= spec.range[1]:
                    outside[json.dumps(sent)[:40]] = count
        if spec.decoded:
            stats.null += nulls
            stats.types = {spec.type: decoded, **({"undecodable": sum(undecodable.values())} if undecodable else {})}
        stats.undecodable, stats.outside = undecodable, outside


def _values(counts: Mapping[str, int], profile: EndpointProfile, limit: int = 5) -> str:
    """``"-" in 12.0%, "n/a" in 0.5%`` of the most frequent values, and how many more."""
    shown = [f"{v} in {_pct(profile.share(n))}" for v, n in list(counts.items())[:limit]]
    more = f" and {len(counts) - limit} more values" if len(counts) > limit else ""
    return ", ".join(shown) + more


def _case_hint(spec: ContractField, values: Mapping[str, int]) -> str:
    """A hint when every value outside an enum is one of its values in another case."""
    if spec.value_map is None or spec.fold_case:
        return ""
    known = {str(k).lower() for k in spec.value_map}
    sent = [json.loads(v) if v.startswith('"') and v.endswith('"') else v for v in values]
    if all(isinstance(v, str) and v.lower() in known for v in sent):
        return " (the same values in another case: add fold_case: true if the vendor's case means nothing)"
    return ""


def _ancestor_type_change(spec: ContractField, profile: EndpointProfile) -> tuple[str, PathStats, str] | None:
    """The nearest key on the way to ``spec.path`` seen holding something other than what the path reads
    there (an object, or an array where a selector follows), as ``(observed path, stats, expected)``."""
    steps = spec.steps
    for i in range(len(steps) - 1, -1, -1):
        step = steps[i]
        if i == len(steps) - 1 and not step.selects:
            continue  # the leaf itself: its type is checked as the field's
        path = ".".join([*(s.observed for s in steps[:i]), step.key])
        expected = "array" if step.selects else "object"
        stats = profile.paths.get(path)
        if stats is not None and set(stats.types) - {expected}:
            return path, stats, expected
    return None


def check_profile(contract: Contract, thresholds: ThresholdTable, profile: EndpointProfile,
                  previous: EndpointProfile | None, profiler: Profiler, day: date | None = None,
                  previous_day: date | None = None, candidates: bool = True) -> list[PathFinding]:
    """The failing paths of one endpoint's day (``profile``), against the contract and ``previous`` (the
    previous committed day's profile, None on the first day). ``profiler`` holds the day's records (for the
    candidates' values; ``candidates=False`` leaves each finding's candidates empty)."""
    endpoint, total = profile.endpoint, profile.records
    findings: list[tuple[PathFinding, ContractField]] = []
    if total == 0:
        return []
    decode_profile(contract, profile, profiler)
    for spec in contract.fields.get(endpoint, ()):
        limits = thresholds.get(endpoint, spec.path)
        stats = profile.paths.get(spec.path, PathStats(spec.path))
        absent = 1 - profile.share(stats.present)
        finding: tuple[str, float, str] | None = None
        if absent > limits.max_absent_share:
            changed = _ancestor_type_change(spec, profile)
            if changed is not None:
                path, parent, expected = changed
                finding = ("wrong_type", absent,
                           f"absent in {_pct(absent)} of {total} records: {path} is "
                           + ", ".join(f"{t} in {_pct(profile.share(n))}" for t, n in sorted(parent.types.items())
                                       if t != expected)
                           + f" where the contract reads an {expected} (a type change, not a null)")
            else:
                finding = ("absent", absent, f"({spec.type}) absent in {_pct(absent)} of {total} records "
                                             "(the key is missing, not null)")
        if finding is None and stats.undecodable and spec.decoded:
            share = profile.share(sum(stats.undecodable.values()))
            if share > limits.max_wrong_type_share:
                finding = ("undecodable", share, f"does not decode as declared ({spec.describe_decoding()}): "
                                                 f"{_values(stats.undecodable, profile)} of {total} records"
                                                 + _case_hint(spec, stats.undecodable))
        if finding is None and stats.outside:
            share = profile.share(sum(stats.outside.values()))
            if share > limits.max_wrong_type_share:
                assert spec.range is not None  # outside is filled for a field with a range only
                finding = ("out_of_range", share, f"is outside {spec.range[0]:g}..{spec.range[1]:g}: "
                                                  f"{_values(stats.outside, profile)} of {total} records")
        if finding is None and stats.present and not spec.decoded:
            wrong = stats.filled - _types_ok(stats, spec)
            nulls = 0 if spec.nullable else stats.null
            if profile.share(wrong + nulls) > limits.max_wrong_type_share:
                kinds = ", ".join(f"{t} in {_pct(profile.share(n))}" for t, n in sorted(stats.types.items())
                                  if t != spec.type and not (spec.type == "number" and t == "integer"))
                if nulls:
                    kinds = ", ".join(x for x in (kinds, f"null in {_pct(profile.share(nulls))} (the contract says "
                                                  "never null)") if x)
                top = ""
                if wrong and spec.type != "array" and not set(stats.types) & {"object", "array"}:
                    counts = {v: n for v, n in profiler.value_counts(spec.path).items() if not spec.decode(json.loads(v))[0]}
                    top = f" (values: {_values(counts, profile)})" if counts else ""
                finding = ("wrong_type" if wrong else "null", profile.share(wrong + nulls),
                           f"is not {spec.type}: {kinds} of {total} records{top}")
        if finding is None and spec.nullable and total >= limits.min_records:
            null_share = profile.share(stats.null)
            if null_share > limits.max_null_share:
                finding = ("empty", null_share, f"({spec.type}) is null in {_pct(null_share)} of {total} records"
                                                f" (null means: {spec.null_means or 'no value'})")
        if finding is None and previous is not None and previous.records:
            before = previous.paths.get(spec.path, PathStats(spec.path))
            drop = previous.share(before.present) - profile.share(stats.present)
            rise = profile.share(stats.null) - previous.share(before.null)
            if drop > limits.max_present_drop:
                finding = ("dropped", drop, f"({spec.type}) present in {_pct(profile.share(stats.present))} of "
                                            f"records, {_pct(previous.share(before.present))} on {previous_day}")
            elif rise > limits.max_null_share_rise and total >= limits.min_records:
                finding = ("null_rise", rise, f"({spec.type}) null in {_pct(profile.share(stats.null))} of records, "
                                              f"{_pct(previous.share(before.null))} on {previous_day}")
        if finding is not None:
            problem, share, what = finding
            findings.append((PathFinding(endpoint, day, spec.path, problem, share, what), spec))
    if candidates:
        _assign_candidates(findings, endpoint, contract, profile, profiler)
    return [f for f, _ in findings]


def _unread(contract: Contract, profile: EndpointProfile) -> dict[str, str]:
    known = contract.paths(profile.endpoint)
    return {s.path: f"{s.type_label()}, {_pct(profile.share(s.present))} of records"
            for s in profile.paths.values() if s.path not in known and set(s.types) != {"object"}}


def _cached(cache_dir: Path | None, store: Store, endpoint: str, day: date,
            contract: Contract) -> tuple[Path | None, str]:
    """The cache file of one day's profile and the signature of the snapshot it profiles (the committed
    manifest, its write time included: a re-extracted day has another signature) and of the contract's fields
    of the endpoint (the counts are of decoded values)."""
    if cache_dir is None:
        return None, ""
    manifest = read_manifest(store, endpoint, day)
    fields = json.dumps([f.model_dump(mode="json") for f in contract.fields.get(endpoint, ())], sort_keys=True)
    signature = hashlib.sha256((manifest.model_dump_json() + fields).encode()).hexdigest()[:16]
    return Path(cache_dir) / endpoint / f"{day.isoformat()}.json", signature


def _load_profile(path: Path | None, signature: str) -> EndpointProfile | None:
    try:
        data = json.loads(path.read_text()) if path is not None else None
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("signature") != signature:
        return None
    profile = EndpointProfile(data["endpoint"], data["records"], decoded=True)
    for row in data["paths"]:
        profile.paths[row["path"]] = PathStats(row["path"], row["present"], row["null"], dict(row["types"]))
    return profile


def _store_profile(path: Path | None, signature: str, profile: EndpointProfile) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"signature": signature, "endpoint": profile.endpoint, "records": profile.records,
            "paths": [{"path": s.path, "present": s.present, "null": s.null, "types": s.types}
                      for s in profile.paths.values()]}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def mart_weights(models_dir: Path, cache_dir: Path | None = None) -> dict[tuple[str, str], int]:
    """``{(endpoint, path): mart columns}``: how many columns of the marts derive from each JSON path of the raw
    records (column lineage, :mod:`rank_pipeline.transform.lineage`); empty when the project cannot be read."""
    from rank_pipeline.transform import load_project
    from rank_pipeline.transform.errors import ProjectError
    from rank_pipeline.transform.lineage import project_lineage

    try:
        lineage = project_lineage(load_project(models_dir), cache_dir)
    except ProjectError:
        return {}
    weights: dict[tuple[str, str], int] = {}
    for relation, columns in lineage.columns.items():
        if relation.startswith("marts."):
            for column in columns:
                for ref in lineage.sources(relation, column):
                    if ref.relation.startswith("raw.") and ref.path:
                        key = (ref.relation.removeprefix("raw."), ref.path)
                        weights[key] = weights.get(key, 0) + 1
    return weights


def check_snapshots(snapshots_uri: Path | str | Store, contract: Contract, thresholds: ThresholdTable,
                    first: date, last: date, *, endpoints: Sequence[str] = ENDPOINTS,
                    edit: Mapping[str, Sequence[str]] | None = None,
                    contract_file: str | None = None, cache_dir: Path | None = None) -> dict[str, ShapeResult]:
    """The shape check of every committed day ``first .. last`` of ``endpoints`` against the contract and the
    committed day before; returns ``{endpoint: ShapeResult}`` (no committed day: passes). ``edit``: files named
    in a failure; ``contract_file``: how to name it; ``cache_dir``: each day's path counts kept.
    """
    store = store_for(snapshots_uri)
    results: dict[str, ShapeResult] = {}
    for endpoint in endpoints:
        result = results[endpoint] = ShapeResult(endpoint, edit=[contract_file or str(contract.path),
                                                                   *(edit or {}).get(endpoint, ())])
        committed = list_snapshot_dates(store, endpoint)
        previous: EndpointProfile | None = None
        previous_day: date | None = None
        for i, day in enumerate(committed):
            if day > last:
                break
            cache, signature = _cached(cache_dir, store, endpoint, day, contract)
            if day < first:
                if i + 1 < len(committed) and committed[i + 1] >= first:  # the day before the range
                    previous, previous_day = _load_profile(cache, signature), day
                    if previous is None:
                        with Profiler(endpoint, attributes_table(store, endpoint, day)) as profiler:
                            previous = profiler.profile()
                            decode_profile(contract, previous, profiler)
                        _store_profile(cache, signature, previous)
                continue
            with Profiler(endpoint, attributes_table(store, endpoint, day)) as profiler:
                profile = profiler.profile()
                decode_profile(contract, profile, profiler)
                _store_profile(cache, signature, profile)
                result.days.append(day)
                result.records += profile.records
                result.findings += check_profile(contract, thresholds, profile, previous, profiler, day, previous_day)
                for path, text in _unread(contract, profile).items():
                    result.unread.setdefault(path, text)
            previous, previous_day = profile, day
    if any(r.findings for r in results.values()):  # the paths the marts depend on most lead
        weights = mart_weights(contract.path.parent.parent, cache_dir)
        for result in results.values():
            result.findings.sort(key=lambda f: -weights.get((f.endpoint, f.path), 0))
            for f in result.findings:
                if weights.get((f.endpoint, f.path)):
                    f.what += f" (feeds {weights[(f.endpoint, f.path)]} mart columns)"
    return results
