"""One day's extraction: every resource of every account into Parquet snapshots, in one asyncio loop.

What is read, per account, is derived from the declarations in :data:`rank_pipeline.api.endpoints.CATALOG`
(spec "Endpoints"); with today's declarations:

1. the single reads first: ``GET /v1/account/usage`` (its ``Date`` header tells the source's today);
2. every top-level list at once: ``GET /v1/domains`` and ``GET /v1/tags`` (all pages);
3. when all of a resource's lists are done, its children, concurrently: for every domain
   ``GET /v1/domains/{uuid}/keywords`` and ``.../competitors``; for the keywords, the reference rows
   they point to: ``GET /v1/locations?code=<code>&search_engine=<engine>`` for every distinct
   (engine, location code) and ``GET /v1/languages?search_engine=<engine>`` for every engine in use.

All accounts run concurrently, each through its own :class:`~rank_pipeline.api.RankTrackerClient`
(its key's pacer), all sharing one per-IP pacer. Records stream page by page into one
:class:`~rank_pipeline.snapshots.writer.SnapshotWriter` per resource; nothing is held whole in memory except
the ids needed for de-duplication and the (de-duplicated) requests of the children.

Concurrency is structured (:class:`asyncio.TaskGroup`): a fatal error in one list (a rejected key, a
plan without API access, the source unreachable) cancels every sibling list and account before the
clients close, and the error itself is raised (not an exception group). The day's snapshots are
committed together only when every account finished: a fatal error aborts every writer and leaves
earlier snapshots, including an earlier snapshot of the same day, untouched. A parent deleted during the
run (404 on its children, for resources declared ``parent_404_tolerated``) is not fatal: it is listed
in the manifest under ``missing_parents``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import httpx
import msgspec

from rank_pipeline.api import (
    ClientConfig,
    ListResult,
    NotFoundError,
    RankTrackerClient,
    SlidingWindowLimiter,
)
from rank_pipeline.api.endpoints import CATALOG, Endpoint, ListRequest, children_of
from rank_pipeline.api.listing import RawRecord
from rank_pipeline.errors import RankPipelineError
from rank_pipeline.extract.concurrency import run_all
from rank_pipeline.extract.parent_reads import ParentReads
from rank_pipeline.extract.resume import ListSpool, ResumeArea, fingerprint
from rank_pipeline.settings import Shard, models_dir
from rank_pipeline.snapshots.manifest import AccountStats, KeyStats, ListsReport, SnapshotManifest
from rank_pipeline.snapshots.schema import records_table
from rank_pipeline.snapshots.writer import SnapshotWriter
from rank_pipeline.transform.contract import loaded_contract

__all__ = [
    "AccountSource",
    "ExtractionError",
    "ExtractionProgress",
    "ExtractionReport",
    "PastDateError",
    "extract_day",
    "run_extraction",
]


_JSON = msgspec.json.Decoder()


def _as_dict(record: Any) -> dict:
    """A list's record as a dict (a :class:`~rank_pipeline.api.listing.RawRecord`'s attributes parsed)."""
    if type(record) is RawRecord:
        return {"id": record.id, "type": record.type, "attributes": _JSON.decode(record.attributes)}
    return record


class ExtractionError(RankPipelineError, RuntimeError):
    """The day's extraction failed as a whole; nothing of that day was committed."""


class PastDateError(ExtractionError):
    """The requested snapshot date is not the source's today: the API only tells the present."""


@dataclass(frozen=True)
class AccountSource:
    """An account to extract: its name (written to snapshots) and its key (never written anywhere).

    ``api_key`` may hold several keys of the account as a comma-separated list (the value of
    ``RANK_TRACKER_API_KEY`` / ``RANK_TRACKER_API_KEY_<NAME>`` as it is): the account's requests then
    spread over the keys, each paced to the per-key ceiling (see :class:`~rank_pipeline.api.RankTrackerClient`).
    """

    name: str
    api_key: str = field(repr=False)


@dataclass
class ExtractionProgress:
    """Counters for progress bars and logs; ``lists_total`` grows as domains are discovered."""

    lists_total: int = 0
    lists_done: int = 0
    records: int = 0
    requests: int = 0
    retries: int = 0
    rate_limited: int = 0


@dataclass
class ExtractionReport:
    """Outcome of :func:`extract_day`.

    ``manifests`` maps each resource to its committed :class:`~rank_pipeline.snapshots.manifest.SnapshotManifest`;
    ``accounts`` maps each account to its :class:`~rank_pipeline.snapshots.manifest.AccountStats` (requests,
    retries, rate_limited, elapsed_s, achieved_rate_per_min, and per key position its
    :class:`~rank_pipeline.snapshots.manifest.KeyStats`); ``lists`` maps each account to the
    :class:`~rank_pipeline.api.ListResult` of every list read (``pages`` 0 for a list taken from a
    checkpoint); ``resumed_lists`` counts those.
    """

    snapshot_date: date
    manifests: dict[str, SnapshotManifest]
    accounts: dict[str, AccountStats]
    elapsed_s: float
    lists: dict[str, list[ListResult]] = field(default_factory=dict)
    resumed_lists: int = 0

    @property
    def complete(self) -> bool:
        """True when every list of every resource and account was read completely."""
        return all(m.complete for m in self.manifests.values())


class _AccountRun:
    """One account's reads, derived from the declarations (:data:`rank_pipeline.api.endpoints.CATALOG`)."""

    def __init__(self, source: AccountSource, client: RankTrackerClient, writers: dict[str, SnapshotWriter],
                 progress: ExtractionProgress, notify: Callable[[], None], resume: ResumeArea | None = None):
        self.source = source
        self.resume = resume
        # lists read at once: enough to keep every key's requests in flight, few enough that lists
        # finish one after another (a run that dies at 80 % leaves about 80 % of lists checkpointed)
        self.list_gate = asyncio.Semaphore(client.config.max_in_flight * len(client.stats.keys))
        self.parent_prints: dict[str, str] = {}
        self.client = client
        self.writers = writers
        self.progress = progress
        self.notify = notify
        self.report: dict[str, ListsReport] = {
            r.name: ListsReport(complete=True, expected=0, delivered=0, lists=0, pages=0, passes=0, excluded=0,
                                missing_parents=[], incomplete_lists=[])
            for r in CATALOG
        }
        self.lists: list[ListResult] = []
        self.fields = loaded_contract(models_dir())  # reads a keyword's engine for its lookups, by name

    def _sink(self, resource: str, parent_id: str | None, on_records: Callable[[Sequence[Any]], None] | None = None,
              spool: ListSpool | None = None):
        writer = self.writers[resource]
        account = self.source.name

        def sink(records: Sequence[Any], body: bytes) -> None:
            at = datetime.now(UTC)
            writer.append_table(account, records_table(resource, writer.snapshot_date, account, records,
                                                       parent_id=parent_id, extracted_at=at))
            if spool is not None:  # and the page, as received, to the list's checkpoint
                spool.write(at, body)
            if on_records is not None:  # a parent's records, for their children's requests
                on_records(records)
            self.progress.records += len(records)
            self.notify()

        return sink

    def _resumed(self, resource: str, request: ListRequest, entry: dict[str, Any],
                 on_records: Callable[[Sequence[Any]], None] | None) -> ListResult:
        """Replay a list finished by an earlier run of this day from its checkpoint (no request)."""
        assert self.resume is not None  # entry is its checkpoint
        writer, account, path = self.writers[resource], self.source.name, request.path
        for at, records in self.resume.records(entry):
            writer.append_table(account, records_table(resource, writer.snapshot_date, account, records,
                                                       parent_id=request.parent_id, extracted_at=at))
            if on_records is not None:
                on_records(records)
            self.progress.records += len(records)
        return ListResult(path=path, total_count=entry["total_count"], delivered=entry["delivered"], pages=0,
                          passes=entry["passes"], complete=True)

    async def _list(self, resource: Endpoint, request: ListRequest,
                    on_records: Callable[[Sequence[Any]], None] | None = None) -> ListResult | None:
        self.progress.lists_total += 1
        self.notify()
        name, path, params, parent_id = resource.name, request.path, dict(request.params), request.parent_id
        rep = self.report[name]
        # declared checkpointed (child and lookup lists): resumable per list; top-level lists are read again
        resume = self.resume if resource.checkpointed else None
        key = json.dumps([self.source.name, name, path, sorted(params.items())])
        parent = self.parent_prints.get(request.parent_record_id) if request.parent_record_id else None
        spool = None
        try:
            async with self.list_gate:
                entry = resume.lookup(key, parent) if resume is not None else None
                if entry is not None:
                    result = self._resumed(name, request, entry, on_records)
                else:
                    spool = resume.spool() if resume is not None else None
                    result = await self.client.list_records(path, params, self._sink(name, parent_id, on_records, spool),
                                                            raw=True, with_body=True)
        except BaseException as exc:
            if spool is not None:  # an unfinished list is read again by a retry
                spool.delete()
            if not (isinstance(exc, NotFoundError) and resource.parent_404_tolerated and parent_id is not None):
                raise
            rep.missing_parents.append(parent_id)
            return None
        finally:
            self.progress.lists_done += 1
            self.notify()
        if result.excluded:
            # delivered in an earlier pass, absent from the proven set: deleted during the read
            self.writers[name].exclude(self.source.name, result.excluded, parent_id=parent_id)
        if spool is not None:
            self._checkpoint(key, parent, spool, result)
        rep.lists += 1
        rep.excluded += len(result.excluded)
        self.lists.append(result)
        # no X-Total-Count header: completeness cannot be shown, so it is not claimed
        if not result.complete or result.total_count is None:
            rep.complete = False
            rep.incomplete_lists.append(parent_id if parent_id is not None else path)
        rep.expected += result.total_count or 0
        rep.delivered += result.delivered
        rep.pages += result.pages
        rep.passes = max(rep.passes, result.passes)
        return result

    def _checkpoint(self, key: str, parent: str | None, spool: ListSpool, result: ListResult) -> None:
        """Keep a proven list's spool as its checkpoint (with the ids outside the proven set); drop it otherwise."""
        if result.complete and result.total_count is not None:
            assert self.resume is not None  # spool is one of its checkpoints
            self.resume.finish(key, spool, {"parent": parent, "total_count": result.total_count,
                                            "delivered": result.delivered, "passes": result.passes,
                                            "excluded": list(result.excluded)})
        else:
            spool.delete()

    async def _single(self, resource: Endpoint) -> None:
        """A declared single read (not paginated): one record, one request."""
        record = await self.client.get(resource.path)
        self.progress.lists_total += 1
        self.progress.lists_done += 1
        self.writers[resource.name].write(self.source.name, [record], extracted_at=datetime.now(UTC))
        rep = self.report[resource.name]
        rep.expected = rep.delivered = rep.lists = rep.pages = rep.passes = 1

    async def _resource(self, resource: Endpoint, requests: Sequence[ListRequest]) -> None:
        """Read every list of ``resource``, then its declared children for the records read.

        Child requests are collected while the records stream (de-duplicated, so many keywords pointing
        at one location read it once); the children start when all of ``resource``'s lists are done,
        without the requests of a parent record deleted while its list was read.
        """
        children = children_of(resource.name)
        wanted: dict[str, dict[ListRequest, None]] = {c.name: {} for c in children}
        reads = ParentReads.of(resource.name, children, self.fields)

        def parent(record: Any) -> dict | None:
            if type(record) is not RawRecord:
                return record
            return reads.new(record) if reads is not None else _as_dict(record)

        def on_records(records: Sequence[Any]) -> None:
            if reads is not None and all(type(r) is RawRecord for r in records):
                parents = reads.new_page(records)  # a page's attributes decoded at once
            else:
                parents = [p for p in map(parent, records) if p is not None]
            # a record left out: the values its children read were seen, its requests are asked for
            for record in parents:
                for child in children:
                    for request in child.requests_from_parent(child, record, self.fields):
                        if request.parent_record_id is not None:
                            self.parent_prints[request.parent_record_id] = fingerprint(record)
                        wanted[child.name][request] = None

        results = await run_all(self._list(resource, r, on_records if children else None) for r in requests)
        if not children:
            return
        gone = {e for result in results if result is not None for e in result.excluded}
        await run_all(self._resource(c, [r for r in wanted[c.name] if r.parent_record_id not in gone])
                   for c in children)

    async def run(self, snapshot_date: date, allow_other_day: bool) -> None:
        top = children_of(None)
        for resource in (r for r in top if not r.paginated):
            await self._single(resource)
            server_day = self.client.server_date
            if server_day is not None and server_day != snapshot_date and not allow_other_day:
                raise PastDateError(
                    f"cannot extract {snapshot_date.isoformat()}: the API only tells the present and its "
                    f"today is {server_day.isoformat()} (UTC). Extract today's partition; earlier days are "
                    "loaded and modelled from their Parquet snapshots."
                )
        await run_all(self._resource(r, [r.top_level_request()]) for r in top if r.paginated)
        for name, rep in self.report.items():
            self.writers[name].set_report(self.source.name, rep)


async def extract_day(
    base_url: str,
    accounts: Sequence[AccountSource],
    snapshot_date: date,
    snapshots_uri: Path | str,
    *,
    config: ClientConfig | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    allow_other_day: bool = False,
    on_progress: Callable[[ExtractionProgress], None] | None = None,
    resume: bool = True,
    source_id: str | None = None,
    shard: Shard | None = None,
) -> ExtractionReport:
    """Extract every resource of ``accounts`` (one :class:`AccountSource` per key) for ``snapshot_date`` and
    commit the day's snapshots under ``snapshots_uri``; returns an :class:`ExtractionReport`.

    Args:
        base_url: the API's base address, without ``/v1``.
        snapshot_date: the partition; the source's today (UTC, its ``Date`` header) unless ``allow_other_day``.
        config: ``ClientConfig``; transport: an httpx transport for tests; on_progress: the running counters.
        resume: keep per-list checkpoints (:mod:`rank_pipeline.extract.resume`) so a retry re-reads only
            unfinished lists; ``source_id``: what they are valid for (default ``base_url``; never a key).
        shard: extract only this shard's accounts and commit its manifests (empty ones when it owns none).
    Raises:
        PastDateError: ``snapshot_date`` is not the source's today.
        rank_pipeline.api.RankTrackerError: a fatal API error (401, 403, unreachable); nothing committed.
    """
    if not accounts:
        raise ExtractionError("no accounts configured: set RANK_TRACKER_API_KEY (or RANK_TRACKER_ACCOUNTS)")
    config = config or ClientConfig()
    started = time.monotonic()
    if shard is not None:
        accounts = [a for a in accounts if shard.owns(a.name)]
    area = ResumeArea(snapshots_uri, snapshot_date, source_id or base_url, shard) if resume else None
    writers = {r.name: SnapshotWriter(snapshots_uri, r.name, snapshot_date, shard=shard) for r in CATALOG}
    # one per-IP pacer shared by every key of the run (spec "Limits": 600 per IP address)
    ip_limiter = SlidingWindowLimiter.for_ceiling(config.per_ip_limit, config.window_s, config.safety_margin)
    try:
        runs = await _read_accounts(base_url, accounts, snapshot_date, allow_other_day, writers, area,
                                    config=config, ip_limiter=ip_limiter, transport=transport,
                                    on_progress=on_progress)
        manifests = {r: w.commit() for r, w in writers.items()}
    except BaseException:
        for writer in writers.values():
            writer.abort()  # the checkpoints in the resume area stay for the retry
        if area is not None:
            area.close()
        raise
    if area is not None:
        area.discard()  # the day is committed: its checkpoints are spent
    stats = {run.source.name: _account_stats(run.client) for run in runs}
    return ExtractionReport(snapshot_date, manifests, stats, time.monotonic() - started,
                            {run.source.name: run.lists for run in runs}, area.reused if area else 0)


async def _read_accounts(
    base_url: str,
    accounts: Sequence[AccountSource],
    snapshot_date: date,
    allow_other_day: bool,
    writers: dict[str, SnapshotWriter],
    area: ResumeArea | None,
    *,
    config: ClientConfig,
    ip_limiter: SlidingWindowLimiter,
    transport: httpx.AsyncBaseTransport | None,
    on_progress: Callable[[ExtractionProgress], None] | None,
) -> list[_AccountRun]:
    """Read every account into ``writers`` at once, one client each (all sharing ``ip_limiter``), and
    return the finished runs; nothing is committed. A fatal error in one account cancels the others
    before the clients close, and is raised."""
    progress = ExtractionProgress()
    clients: list[RankTrackerClient] = []

    def notify() -> None:
        progress.requests = sum(c.stats.requests for c in clients)
        progress.retries = sum(c.stats.retries for c in clients)
        progress.rate_limited = sum(c.stats.rate_limited for c in clients)
        if on_progress is not None:
            on_progress(progress)

    async with contextlib.AsyncExitStack() as stack:
        runs = []
        for source in accounts:
            client = await stack.enter_async_context(RankTrackerClient(
                base_url, source.api_key, config=config, ip_limiter=ip_limiter, transport=transport,
                label=source.name))
            clients.append(client)
            runs.append(_AccountRun(source, client, writers, progress, notify, area))
        # a fatal error in one account cancels the others before the exit stack closes the clients
        await run_all(run.run(snapshot_date, allow_other_day) for run in runs)
    notify()
    return runs


def _account_stats(client: RankTrackerClient) -> AccountStats:
    """One account's request statistics for its manifest: totals, pace and per key position."""
    s = client.stats
    return AccountStats(
        requests=s.requests,
        retries=s.retries,
        rate_limited=s.rate_limited,
        elapsed_s=round(s.elapsed, 3),
        achieved_rate_per_min=round(s.requests_per_minute, 1),
        keys=[KeyStats(position=k.position, requests=k.requests, rate_limited=k.rate_limited,
                       rejected=k.rejected, dropped=k.dropped) for k in s.keys],
    )


def run_extraction(*args: Any, **kwargs: Any) -> ExtractionReport:
    """Synchronous :func:`extract_day` (one asyncio loop per run); same arguments and errors."""
    return asyncio.run(extract_day(*args, **kwargs))
