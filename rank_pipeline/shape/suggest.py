"""A suggested remap (``rank-pipeline profile --suggest``): each failing contracted field matched to an unread
observed path that fits it (:mod:`rank_pipeline.shape.fitting`), best pair first, ties named, written as a
contract patch for review (:mod:`rank_pipeline.shape.contract_patch`). How: docs/concepts/shape-check.md.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from rank_pipeline.shape import fitting
from rank_pipeline.shape.check import check_profile
from rank_pipeline.shape.contract_patch import edited_contract, flow
from rank_pipeline.shape.profile import EndpointProfile, PathStats, Profiler
from rank_pipeline.shape.thresholds import ThresholdTable
from rank_pipeline.transform.contract import Contract, ContractField

__all__ = ["Assignment", "Suggestion", "suggest_remap"]

@dataclass
class Assignment:
    """One field of the contract remapped: its endpoint and name, the old and new path, the entry's keys to set
    (``encoding``, ``values``, ``fold_case``), the score, a note on the values, and the candidates tied with
    it (empty: none)."""

    endpoint: str
    spec: ContractField
    path: str
    updates: dict
    score: float
    note: str
    ties: list[str] = field(default_factory=list)

    @property
    def encoding(self) -> dict | None:
        """The encoding proposed, if any."""
        return self.updates.get("encoding")


@dataclass
class Suggestion:
    """The remap suggested for every endpoint, and the fields left without a candidate (with why)."""

    assignments: list[Assignment] = field(default_factory=list)
    unmatched: list[tuple[str, ContractField, str]] = field(default_factory=list)

    def notes(self) -> list[str]:
        """One line per field remapped or left unmatched (review these before applying the patch)."""
        lines = []
        for a in self.assignments:
            tie = f"; TIE with {', '.join(a.ties)}: choose by hand" if a.ties else ""
            keys = "".join(f"; {k} {flow(v)}" for k, v in a.updates.items())
            lines.append(f"{a.endpoint}.{a.spec.name}: {a.spec.path} -> {a.path} (score {a.score:.2f}; {a.note}{keys}{tie})")
        lines += [f"{e}.{f.name}: {f.path} has no candidate ({why})" for e, f, why in self.unmatched]
        return lines

    def patch(self, contract_file: Path, display: str) -> str:
        """A unified diff of ``contract_file`` (named ``display`` in the diff's headers), for ``git apply``."""
        old = contract_file.read_text()
        new = edited_contract(old, [(a.endpoint, a.spec.name, a.path, a.updates) for a in self.assignments])
        diff = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                    f"a/{display}", f"b/{display}")
        return "".join(diff)


def suggest_remap(contract: Contract, thresholds: ThresholdTable, records: Mapping[str, pa.Table]) -> Suggestion:
    """The remap of every endpoint of ``records`` (``{endpoint: Arrow table with a string column
    attributes}``, a day's snapshots or a live sample), as the module doc says."""
    out = Suggestion()
    for endpoint, table in records.items():
        with Profiler(endpoint, table) as profiler:
            profile = profiler.profile()
            _suggest_endpoint(out, contract, thresholds, profile, profiler)
    return out


def _closeness(spec: ContractField, stats: PathStats) -> float:
    """How close a refused candidate came: the name's likeness, plus one when its values are of the kind the
    field reads (a number for a number: refused for its range or its array, not its type)."""
    numeric = {"integer", "number"}
    kind = set(stats.types) <= numeric if spec.type in numeric else (
        set(stats.types) <= {"string", "integer", "number"} if spec.type == "timestamp" else spec.type in stats.types)
    return fitting.name_score(spec, stats.path) + (1.0 if kind else 0.0)


def _suggest_endpoint(out: Suggestion, contract: Contract, thresholds: ThresholdTable, profile: EndpointProfile,
                      profiler: Profiler) -> None:
    endpoint = profile.endpoint
    failing = [f for f in check_profile(contract, thresholds, profile, None, profiler, candidates=False)
               if f.problem in ("absent", "wrong_type", "undecodable")]
    fields = [contract.field(endpoint, f.path) for f in failing]
    wanted = [f for f in fields if f is not None]
    if not wanted:
        return
    own = {f.observed for f in wanted}
    pool = [s for s in profile.paths.values() if s.types and set(s.types) != {"object"} and not s.path.endswith("[*]")
            and s.path.count("[*]") <= 1
            and (not contract.reads(endpoint, s.path, set(s.types)) or s.path in own)]
    observed = fitting.observe(profiler, profile, pool)  # each candidate's values read once, for every field
    scored: list[tuple[float, str, str, fitting.Fit]] = []
    refused: dict[str, list[tuple[float, str, str]]] = {}
    for spec in wanted:
        for stats in pool:
            fit = observed.fits(spec, stats)
            if isinstance(fit, str):
                refused.setdefault(spec.name, []).append((_closeness(spec, stats), stats.path, fit))
                continue
            fit.score = fitting.score(spec, stats, stats.example, fit)
            if fit.score < 0:
                refused.setdefault(spec.name, []).append(
                    (_closeness(spec, stats), stats.path, f"its values look like {fitting.pattern(stats.example)}, "
                                                                f"the field's like {fitting.expected(spec)[0]}"))
                continue
            scored.append((fit.score, spec.name, stats.path, fit))
    scored.sort(key=lambda t: (-t[0], t[1], t[2]))
    taken_fields: set[str] = set()
    taken_paths: set[str] = set()
    by_field: dict[str, list[tuple[float, str]]] = {}
    for score, name, path, _ in scored:
        by_field.setdefault(name, []).append((score, path))
    for score, name, path, fit in scored:
        if name in taken_fields or path in taken_paths:
            continue
        spec = contract.named(endpoint, name)
        ties = [p for s, p in by_field[name] if p != path and p not in taken_paths and abs(s - score) < 0.01]
        taken_fields.add(name)
        taken_paths.add(path)
        out.assignments.append(Assignment(endpoint, spec, fit.path, fit.updates, score, fit.note, ties))
    for spec in wanted:
        if spec.name not in taken_fields:
            near = sorted(refused.get(spec.name, []), key=lambda t: (-t[0], t[1]))
            why = (f"the closest, {near[0][1]}, was refused: {near[0][2]}" if near
                   else "no path the vendor sends is left")
            out.unmatched.append((endpoint, spec, why))
