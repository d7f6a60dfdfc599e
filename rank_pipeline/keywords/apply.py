"""Apply a keywords plan: create the missing combinations, all-or-nothing per call, never twice (spec
"Keyword create: body", "Limits" rules 2 and 7, "Errors").

:func:`apply_plan` re-plans and refuses before sending when the file has problems or the quota would not
last; groups creates into calls (:func:`group_calls`, at most :data:`MAX_COMBINATIONS_PER_CALL`); sends
each once (a lost response is read back, never resent blind; :data:`MAX_LOST_RESPONSES`); maps a 422 to
file lines. Steps: docs/concepts/keywords.md, "Apply".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from rank_pipeline.api import (
    QuotaExceededError,
    RankTrackerClient,
    RankTrackerError,
    ServerError,
    TransportError,
    ValidationError,
)
from rank_pipeline.keywords.plan import Key, Plan, Wanted, compare, read_tracked
from rank_pipeline.keywords.quota import read_quota
from rank_pipeline.keywords.schema import LoadedFile

__all__ = ["MAX_COMBINATIONS_PER_CALL", "MAX_LOST_RESPONSES", "ApplyFailed", "ApplyResult", "CreateCall",
           "apply_plan", "group_calls", "map_errors"]

log = logging.getLogger(__name__)

MAX_COMBINATIONS_PER_CALL = 500
"""Combinations (words x entries) one create call holds at most (our choice; the spec shows no maximum)."""
MAX_LOST_RESPONSES = 5
"""Lost create responses one apply tolerates (each followed by a read-back and a re-plan)."""

Entry = tuple[str, str, str, str]  # engine, device, location code, language


@dataclass(frozen=True)
class CreateCall:
    """One keyword create: ``words`` x ``entries`` at ``frequency``; ``origin`` maps each combination's
    key to the file's :class:`Wanted` row (for 422 mapping)."""

    domain_id: str
    frequency: str
    words: tuple[str, ...]
    entries: tuple[Entry, ...]
    origin: Mapping[Key, Wanted]

    @property
    def size(self) -> int:
        return len(self.words) * len(self.entries)

    def body(self) -> dict:
        """The wrapped create body (spec: without the ``keyword`` object it is a 400)."""
        return {"keyword": {
            "frequency": self.frequency,
            "words": list(self.words),
            "search_engines": [{"name": e, "device": d, "location": loc, "language": lang}
                               for e, d, loc, lang in self.entries],
        }}

    def keys(self) -> list[Key]:
        return [(w, *e) for w in self.words for e in self.entries]


def group_calls(domain_id: str, creates: list[Wanted],
                max_combinations: int = MAX_COMBINATIONS_PER_CALL) -> list[CreateCall]:
    """Group a domain's missing combinations into create calls whose products are exactly missing:
    words wanting the same entries at the same frequency share a call (docs/concepts/keywords.md, "Apply", step 2)."""
    by_word: dict[tuple[str, str], dict[Entry, Wanted]] = {}
    for w in creates:
        entry = (w.engine, w.device, w.location_code or w.location, w.language)
        by_word.setdefault((w.frequency, w.word), {})[entry] = w
    groups: dict[tuple[str, tuple[Entry, ...]], list[str]] = {}
    for (frequency, word), wanted in by_word.items():
        groups.setdefault((frequency, tuple(sorted(wanted))), []).append(word)
    calls = []
    for (frequency, entries), words in groups.items():
        per_call = max(1, max_combinations // len(entries))
        for start in range(0, len(words), per_call):
            chunk = tuple(words[start:start + per_call])
            origin = {(w, *e): by_word[(frequency, w)][e] for w in chunk for e in entries}
            calls.append(CreateCall(domain_id, frequency, chunk, entries, origin))
    return calls


def map_errors(call: CreateCall, error: ValidationError, loaded: LoadedFile) -> list[str]:
    """A 422's entries as ``<file>:<line>: <field>: <title>: <detail> (allowed: ...)`` lines, through
    each entry's ``source.pointer`` into ``call`` and back to the file rows it came from."""
    fields = {"name": "engine", "device": "device", "location": "location", "language": "language"}
    lines: list[str] = []
    for entry in error.errors or [{}]:
        source = entry["source"] if isinstance(entry.get("source"), dict) else {}
        pointer = source.get("pointer") or ""
        parts = pointer.strip("/").split("/")
        rows: list[tuple[Wanted, str]] = []
        if parts[0] == "frequency":
            rows = [(w, "frequency") for w in call.origin.values()]
        elif parts[0] == "words" and len(parts) > 1 and parts[1].isdigit() and int(parts[1]) < len(call.words):
            word = call.words[int(parts[1])]
            rows = [(w, "word") for k, w in call.origin.items() if k[0] == word]
        elif parts[0] == "search_engines" and len(parts) > 2 and parts[1].isdigit() \
                and int(parts[1]) < len(call.entries):
            e = call.entries[int(parts[1])]
            rows = [(w, fields.get(parts[2], "engine")) for k, w in call.origin.items() if k[1:] == e]
        meta = entry["meta"] if isinstance(entry.get("meta"), dict) else {}
        text = f"{entry.get('title') or entry.get('code') or 'invalid'}: {entry.get('detail') or ''}".rstrip(": ")
        if isinstance(meta.get("allowed"), list):
            text += f" (allowed: {', '.join(map(str, meta['allowed']))})"
        places = sorted({loaded.where(w.loc(f)) for w, f in rows}, key=lambda s: (len(s), s))
        if not places:
            places = [f"{loaded.path}: (create call at {pointer or 'body'})"]
        lines += [f"{place}: {text}" for place in places]
    return lines


@dataclass
class ApplyResult:
    """What apply did: keywords created (ids the API returned), calls sent, lost responses, re-reads."""

    created: set[str] = field(default_factory=set)
    combinations_created: int = 0
    calls: int = 0
    lost_responses: int = 0
    rereads: int = 0
    domains: int = 0

    def summary(self, plan: Plan) -> str:
        return (f"Applied: {self.combinations_created} keyword(s) created in {self.calls} create call(s) on "
                f"{self.domains} domain(s); {plan.existing} already tracked; {plan.untracked} tracked but not in "
                f"the file (never removed); {self.lost_responses} lost response(s), each read back and "
                f"re-planned ({self.rereads} re-read(s)).")


class ApplyFailed(RankTrackerError):
    """Apply stopped part-way: a create call was refused (422 mapped to file lines, or 402) or too many
    responses were lost. ``result`` holds what was created before; ``lines`` the file lines (422)."""

    def __init__(self, message: str, result: ApplyResult, lines: list[str] | None = None,
                 status: int | None = None):
        super().__init__(message, status=status)
        self.result = result
        self.lines = list(lines or [])


async def apply_plan(plan: Plan, clients: Mapping[str, RankTrackerClient], *,
                     max_lost: int = MAX_LOST_RESPONSES, echo=None) -> ApplyResult:
    """Create what ``plan`` (a fresh online plan without refusals) says is missing, ``echo`` telling each call;
    returns the :class:`ApplyResult` (docs/concepts/keywords.md, "Apply").

    Raises ApplyFailed (a 422 with file lines, a 402, more than ``max_lost`` lost responses) or ValueError
    (``plan`` has refusals or is offline).
    """
    if plan.refusals or plan.offline:
        raise ValueError("apply needs an online plan without problems or quota refusals")
    echo = echo or (lambda line: None)
    result = ApplyResult()
    for d in plan.domains:
        if not d.create or d.domain_id is None or d.account is None:  # an account exactly when an id
            continue
        result.domains += 1
        client = clients[d.account]
        wanted = d.create + d.exists
        calls = group_calls(d.domain_id, d.create)
        while calls:
            call = calls.pop(0)
            result.calls += 1
            try:
                body = await client.post_once(f"/v1/domains/{d.domain_id}/keywords", call.body())
            except ValidationError as exc:
                lines = map_errors(call, exc, plan.loaded)
                raise ApplyFailed(f"the API refused a create call on {d.name} with 422 (nothing of that call "
                                  f"was created; {result.combinations_created} keyword(s) created before): "
                                  + lines[0], result, lines, status=422) from None
            except QuotaExceededError as exc:
                raise ApplyFailed(f"the API refused a create call of {call.size} keyword(s) on {d.name} with 402 "
                                  f"over_quota (nothing of that call was created; {result.combinations_created} "
                                  f"created before): {exc.detail or ''}", result, status=402) from None
            except (TransportError, ServerError) as exc:
                result.lost_responses += 1
                echo(f"  ! create call on {d.name} ({call.size} combination(s)): response lost "
                     f"({getattr(exc, 'kind', None) or exc.status}); reading the domain's keywords back before "
                     "sending anything more")
                if result.lost_responses > max_lost:
                    raise ApplyFailed(f"{result.lost_responses} create responses were lost (the last on {d.name}); "
                                      "stopped without resending: run `rank-pipeline keywords apply` again, it "
                                      "re-plans from what exists", result) from None
                tracked = await read_tracked(client, d.domain_id)
                result.rereads += 1
                happened = sum(1 for k in call.keys() if k in tracked)
                result.combinations_created += happened
                compare(d, wanted, tracked)
                quota = await read_quota(client, d.account, len(d.create))
                if quota.refusal:
                    raise ApplyFailed(f"after a lost response, re-planning {d.name}: {quota.refusal}", result,
                                      status=402) from None
                calls = group_calls(d.domain_id, d.create)
                echo(f"  re-planned {d.name}: the lost call had created {happened} of {call.size}; "
                     f"{len(d.create)} still to create in {len(calls)} call(s)")
                continue
            records = body.get("data") if isinstance(body, dict) else None
            ids = {str(r.get("id")) for r in records or [] if isinstance(r, dict)}
            result.created |= ids
            result.combinations_created += call.size
            echo(f"  created {call.size} keyword(s) on {d.name}: {len(call.words)} word(s) x "
                 f"{len(call.entries)} engine entr{'y' if len(call.entries) == 1 else 'ies'} ({call.frequency})")
    return result
