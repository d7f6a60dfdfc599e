"""list_records against in-process fake list endpoints (httpx.MockTransport, virtual clock):
page 1 then fan-out, per_page, completeness re-reads on shifting records, empty pages beyond the last."""

from __future__ import annotations

import asyncio
import json
import math
from collections import Counter

import httpx
import pytest

from rank_pipeline.api import ClientConfig, NotFoundError, RankTrackerClient

BASE = "https://api.test"
KEY = "test-key-not-secret"


def record(i: int) -> dict:
    return {"id": f"id-{i:05d}", "type": "domain", "attributes": {"domain": f"d{i}.example", "n": i}}


class FakeList:
    """A paginated list endpoint as the spec describes it (Limits rules 4-5).

    ``order(page)`` gives the record order used to answer a request for ``page``; subclasses move
    records around to play spec rule 6 (ordering not stable across writes).
    """

    def __init__(self, n: int, cap: int = 1000, latency_s: float = 0.05) -> None:
        self.records = [record(i) for i in range(n)]
        self.cap = cap
        self.latency_s = latency_s
        self.requests: list[dict] = []
        self.in_flight = self.max_in_flight = 0

    def order(self, page: int) -> list[dict]:
        return self.records

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.latency_s)
            page = int(request.url.params.get("page", "1"))
            per_page = min(int(request.url.params.get("per_page", "100")), self.cap)
            self.requests.append({"page": page, "per_page": request.url.params.get("per_page")})
            rows = self.order(page)
            data = rows[(page - 1) * per_page: page * per_page]
            headers = {
                "X-Total-Count": str(len(rows)),
                "X-Total-Pages": str(max(1, math.ceil(len(rows) / per_page))),
                "X-Per-Page": str(per_page),
                "X-Current-Page": str(page),
            }
            return httpx.Response(200, json={"data": data}, headers=headers)
        finally:
            self.in_flight -= 1


def make_client(server, **config) -> RankTrackerClient:
    loop = asyncio.get_running_loop()
    return RankTrackerClient(BASE, KEY, config=ClientConfig(**config),
                             transport=httpx.MockTransport(server), clock=loop.time)


def collect(into: list):
    def sink(records):
        into.extend(r["id"] for r in records)
    return sink


def test_page_one_then_concurrent_fan_out_uses_ceil_total_over_per_page_requests(vrun):
    server = FakeList(3500)
    ids: list[str] = []

    async def main():
        async with make_client(server, max_in_flight=4) as client:
            return await client.list_records("/v1/domains", {"q": "x"}, collect(ids)), client.stats

    result, stats = vrun(main())
    n = math.ceil(3500 / 1000)
    assert len(server.requests) == 2 * n == stats.requests  # the read, then one verification pass
    assert server.requests[0]["page"] == 1
    assert sorted(r["page"] for r in server.requests[1:n]) == [2, 3, 4]
    assert sorted(r["page"] for r in server.requests[n:]) == [1, 2, 3, 4]  # all at once: N known
    assert all(r["per_page"] == "1000" for r in server.requests)
    assert 2 <= server.max_in_flight <= 4
    assert Counter(ids) == Counter(r["id"] for r in server.records)  # each exactly once
    assert (result.total_count, result.delivered, result.pages, result.passes, result.complete) == (
        3500, 3500, 8, 2, True)
    assert (stats.pages, stats.records, result.duplicates, result.excluded) == (8, 3500, 0, ())


def test_configured_per_page_is_sent_and_a_server_cap_is_followed_through_x_total_pages(vrun):
    server = FakeList(950, cap=200)
    ids: list[str] = []

    async def main():
        async with make_client(server, per_page=5000) as client:
            return await client.list_records("/v1/tags", None, collect(ids))

    result = vrun(main())
    assert {r["per_page"] for r in server.requests} == {"5000"}
    assert len(server.requests) == 2 * 5  # 950 at the capped 200 per page, read and verified
    assert result.complete and result.delivered == 950 and sorted(ids) == sorted(r["id"] for r in server.records)


def test_empty_list_is_complete_after_one_request_and_the_sink_is_not_called(vrun):
    server = FakeList(0)
    calls: list = []

    async def main():
        async with make_client(server) as client:
            return await client.list_records("/v1/tags", None, calls.append)

    result = vrun(main())
    assert (result.total_count, result.delivered, result.pages, result.complete) == (0, 0, 1, True)
    assert calls == [] and len(server.requests) == 1


def test_async_sink_receives_only_new_records_per_page(vrun):
    server = FakeList(2100)
    batches: list[int] = []

    async def sink(records):
        await asyncio.sleep(0.01)
        batches.append(len(records))

    async def main():
        async with make_client(server) as client:
            return await client.list_records("/v1/domains", None, sink)

    result = vrun(main())
    assert sorted(batches) == [100, 1000, 1000] and result.complete


class ShiftOnce(FakeList):
    """During the first pass, after page 1 was served, 7 records from the end move to the front:
    the first pass sees 7 records twice and misses 7 (the classic offset-pagination hole)."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.page1_served = 0

    def order(self, page):
        if page == 1:
            self.page1_served += 1
            return self.records
        if self.page1_served == 1:
            return self.records[-7:] + self.records[:-7]
        return self.records


def test_records_shifting_between_pages_are_recovered_by_a_second_pass_each_delivered_once(vrun):
    server = ShiftOnce(2500)
    ids: list[str] = []
    events: list[dict] = []

    async def main():
        loop = asyncio.get_running_loop()
        client = RankTrackerClient(BASE, KEY, transport=httpx.MockTransport(server), clock=loop.time,
                                   on_event=events.append)
        async with client:
            return await client.list_records("/v1/domains", None, collect(ids))

    result = vrun(main())
    truth = [r["id"] for r in server.records]
    assert Counter(ids) == Counter(truth)  # every id exactly once, none missing
    # pass 1 is inconsistent (7 seen twice), pass 2 reads the settled list, pass 3 agrees with it
    assert (result.complete, result.passes, result.delivered, result.total_count) == (True, 3, 2500, 2500)
    assert result.duplicates == 7  # the 7 records pushed from page 1 onto page 2 during the first pass
    assert result.pages == 9
    assert [e for e in events if e["event"] == "list_done"][0]["complete"] is True


def test_the_paginator_is_iterated_pass_by_pass_and_holds_the_reading_state(vrun):
    server = ShiftOnce(2500)
    ids: list[str] = []

    async def main():
        async with make_client(server) as client:
            paginator = client.paginate("/v1/domains", {"page": 7}, collect(ids))
            seen = []
            async for list_pass in paginator:
                seen.append((list_pass.number, list_pass.consistent, list_pass.repeated, len(list_pass.ids),
                             list_pass.total_count, paginator.pages, paginator.complete))
            return seen, paginator.result

    passes, result = vrun(main())
    truth = {r["id"] for r in server.records}
    # pass 1 served page 1, then pages 2-3 with the last 7 records moved to the front: 7 seen twice, 7 missed
    assert passes == [(1, False, True, 2493, 2500, 3, False),
                      (2, True, False, 2500, 2500, 6, False),  # consistent, but nothing to agree with yet
                      (3, True, False, 2500, 2500, 9, True)]   # agrees with pass 2: proven
    assert {r["page"] for r in server.requests} == {1, 2, 3}  # the caller's page=7 is not sent
    assert (result.complete, result.passes, result.pages, result.delivered, result.duplicates) == (True, 3, 9, 2500, 7)
    assert set(ids) == truth and len(ids) == 2500


class HideOne(FakeList):
    """An adversary: one record always sits on a page other than the one being read."""

    def order(self, page):
        hidden, rest = self.records[0], self.records[1:]
        return [hidden] + rest if page != 1 else rest + [hidden]


def test_records_that_keep_shifting_beyond_max_passes_give_complete_false_with_counts(vrun):
    server = HideOne(1500)
    ids: list[str] = []

    async def main():
        async with make_client(server, max_passes=3) as client:
            return await client.list_records("/v1/domains", None, collect(ids))

    result = vrun(main())
    assert (result.complete, result.passes, result.total_count, result.delivered) == (False, 3, 1500, 1499)
    assert result.pages == 3 * 2 == len(server.requests)
    assert len(ids) == len(set(ids)) == 1499 and server.records[0]["id"] not in ids


class ShrinkAfterPageOne(FakeList):
    """200 records are deleted right after the first page 1 is served: the old page 3 is now beyond
    the last page (200 OK, empty data) and X-Total-Count changes within the pass."""

    def __init__(self) -> None:
        super().__init__(2500)
        self.served = 0

    async def __call__(self, request):
        response = await super().__call__(request)
        self.served += 1
        if self.served == 1:
            self.records = self.records[:2000]  # 500 deleted: page 3 is now beyond the last
        return response


def test_page_beyond_the_last_is_empty_and_a_changed_total_triggers_a_consistent_re_read(vrun):
    server = ShrinkAfterPageOne()
    ids: list[str] = []

    async def main():
        async with make_client(server) as client:
            return await client.list_records("/v1/domains", None, collect(ids))

    result = vrun(main())
    assert result.complete and result.passes == 3 and result.total_count == 2000
    assert len(ids) == len(set(ids))
    # the 500 deleted after page 1 were never delivered (page 3 came back empty): nothing to exclude
    kept = set(ids) - set(result.excluded)
    assert kept == {r["id"] for r in server.records} and len(result.excluded) == 0
    assert result.pages == 3 + 3 + 2


def test_without_pagination_headers_pages_are_walked_until_empty_and_not_claimed_complete(vrun):
    rows = [record(i) for i in range(25)]

    def handler(request):
        page = int(request.url.params["page"])
        return httpx.Response(200, json={"data": rows[(page - 1) * 10: page * 10]})

    ids: list[str] = []

    async def main():
        async with make_client(handler, per_page=10) as client:
            return await client.list_records("/v1/tags", None, collect(ids))

    result = vrun(main())
    assert ids == [r["id"] for r in rows]
    assert (result.complete, result.total_count, result.pages) == (False, None, 4)


def test_a_404_for_the_parent_is_raised_as_not_found(vrun):
    def handler(request):
        body = {"errors": [{"code": "not_found", "status": 404, "detail": "Domain not found"}]}
        return httpx.Response(404, json=body)

    async def main():
        async with make_client(handler) as client:
            await client.list_records("/v1/domains/abc/keywords", None, lambda rows: None)

    with pytest.raises(NotFoundError, match="Domain not found"):
        vrun(main())


def test_memory_bound_sink_sees_pages_as_they_arrive_not_at_the_end(vrun):
    server = FakeList(4000)
    seen_at: list[int] = []

    async def main():
        async with make_client(server, max_in_flight=1) as client:
            def sink(records):
                seen_at.append(len(server.requests))  # how many pages the server had served then
            return await client.list_records("/v1/domains", None, sink)

    vrun(main())
    assert seen_at == [1, 2, 3, 4]


def test_list_records_rejects_a_single_resource_endpoint(vrun):
    def handler(request):
        return httpx.Response(200, content=json.dumps({"data": {"id": "u", "type": "usage"}}))

    async def main():
        async with make_client(handler) as client:
            await client.list_records("/v1/account/usage", None, None)

    with pytest.raises(Exception, match="expected a list under `data`"):
        vrun(main())


class ShiftForPasses(FakeList):
    """Adaptive settling: during each of the first ``shifting`` passes (3 pages each) one record is
    deleted and one inserted between pages (count unchanged), so only later passes can agree."""

    def __init__(self, n: int, shifting: int) -> None:
        super().__init__(n)
        self.shifting, self.served, self.next_id = shifting, 0, n
        self.deleted: list[str] = []

    async def __call__(self, request):
        self.served += 1
        if self.served % 3 == 2 and self.served // 3 < self.shifting:  # before the 2nd page of a pass
            self.deleted.append(self.records.pop(0)["id"])
            self.records.append(record(self.next_id))
            self.next_id += 1
        return await super().__call__(request)


def test_heavy_shifting_gets_more_passes_than_four_within_the_request_budget_then_is_proven(vrun):
    server = ShiftForPasses(2500, shifting=6)
    ids: list[str] = []

    async def main():
        async with make_client(server, settle_budget_requests=60) as client:
            return await client.list_records("/v1/domains", None, collect(ids))

    result = vrun(main())
    assert result.complete and result.passes > 4  # a fixed 4 passes would have given up
    kept = set(ids) - set(result.excluded)
    assert kept == {r["id"] for r in server.records}  # exactly the ids that exist, by identity
    assert set(result.excluded) == set(server.deleted) - {r["id"] for r in server.records}
    assert len(ids) == len(set(ids)) and result.pages == len(server.requests) <= 60


def test_settling_stops_at_the_request_budget_and_says_incomplete(vrun):
    server = ShiftForPasses(2500, shifting=1000)
    ids: list[str] = []

    async def main():
        async with make_client(server, settle_budget_requests=20) as client:
            return await client.list_records("/v1/domains", None, collect(ids))

    result = vrun(main())
    assert not result.complete and result.excluded == () and result.proven_at is None
    assert result.pages == len(server.requests) <= 20 and result.passes == 6
    assert set(ids) >= {r["id"] for r in server.records}  # nothing dropped while unproven


def test_the_default_settle_budget_is_one_window_of_the_key_ceiling(vrun):
    server = ShiftForPasses(2500, shifting=1000)

    async def main():
        async with make_client(server, per_key_limit=90) as client:
            return await client.list_records("/v1/domains", None, None)

    result = vrun(main())
    assert not result.complete and 87 <= result.pages <= 90
