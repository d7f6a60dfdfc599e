"""Smoke test of benchmarks/extract.py: the harness on tiny worlds, checked against ground truth.

The harness runs the sandbox and the extractor in their own processes over loopback; here its figures
are checked against a World built in this process (the world is deterministic in seed and day), and
its bound and minimum formulas against hand-computed values. dlt is an optional extra ('bench'): its
part is skipped when dlt is not importable.
"""

from __future__ import annotations

import importlib.util
import io
import sys
from datetime import date
from pathlib import Path

import pytest

from rank_pipeline.sandbox import World, WorldConfig

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "extract.py"

pytestmark = pytest.mark.xdist_group("bench_extract")


def _load_bench():
    spec = importlib.util.spec_from_file_location("bench_extract", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_extract"] = module
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


def _world_counts(workload) -> dict:
    """Records that exist in the workload's world on the benchmark's day, counted here."""
    config = WorldConfig.scaled(workload.domains, workload.keywords_per_domain, accounts=workload.accounts, seed=7)
    world = World(config, today=date.fromisoformat(bench.SNAPSHOT_DAY))
    counts = {r: 0 for r in bench.COMPARED_RESOURCES}
    for account in world.accounts:
        domains = world.domains(account.account_id)
        counts["domains"] += len(domains)
        counts["usage"] += 1
        counts["tags"] += len(world.tags(account.account_id))
        for d in domains:
            counts["keywords"] += len(world.keyword_ids(d["id"]))
            counts["competitors"] += len(world.competitors(d["id"]))
    return counts


# ------------------------------------------------------------------------------------ formulas


def test_pages_is_ceil_with_one_request_for_an_empty_list():
    assert [bench.pages(n, 1000) for n in (0, 1, 999, 1000, 1001, 2000, 2001)] == [1, 1, 1, 1, 2, 2, 3]


def test_minimum_requests_counts_every_list_once():
    truth = {"accounts": {"x": {
        "counts": {"domains": 3, "tags": 0, "keywords": [0, 1000, 2500], "competitors": [2, 3, 4]},
        "lookups": {"locations": [["google", "2840"], ["bing", "2840"]], "languages": {"google": 150}},
    }}}
    # usage 1 + domains 1 + tags 1 + keywords 1+1+3 + competitors 3 = 11; lookups + 2 locations + 1
    assert bench.minimum_requests(truth, 1000, lookups=False) == {"x": 11}
    assert bench.minimum_requests(truth, 1000, lookups=True) == {"x": 14}
    assert bench.minimum_requests(truth, 100, lookups=True) == {"x": 1 + 1 + 1 + (1 + 10 + 25) + 3 + 2 + 2}


def test_lower_bound_per_key_per_ip_and_outside_consumer():
    s = bench.BenchSettings(per_key=300, per_ip=600, window_s=6.0, per_page=1000)
    plain = bench.Workload("a", "", 1, 1)
    # 620 requests at 300 per window: 3 windows, the first at t=0 -> 2 * 6 s
    assert bench.lower_bound_s({"k": 620}, s, plain) == pytest.approx(12.0)
    # latency term: 2 * (80 ms + 40 ms for a full page of 1000)
    slow = bench.Workload("a", "", 1, 1, faults={"latency_median_ms": 80.0, "latency_per_1000_records_ms": 40.0})
    assert bench.lower_bound_s({"k": 300}, s, slow) == pytest.approx(0.24)
    # three keys of 243: no key needs a second window, the IP (729 > 600) does
    three = bench.Workload("d", "", 1, 1, accounts=3)
    assert bench.lower_bound_s({"a": 243, "b": 243, "c": 243}, s, three) == pytest.approx(6.0)
    # an outside consumer taking 120 leaves 180 per window: 303 requests need 2 windows
    shared = bench.Workload("e", "", 1, 1, faults={"outside_consumer": 120})
    assert bench.lower_bound_s({"k": 303}, s, shared) == pytest.approx(6.0)
    assert bench.ceiling_per_s(s, shared) == pytest.approx(30.0)
    assert bench.ceiling_per_s(s, three) == pytest.approx(100.0)


def test_cpu_per_1000_records_and_the_bound():
    run = bench.RunResult("ours", 10, 0, 10, 0, 10, 2000, 2000, 0, wall_s=10.0, lower_bound_s=5.0, peak_rss_mb=1.0,
                          rate_per_s=1.0, ceiling_per_s=1.0, sandbox_cpu_s=9.0, tool_cpu_s=0.05)
    assert run.cpu_ms_per_1000(run.tool_cpu_s) == pytest.approx(25.0)
    assert run.bound_by == "sandbox"
    assert bench.replace(run, sandbox_cpu_s=1.0).bound_by is None


def test_profile_stages_go_to_the_deepest_frame_that_names_one(tmp_path):
    sys.path.insert(0, str(BENCH.parent))
    try:
        import _extract_profile as profile
    finally:
        sys.path.remove(str(BENCH.parent))
    run = "main (_extract_ours.py:1);run_extraction (rank_pipeline/extract/day.py:9)"
    sink = f"{run};_AccountRun._sink.<locals>.sink (rank_pipeline/extract/day.py:5)"
    raw = tmp_path / "ours.pyspy.txt"
    raw.write_text("\n".join([
        f"{sink};records_table (rank_pipeline/snapshots/schema.py:1);dumps (json/__init__.py:2) 3",
        f"{sink};records_table (rank_pipeline/snapshots/schema.py:1) 1",
        f"{sink};ListSpool.write (rank_pipeline/extract/resume.py:92);ParquetWriter.write_table (pyarrow/parquet/core.py:1) 2",
        f"{run};AsyncClient.send (httpx/_client.py:1);read (h11/_readers.py:3) 2",
        "main (_extract_ours.py:1);<module> (pandas/__init__.py:1) 50",  # before the run: not counted
        f"{run};BaseEventLoop._run_once (asyncio/base_events.py:1);EpollSelector.select (selectors.py:468) 40",
        f"{run};BaseEventLoop._run_once (asyncio/base_events.py:1);Handle._run (asyncio/events.py:84) 1",
    ]))
    shares = profile.stages(raw)  # the selector's wait is not CPU: 9 samples counted
    assert shares["attribute serialization"] == pytest.approx(3 / 9)
    assert shares["Arrow columns (rows -> table)"] == pytest.approx(1 / 9)
    assert shares["checkpoints (resume spool)"] == pytest.approx(2 / 9)
    assert shares["HTTP client (httpx)"] == pytest.approx(2 / 9)
    assert shares["event loop, other"] == pytest.approx(1 / 9)


def test_unknown_workload_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown workload"):
        bench.run_benchmark(["z"], tools=("ours",), quick=True, out=io.StringIO(), workdir=tmp_path)


# ------------------------------------------------------------------------------------ harness


@pytest.mark.slow
def test_quick_run_of_our_extractor_matches_ground_truth(tmp_path):
    out = io.StringIO()
    results = bench.run_benchmark(["a", "d"], tools=("ours",), quick=True, out=out, workdir=tmp_path)
    printed = out.getvalue()
    assert [r.workload.key for r in results] == ["a", "d"]
    for result in results:
        run = result.runs["ours"]
        assert run.error is None, run.error
        expected = _world_counts(result.workload)
        assert run.existing_by_resource == expected
        assert run.existing == sum(expected.values())
        assert run.delivered == run.existing and run.stale == 0
        assert run.requests >= run.min_requests > 0
        # no faults here: the server's count and the client's agree
        assert run.client_requests == run.requests
        assert run.wall_s > 0 and run.peak_rss_mb > 0
        assert f"{run.delivered:,} / {run.existing:,} = 1.000" in printed
        assert f"{run.requests:,} / {run.min_requests:,} = " in printed
        # CPU per 1,000 records delivered, the tool's and the sandbox's, beside the rate
        assert run.tool_cpu_s > 0
        assert f"{run.cpu_ms_per_1000(run.tool_cpu_s):.1f} | {run.cpu_ms_per_1000(run.sandbox_cpu_s):.1f}" in printed
    # (d): three accounts over one IP, each with its own key
    assert results[1].world["accounts"] == 3
    assert "Legend" in printed


def test_dlt_paginator_stops_at_total_pages():
    pytest.importorskip("dlt", reason="dlt is the optional 'bench' extra")
    import requests

    sys.path.insert(0, str(BENCH.parent))
    try:
        from _peer_dlt import paginator_class
    finally:
        sys.path.remove(str(BENCH.parent))

    def response(current, total):
        r = requests.Response()
        r.headers["X-Current-Page"], r.headers["X-Total-Pages"] = str(current), str(total)
        r.request = requests.Request("GET", "http://x/v1/tags").prepare()
        return r

    paginator = paginator_class()()
    request = requests.Request("GET", "http://x/v1/tags", params={"per_page": 1000})
    paginator.init_request(request)
    assert request.params == {"per_page": 1000, "page": 1}
    seen = []
    for current in (1, 2, 3):
        paginator.update_state(response(current, 3))
        seen.append(paginator.has_next_page)
        if paginator.has_next_page:
            paginator.update_request(request)
            assert request.params["page"] == current + 1
    assert seen == [True, True, False]
    bare = requests.Response()  # not a list response of this API
    bare.request, bare.url = requests.Request("GET", "http://x/v1/account/usage").prepare(), "http://x/v1/account/usage"
    with pytest.raises(ValueError, match="X-Total-Pages"):
        paginator_class()().update_state(bare)


def test_quick_run_of_dlt_matches_ground_truth(tmp_path):
    pytest.importorskip("dlt", reason="dlt is the optional 'bench' extra")
    (result,) = bench.run_benchmark(["a"], tools=("dlt",), quick=True, out=io.StringIO(), workdir=tmp_path)
    run = result.runs["dlt"]
    assert run.error is None, run.error
    assert run.existing_by_resource == _world_counts(result.workload)
    assert run.delivered == run.existing
    assert run.requests >= run.min_requests
