"""SlidingWindowLimiter under a virtual clock (no real sleeping): window invariant, FIFO, margin,
pause-once on 429, adaptation to a budget shared with an outside consumer, and held acquisitions."""

from __future__ import annotations

import asyncio
import math
import random

import pytest

from rank_pipeline.api.pacing import SlidingWindowLimiter, effective_limit


def max_in_any_window(times: list[float], window_s: float) -> int:
    """Largest number of ``times`` inside any half-open span [a, a + window_s).

    The maximum over all alignments is reached by a span starting at one of the times, so checking
    those covers every alignment of a server-side fixed window.
    """
    times = sorted(times)
    best, j = 0, 0
    for i, start in enumerate(times):
        while j < len(times) and times[j] < start + window_s:
            j += 1
        best = max(best, j - i)
    return best


def count_in_fixed_windows(times: list[float], window_s: float, offset: float) -> int:
    """Largest count of ``times`` in the fixed windows [offset + k*window_s, offset + (k+1)*window_s)."""
    counts: dict[int, int] = {}
    for t in times:
        k = math.floor((t - offset) / window_s)
        counts[k] = counts.get(k, 0) + 1
    return max(counts.values(), default=0)


def greedy_reference(request_times: list[float], limit: int, window_s: float) -> list[float]:
    """Ground truth of a FIFO sliding-window log: each acquisition happens at the earliest time that is
    after its request, after the previous acquisition, and a full window after the limit-th previous."""
    acquired: list[float] = []
    for i, requested in enumerate(request_times):
        t = requested
        if acquired:
            t = max(t, acquired[-1])
        if i >= limit:
            t = max(t, acquired[i - limit] + window_s)
        acquired.append(t)
    return acquired


async def _acquire_at(limiter, offset, out, index):
    await asyncio.sleep(offset)
    out[index] = (asyncio.get_running_loop().time(), await limiter.acquire())


def _random_offsets(rng: random.Random, n: int, horizon: float) -> list[float]:
    """Bursty arrival offsets: a few clusters plus scattered arrivals, all distinct."""
    centres = [rng.uniform(0, horizon) for _ in range(rng.randint(1, 4))]
    offsets = set()
    while len(offsets) < n:
        if rng.random() < 0.6:
            offsets.add(rng.choice(centres) + rng.uniform(0, horizon / 50))
        else:
            offsets.add(rng.uniform(0, horizon))
    return list(offsets)


@pytest.mark.parametrize("seed", range(25))
def test_no_window_of_any_alignment_exceeds_the_limit_and_acquisitions_are_greedy_fifo(vrun, seed):
    rng = random.Random(seed)
    limit = rng.randint(1, 25)
    window_s = rng.choice([0.5, 1.0, 7.0, 60.0])
    n = rng.randint(limit, 6 * limit + 10)
    offsets = _random_offsets(rng, n, horizon=rng.uniform(0.1, 4) * window_s)

    async def main():
        loop = asyncio.get_running_loop()
        limiter = SlidingWindowLimiter(limit, window_s, clock=loop.time)
        out = [None] * n
        start = loop.time()
        await asyncio.gather(*(_acquire_at(limiter, off, out, i) for i, off in enumerate(offsets)))
        return start, out, limiter

    start, out, limiter = vrun(main())
    stamps = [stamp for _, stamp in out]
    assert max_in_any_window(stamps, window_s) <= limit
    for _ in range(50):  # and explicitly: random alignments of a server-side fixed window
        assert count_in_fixed_windows(stamps, window_s, rng.uniform(0, window_s)) <= limit
    acquired = [stamp - start for stamp in stamps]
    # FIFO and no needless waiting: exactly the greedy schedule, in request order
    order = sorted(range(n), key=lambda i: offsets[i])
    expected = greedy_reference([offsets[i] for i in order], limit, window_s)
    assert [acquired[i] for i in order] == pytest.approx(expected, abs=1e-6)
    assert limiter.acquired == n


def test_fifo_waiters_are_served_in_arrival_order(vrun):
    async def main():
        loop = asyncio.get_running_loop()
        limiter = SlidingWindowLimiter(2, 10.0, clock=loop.time)
        served: list[str] = []

        async def take(name, delay):
            await asyncio.sleep(delay)
            await limiter.acquire()
            served.append(name)

        await asyncio.gather(*(take(name, 0.01 * i) for i, name in enumerate("abcdefg")))
        return served, limiter.waited

    served, waited = vrun(main())
    assert served == list("abcdefg")
    assert waited == 5  # the first two went straight through


@pytest.mark.parametrize(
    ("ceiling", "margin", "expected"),
    [(300, 0.02, 294), (600, 0.02, 588), (20, 0.02, 19), (10, 0.0, 10), (1, 0.5, 1), (300, 0.1, 270)],
)
def test_effective_limit_keeps_the_margin_below_the_ceiling(ceiling, margin, expected):
    assert effective_limit(ceiling, margin) == expected


@pytest.mark.parametrize(("ceiling", "margin"), [(0, 0.02), (300, 1.0), (300, -0.1)])
def test_effective_limit_rejects_nonsense(ceiling, margin):
    with pytest.raises(ValueError):
        effective_limit(ceiling, margin)


def arrivals_at_the_server(vrun, limit: int, window_s: float, in_flight: int, requests: int, seed: int, *,
                           hold: bool, to_server, to_client) -> list[float]:
    """Server arrival times of ``requests`` requests through one limiter, at most ``in_flight`` at once.

    Each request acquires (held until its response when ``hold``), reaches the server ``to_server(rng)``
    seconds later, and its response is in ``to_client(rng)`` seconds after that (then it is settled)."""
    rng = random.Random(seed)

    async def main():
        loop = asyncio.get_running_loop()
        limiter = SlidingWindowLimiter(limit, window_s, clock=loop.time)
        slots = asyncio.Semaphore(in_flight)
        arrivals: list[float] = []

        async def request():
            async with slots:
                stamp = await limiter.acquire(hold=hold)
                await asyncio.sleep(to_server(rng))
                arrivals.append(loop.time())
                await asyncio.sleep(to_client(rng))
                limiter.settle(stamp)

        await asyncio.gather(*(request() for _ in range(requests)))
        assert limiter.in_window() <= limit
        return arrivals

    return vrun(main())


@pytest.mark.parametrize("seed", range(8))
def test_margin_keeps_server_arrivals_under_the_ceiling_despite_latency(vrun, seed):
    """Requests arrive at the server a random delay after acquisition. Without holding, a margin covering
    the requests in flight keeps a server fixed window of any alignment at the ceiling; at the bare
    ceiling it is overrun (why a margin alone needed a bound on the requests in flight)."""
    ceiling, window_s, in_flight = 50, 10.0, 8

    def run(limit):
        return arrivals_at_the_server(vrun, limit, window_s, in_flight, 400, seed, hold=False,
                                      to_server=lambda rng: rng.uniform(0.0, 0.4),  # client -> server
                                      to_client=lambda rng: rng.uniform(0.05, 0.3))  # server work, response

    assert max_in_any_window(run(effective_limit(ceiling, in_flight / ceiling)), window_s) <= ceiling
    assert max_in_any_window(run(ceiling), window_s) > ceiling


@pytest.mark.parametrize("seed", range(8))
def test_held_acquisitions_keep_arrivals_under_the_bare_ceiling_whatever_the_latency(vrun, seed):
    """With each acquisition held until its response, the limiter runs at the ceiling itself (no margin)
    and a server window of any alignment still never counts more, even with stalls longer than the
    window; the same traffic with acquisitions forgotten at send time overruns it."""
    ceiling, window_s, in_flight = 20, 2.0, 12

    def to_server(rng: random.Random) -> float:
        stall = rng.uniform(0.5, 3.0) if rng.random() < 0.1 else 0.0  # a loaded machine
        return rng.uniform(0.0, 0.3) + stall

    def run(hold: bool):
        return arrivals_at_the_server(vrun, ceiling, window_s, in_flight, 300, seed, hold=hold,
                                      to_server=to_server, to_client=lambda rng: rng.uniform(0.01, 0.2))

    held = run(hold=True)
    assert len(held) == 300 and max_in_any_window(held, window_s) <= ceiling
    assert max_in_any_window(run(hold=False), window_s) > ceiling


def test_a_held_acquisition_counts_until_settled_then_a_full_window_from_its_settle_time(vrun):
    async def main():
        loop = asyncio.get_running_loop()
        limiter = SlidingWindowLimiter(1, 10.0, clock=loop.time)
        t0 = loop.time()
        stamp = await limiter.acquire(hold=True)
        await asyncio.sleep(25.0)  # in flight for longer than a window
        assert limiter.in_window() == 1 and limiter.wait_s() > 0
        assert limiter.settle(stamp) == pytest.approx(t0 + 25.0)
        assert limiter.settle(stamp) == stamp  # a second settle changes nothing
        await limiter.acquire()
        return loop.time() - t0

    assert vrun(main()) == pytest.approx(35.0)


def test_a_429_pauses_every_waiter_once_and_a_second_429_does_not_stack(vrun):
    async def main():
        loop = asyncio.get_running_loop()
        limiter = SlidingWindowLimiter(100, 60.0, clock=loop.time)
        t0 = loop.time()
        assert limiter.note_rate_limited(5.0) is True
        times: list[float] = []

        async def waiter():
            await limiter.acquire()
            times.append(loop.time() - t0)

        tasks = [asyncio.create_task(waiter()) for _ in range(10)]
        await asyncio.sleep(1.0)
        # a request that was in flight gets its 429 a second later; the server's window is the same
        assert limiter.note_rate_limited(4.0) is False
        await asyncio.gather(*tasks)
        return times, limiter.counts()

    times, counts = vrun(main())
    assert times == pytest.approx([5.0] * 10)
    assert counts.pauses == 1
    assert counts.rate_limited == 2


def test_a_later_429_after_the_pause_ended_starts_a_new_pause(vrun):
    async def main():
        loop = asyncio.get_running_loop()
        limiter = SlidingWindowLimiter(100, 60.0, clock=loop.time)
        assert limiter.note_rate_limited(2.0)
        await limiter.acquire()
        assert limiter.note_rate_limited(2.0)
        return limiter.pauses

    assert vrun(main()) == 2


def test_unexplained_429_lowers_the_limit_to_the_observed_count_and_it_recovers_gradually(vrun):
    async def main():
        loop = asyncio.get_running_loop()
        limiter = SlidingWindowLimiter(50, 10.0, clock=loop.time)
        for _ in range(5):
            await limiter.acquire()
        await asyncio.sleep(10.0)
        for _ in range(20):
            await limiter.acquire()
        # 20 in the window, 30 left locally, yet the server refuses the 20th: someone else spent the rest
        limiter.note_rate_limited(3.0)
        seen = [limiter.limit]
        await asyncio.sleep(3.0 + 10.0)  # pause, then one full window without a 429
        seen.append(limiter.limit)
        await asyncio.sleep(10.0)
        seen.append(limiter.limit)
        await asyncio.sleep(100.0)
        seen.append(limiter.limit)
        return seen, limiter.reductions

    seen, reductions = vrun(main())
    assert seen == [19, 24, 29, 50]  # 19 accepted; step = base_limit // 10 per window, capped at the base
    assert reductions == 1


def test_adapts_to_an_outside_consumer_of_the_key_budget_and_still_finishes(vrun):
    """A fake server with a fixed window of 20 per 10 s, of which GraphQL (outside) spends 12 at each
    window start. The client must finish 200 requests, and after the first 429 lower its limit so
    that 429s stay rare instead of one every window."""
    ceiling, window_s, outside = 20, 10.0, 12

    async def main():
        loop = asyncio.get_running_loop()
        limiter = SlidingWindowLimiter(effective_limit(ceiling, 0.02), window_s, clock=loop.time)
        counts: dict[int, int] = {}
        done = rate_limited = 0
        while done < 200:
            await limiter.acquire()
            now = loop.time()
            k = math.floor(now / window_s)
            counts[k] = counts.get(k, outside) + 1
            if counts[k] > ceiling:
                rate_limited += 1
                limiter.note_rate_limited((k + 1) * window_s - now)
            else:
                done += 1
        return rate_limited, len(counts), limiter.reductions

    rate_limited, windows, reductions = vrun(main())
    assert reductions >= 1
    assert rate_limited <= windows // 3  # without adaptation there would be one 429 per window
    assert windows <= math.ceil(200 / (ceiling - outside)) * 2  # finished, at a useful pace


@pytest.mark.parametrize("seed", range(6))
def test_two_keys_sharing_an_ip_limiter_stay_under_both_ceilings(vrun, seed):
    rng = random.Random(seed)
    key_limit, ip_limit, window_s = 8, 11, 5.0

    async def main():
        loop = asyncio.get_running_loop()
        ip = SlidingWindowLimiter(ip_limit, window_s, clock=loop.time)
        keys = {name: SlidingWindowLimiter(key_limit, window_s, clock=loop.time) for name in "ab"}
        sent: dict[str, list[float]] = {"a": [], "b": []}

        async def request(name, offset):
            await asyncio.sleep(offset)
            stamp = await keys[name].acquire(hold=True)
            ip_stamp = await ip.acquire(hold=True)
            sent[name].append(loop.time())
            await asyncio.sleep(rng.uniform(0.0, 0.5))  # in flight
            ip.settle(ip_stamp)
            keys[name].settle(stamp)

        await asyncio.gather(*(request(rng.choice("ab"), rng.uniform(0, 12)) for _ in range(90)))
        return sent

    sent = vrun(main())
    assert max_in_any_window(sent["a"], window_s) <= key_limit
    assert max_in_any_window(sent["b"], window_s) <= key_limit
    assert max_in_any_window(sent["a"] + sent["b"], window_s) <= ip_limit
    assert len(sent["a"]) + len(sent["b"]) == 90


def test_constructor_rejects_nonsense():
    with pytest.raises(ValueError, match="limit"):
        SlidingWindowLimiter(0, 60.0)
    with pytest.raises(ValueError, match="window_s"):
        SlidingWindowLimiter(10, 0)
