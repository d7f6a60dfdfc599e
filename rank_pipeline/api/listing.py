"""Reading a paginated list until its set of ids is proven (spec "Limits" rules 4-6).

:class:`Paginator` reads pass by pass, streaming each page's new records to a sink (only ids kept). A list
is proven by a consistent single page, or two consecutive consistent passes with the same ids and
``X-Total-Count``, within ``settle_budget_requests``/``max_passes``; ids no longer in the proven set are
``excluded``. The proof and what it shows: docs/concepts/completeness.md, "Reading one list".
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import msgspec

from .config import ClientConfig, ListResult, RequestStats
from .errors import RankTrackerError
from .transport import Transport, decode_json, header_int

logger = logging.getLogger("rank_pipeline.api")

Sink = Callable[..., Awaitable[None] | None]
"""Gets a page's new records: ``sink(records)``, or ``sink(records, body)`` when read ``with_body`` (``body``: the
page's response bytes they were decoded from)."""


class RawRecord(msgspec.Struct, gc=False):
    """A list's record as ``raw`` reading hands it over: ``id`` and ``type`` parsed, ``attributes`` the
    vendor's bytes of that member, unparsed (``msgspec.Raw``; ``bytes(r.attributes)`` is its JSON text).
    Members other than these three are not kept (a snapshot keeps no others). Not tracked by the garbage
    collector (``gc=False``): decoded JSON holds no cycle, and a page's thousand records would otherwise start a
    young collection each page."""

    id: Any = None
    type: Any = None
    attributes: msgspec.Raw = msgspec.Raw(b"{}")


class _RawPage(msgspec.Struct, gc=False):
    data: list[RawRecord]


_RAW_PAGE = msgspec.json.Decoder(_RawPage)


def decode_raw_page(content: bytes) -> Any:
    """A list page's body as ``_RawPage`` (records as :class:`RawRecord`) when it is the envelope with a
    list of objects that all have an ``id``; otherwise what :func:`~rank_pipeline.api.transport.decode_json`
    makes of it (a dict, read the generic way; None: not JSON)."""
    try:
        page = _RAW_PAGE.decode(content)
    except msgspec.MsgspecError:
        return decode_json(content)
    if any(r.id is None for r in page.data):  # identity by content: the generic way (record_id)
        return decode_json(content)
    return page


def page_records(body: Any) -> Any:
    """The records of a decoded list page (:func:`decode_raw_page` or
    :func:`~rank_pipeline.api.transport.decode_json`): its ``data`` (a list when it is a list page)."""
    return body.data if type(body) is _RawPage else body.get("data") if isinstance(body, dict) else None


@dataclass
class Page:
    """One page of a list: its records (dicts, or :class:`RawRecord` when read ``raw``), the
    ``X-Total-Count`` / ``X-Total-Pages`` headers (None if absent) and the response ``body`` (bytes)."""

    records: list[Any]
    total_count: int | None
    total_pages: int | None
    body: bytes = b""


@dataclass
class ListPass:
    """What one pass over a list saw: ids, the X-Total-Count and X-Total-Pages values, repeats.

    ``number`` counts from 1; ``started`` is the paginator's clock when the pass began."""

    number: int
    started: float
    ids: set = field(default_factory=set)
    totals: set = field(default_factory=set)
    page_counts: set = field(default_factory=set)
    repeated: bool = False

    @property
    def total_count(self) -> int | None:
        """The largest ``X-Total-Count`` seen in the pass; None when no page had one."""
        known = [t for t in self.totals if t is not None]
        return max(known) if known else None

    @property
    def consistent(self) -> bool:
        """Every page reported the same count and page count, and exactly that many ids came, none twice."""
        return (len(self.totals) == 1 and len(self.page_counts) == 1 and self.total_count is not None
                and not self.repeated and len(self.ids) == self.total_count)


def record_id(record: Any) -> Any:
    """A record's identity for deduplication: its ``id`` as text, else its JSON content."""
    if type(record) is RawRecord:  # always has an id (decode_raw_page)
        return record.id if type(record.id) is str else str(record.id)
    if isinstance(record, dict) and record.get("id") is not None:
        return str(record["id"])
    # no id (the spec says records have one): deduplicate by content
    return json.dumps(record, sort_keys=True, default=str)


class Paginator:
    """One paginated list, read until its id set is proven (docs/concepts/completeness.md, "Reading one list").

    ``async for list_pass in paginator`` reads one pass per step (new records to ``sink`` as pages arrive) and
    yields its :class:`ListPass`; it ends when the set is proven, the list has no pagination headers, or the
    budget is spent; :attr:`result` then holds the ``ListResult`` (:meth:`read` does both). ``transport``,
    ``config``, ``stats``: the client's; ``sink`` None: counts only; ``clock`` stamps passes (s); ``emit`` gets
    ``{"event": "page" | "list_done", ...}``; ``raw``: records as :class:`RawRecord` where a page allows it;
    ``with_body``: ``sink(records, body)`` (:data:`Sink`).

    Raises (while iterating): RankTrackerError subclasses, e.g. ``NotFoundError`` when the parent is gone.
    """

    def __init__(self, transport: Transport, path: str, params: Mapping[str, Any] | None, *,
                 config: ClientConfig, stats: RequestStats, sink: Sink | None,
                 clock: Callable[[], float], emit: Callable[[dict], None], raw: bool = False,
                 with_body: bool = False) -> None:
        self.path = path
        self._decode = decode_raw_page if raw else None
        self._query = {k: v for k, v in dict(params or {}).items() if k not in ("page", "per_page")}
        self._query["per_page"] = config.per_page
        self._transport = transport
        self._config = config
        self._budget = config.settle_budget_requests or config.per_key_limit
        self._stats = stats
        self._sink = sink
        self._with_body = with_body
        self._clock = clock
        self._emit = emit
        self._deliver_lock = asyncio.Lock()
        # the cursor: what has been read so far
        self.pages = self.passes = self.duplicates = 0
        self.total_count: int | None = None
        self.complete = False
        self.proven_at: float | None = None
        self._seen: set[Any] = set()
        self._n_pages = 1
        self._paginated = True
        self._previous: ListPass | None = None
        self._final_ids: set[Any] | None = None
        self._done = False

    def __aiter__(self) -> Paginator:
        return self

    async def __anext__(self) -> ListPass:
        if self._done:
            raise StopAsyncIteration
        current = await self._read_pass()
        self._settle(current)
        return current

    async def read(self) -> ListResult:
        """Read passes until the list is proven or the budget is spent, and return :attr:`result`.

        Logs a warning when the list was left unproven and emits ``{"event": "list_done", ...}`` (the
        result's fields, ``excluded`` as a count)."""
        async for _ in self:
            pass
        result = self.result
        if not result.complete and result.total_count is not None:
            logger.warning(
                "list %s not proven complete after %d passes (%d requests): records kept moving between "
                "pages; %d distinct ids delivered, X-Total-Count %s", self.path, self.passes, self.pages,
                len(self._seen), self.total_count)
        self._emit({"event": "list_done", **{k: v for k, v in asdict(result).items() if k != "excluded"},
                    "excluded": len(result.excluded)})
        return result

    @property
    def result(self) -> ListResult:
        """The outcome of the passes read so far (final once iteration has ended)."""
        final = self._final_ids
        excluded = tuple(sorted(self._seen - final, key=str)) if final is not None else ()
        return ListResult(path=self.path, total_count=self.total_count,
                          delivered=len(final) if final is not None else len(self._seen), pages=self.pages,
                          passes=self.passes, complete=self.complete, duplicates=self.duplicates,
                          excluded=excluded, proven_at=self.proven_at)

    # -- one pass ------------------------------------------------------------------------------------

    async def _read_pass(self) -> ListPass:
        self.passes += 1
        current = ListPass(number=self.passes, started=self._clock())
        if self.passes == 1:
            first = await self._read_page(1, current)
            if first.total_pages is None or first.total_count is None:
                await self._walk_unpaginated(first, current)
                self._paginated = False
                return current
            self._n_pages = max(1, first.total_pages)
            todo = list(range(2, self._n_pages + 1))
        else:
            todo = list(range(1, self._n_pages + 1))
        await self._fan_out(todo, current)
        # the list grew during the pass: read the new last pages too (the pass is not consistent)
        grown = max((p for p in current.page_counts if p is not None), default=self._n_pages)
        if grown > self._n_pages:
            await self._fan_out(list(range(self._n_pages + 1, grown + 1)), current)
        return current

    def _settle(self, current: ListPass) -> None:
        """After a pass: is the list proven, out of budget, or to be read again?"""
        if not self._paginated:
            self._done = True
            return
        self.total_count = current.total_count
        self._n_pages = max([1] + [p for p in current.page_counts if p is not None])
        consistent = current.consistent
        previous = self._previous
        if consistent and (self._n_pages == 1 or (previous is not None and previous.ids == current.ids
                                                  and previous.totals == current.totals)):
            self.complete, self._final_ids, self.proven_at = True, current.ids, current.started
            self._done = True
            return
        if self.passes >= self._config.max_passes or self.pages + self._n_pages > self._budget:
            self._done = True
            return
        logger.info("list %s: pass %d not proven (X-Total-Count %s, %d distinct ids%s); reading again",
                    self.path, self.passes, sorted(t for t in current.totals if t is not None),
                    len(current.ids), ", differs from the previous pass" if previous is not None and consistent
                    else "")
        self._previous = current if consistent else None

    async def _fan_out(self, page_numbers: list[int], current: ListPass) -> None:
        """Read ``page_numbers`` with up to ``max_in_flight`` pages at a time."""
        if not page_numbers:
            return
        todo = iter(page_numbers)

        async def worker() -> None:
            for page_no in todo:  # a shared iterator: each page is taken by one worker
                await self._read_page(page_no, current)

        async with asyncio.TaskGroup() as group:
            for _ in range(min(self._config.max_in_flight, len(page_numbers))):
                group.create_task(worker())

    async def _walk_unpaginated(self, first: Page, current: ListPass) -> None:
        """No pagination headers: read the pages after ``first`` one by one until an empty one."""
        page_no, page = 1, first
        while page.records:
            page_no += 1
            page = await self._read_page(page_no, current)

    # -- one page ------------------------------------------------------------------------------------

    async def _read_page(self, page_no: int, current: ListPass) -> Page:
        page = await self._get_page(page_no)
        self.pages += 1
        current.totals.add(page.total_count)
        current.page_counts.add(page.total_pages)
        new = await self._deliver(page, current)
        self._emit({
            "event": "page", "path": self.path, "page": page_no, "total_pages": page.total_pages,
            "total_count": page.total_count, "pass": current.number, "records": len(page.records),
            "new_records": new, "delivered": len(self._seen),
        })
        return page

    async def _get_page(self, page_no: int) -> Page:
        params = {**self._query, "page": page_no}
        body, response = await self._transport.request("GET", self.path, params, with_response=True,
                                                       decode=self._decode)
        data = page_records(body)
        if not isinstance(data, list):
            raise RankTrackerError(
                f"expected a list under `data` from {self.path} (a paginated list endpoint) but got "
                f"{type(data).__name__}; use get() for single resources",
                method="GET", url=self._transport.url(self.path),
            )
        self._stats.pages += 1
        headers = response.headers
        return Page(
            records=data,
            total_count=header_int(headers, "X-Total-Count"),
            total_pages=header_int(headers, "X-Total-Pages"),
            body=response.content,
        )

    async def _deliver(self, page: Page, current: ListPass) -> int:
        """Hand the page's records not delivered before to the sink; how many were new."""
        async with self._deliver_lock:  # dedupe and sink calls in arrival order, one at a time
            records = page.records
            ids = [record_id(r) for r in records]
            page_ids = set(ids)
            if len(page_ids) == len(ids) and page_ids.isdisjoint(self._seen):  # every record new (pass ids
                current.ids |= page_ids  # are among those seen): the loop below would take them all
                self._seen |= page_ids
                new = list(records)
            else:
                new = []
                for record, rid in zip(records, ids, strict=True):
                    if rid in current.ids:  # seen twice in one pass: it moved between pages
                        self.duplicates += 1
                        current.repeated = True
                    current.ids.add(rid)
                    if rid in self._seen:
                        continue
                    self._seen.add(rid)
                    new.append(record)
            if new and self._sink is not None:
                result = self._sink(new, page.body) if self._with_body else self._sink(new)
                if inspect.isawaitable(result):
                    await result
            self._stats.records += len(new)
            return len(new)
