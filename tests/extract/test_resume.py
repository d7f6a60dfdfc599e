"""Resume: an extraction killed with ``kill -9`` at about 80 % of its requests,
retried for the same day, re-fetches only the lists it did not finish.

The extraction runs in a child process against the sandbox served over real HTTP by this process;
the sandbox counts the requests (``/_sandbox/stats``), the referee of the cost of the retry, and its
``World`` is the referee of the records.
"""

from __future__ import annotations

import asyncio
import json
import os
import posixpath
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime

import httpx
import pytest
from support import command_env, rank_pipeline_argv

from rank_pipeline.api import ClientConfig
from rank_pipeline.extract.day import AccountSource, extract_day
from rank_pipeline.extract.resume import ResumeArea, resume_dir
from rank_pipeline.sandbox import AccountSpec, RateLimits, SandboxServer, World, WorldConfig, create_app
from rank_pipeline.snapshots.reader import read_snapshot
from rank_pipeline.snapshots.schema import ENDPOINTS

pytestmark = pytest.mark.xdist_group("resume")

DAY = date(2026, 11, 21)
RATE = 150  # per 1-second window
CONFIG = dict(per_key_limit=RATE, per_ip_limit=2 * RATE, window_s=1.0, max_retry_s=5.0, max_in_flight=4)

_CHILD = textwrap.dedent("""
    import os, sys
    from datetime import date
    from rank_pipeline.api import ClientConfig
    from rank_pipeline.extract.day import AccountSource, run_extraction
    config = ClientConfig(**eval(os.environ["TEST_CONFIG"]))
    run_extraction(sys.argv[1], [AccountSource("acme", os.environ["TEST_KEY"])], date.fromisoformat(sys.argv[2]),
                   sys.argv[3], config=config, source_id="sandbox-under-test")
""")


def _world(domains: int = 100) -> World:
    spec = AccountSpec("acme", domains=domains, keywords_per_domain=(5, 15))
    return World(WorldConfig(seed=31, accounts=(spec,)), today=DAY)


def _requests(base_url: str) -> int:
    stats = httpx.get(f"{base_url}/_sandbox/stats").json()
    return sum(ip["requests"] for ip in stats["ips"].values())


def _reset(base_url: str) -> None:
    httpx.post(f"{base_url}/_sandbox/stats/reset?limits=true")


def _extract(base_url: str, key: str, data_dir, resume: bool = True):
    return asyncio.run(extract_day(base_url, [AccountSource("acme", key)], DAY, data_dir, resume=resume,
                                   config=ClientConfig(**CONFIG), source_id="sandbox-under-test"))


def _keyword_list_finished(data_dir) -> bool:
    """Whether the running child has checkpointed a keywords list: a complete line of the resume log (read
    as a file: a :class:`ResumeArea` would delete the child's lists in progress)."""
    log = resume_dir(data_dir, DAY) / "lists.jsonl"
    try:
        lines = log.read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        try:
            if '"keywords"' in json.loads(line)["key"]:
                return True
        except (ValueError, KeyError):
            continue  # a line being written
    return False


def _rows(data_dir) -> set[tuple]:
    return {(resource, r["account"], r["parent_id"], r["id"])
            for resource in ENDPOINTS for r in read_snapshot(data_dir, resource, DAY).to_pylist()}


class _KillSwitch:
    """The sandbox's ASGI app behind a switch: once armed (:meth:`arm`) with a child's pid, the API request (``/v1``)
    that finds ``threshold`` of them counted since arming and ``until()`` holding sends the child SIGKILL
    before it is served. The kill comes from the server, while the child waits for that answer, so it always
    lands before the child's last request, however loaded the machine (a loop polling the counts from
    outside could be overtaken by the child's last requests)."""

    def __init__(self, app) -> None:
        self.app = app
        self.count = 0
        self.armed: tuple[int, int, Callable[[], bool] | None] | None = None

    def arm(self, pid: int, threshold: int, until: Callable[[], bool] | None) -> None:
        self.count, self.armed = 0, (pid, threshold, until)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and (scope["path"] == "/v1" or scope["path"].startswith("/v1/")):
            self.count += 1
            if self.armed is not None:
                pid, threshold, until = self.armed
                if self.count >= threshold and (until is None or until()):
                    self.armed = None
                    os.kill(pid, signal.SIGKILL)
        await self.app(scope, receive, send)


def _kill_at(switch: _KillSwitch, base_url: str, key: str, data_dir, threshold: int,
             until: Callable[[], bool] | None = None) -> int:
    """Start the extraction in a child and ``kill -9`` it (through ``switch``, the server's) at its
    ``threshold``-th request once ``until()`` (if given) holds; returns the requests the sandbox counted."""
    env = {**os.environ, "TEST_KEY": key, "TEST_CONFIG": repr(CONFIG)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, base_url, DAY.isoformat(), str(data_dir)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    switch.arm(child.pid, threshold, until)
    try:
        returncode = child.wait(timeout=120)
    finally:
        switch.armed = None
        if child.poll() is None:
            child.kill()
            child.wait()
    assert returncode == -signal.SIGKILL, f"the child ended before the kill: {child.stderr.read().decode()[-2000:]}"
    return _requests(base_url)


@pytest.mark.slow
def test_a_run_killed_at_80_percent_is_retried_for_at_most_25_percent_of_the_requests(tmp_path):
    world = _world()
    key = world.account("acme").api_key
    switch = _KillSwitch(create_app(world, limits=RateLimits(per_key=RATE, per_ip=2 * RATE, window_s=1.0)))
    with SandboxServer(switch) as server:
        full = _extract(server.base_url, key, tmp_path / "full", resume=False)  # the same requests, faster
        full_requests = _requests(server.base_url)
        _reset(server.base_url)

        killed_at = _kill_at(switch, server.base_url, key, tmp_path / "resumed", int(0.8 * full_requests))
        assert resume_dir(tmp_path / "resumed", DAY).is_dir()  # the checkpoints outlive the kill
        _reset(server.base_url)

        retry = _extract(server.base_url, key, tmp_path / "resumed")
        retry_requests = _requests(server.base_url)
    assert full.complete and retry.complete and full.resumed_lists == 0
    assert killed_at < full_requests  # it really died before the end
    assert retry.resumed_lists > 0
    assert retry_requests <= 0.25 * full_requests, (retry_requests, full_requests, killed_at)
    # the combined result is the full run's, and the world's
    assert _rows(tmp_path / "resumed") == _rows(tmp_path / "full")
    domains = world.domains(world.account("acme").account_id)
    keywords = {r["id"] for r in read_snapshot(tmp_path / "resumed", "keywords", DAY).to_pylist()}
    assert keywords == {k for d in domains for k in world.keyword_ids(d["id"])}
    # the day committed: its checkpoints are gone, nothing else is left behind
    assert not resume_dir(tmp_path / "resumed", DAY).exists()


@pytest.mark.slow
def test_a_list_whose_parent_changed_is_read_again_and_checkpoints_serve_one_source_and_day(tmp_path):
    world = _world(domains=30)
    key = world.account("acme").api_key
    account_id = world.account("acme").account_id
    switch = _KillSwitch(create_app(world, limits=RateLimits(per_key=RATE, per_ip=2 * RATE, window_s=1.0)))
    with SandboxServer(switch) as server:
        # killed once a keyword list is checkpointed: on a loaded machine the client may have finished none
        # by the server's 40th request
        _kill_at(switch, server.base_url, key, tmp_path, 40, until=lambda: _keyword_list_finished(tmp_path))
        area = ResumeArea(tmp_path, DAY, "sandbox-under-test")
        finished = [e for e in area.finished.values() if '"keywords"' in e["key"]]
        assert finished
        changed = next(d["id"] for d in world.domains(account_id) if d["id"] in finished[0]["key"])
        original = world.domains

        def domains(account, day=None):  # the domain was renamed between the kill and the retry
            out = original(account, day)
            for d in out:
                if d["id"] == changed:
                    d["attributes"]["projectName"] = "renamed"
            return out

        world.domains = domains
        retry = _extract(server.base_url, key, tmp_path)
    lists = {r.path: r for r in retry.lists["acme"]}
    assert lists[f"/v1/domains/{changed}/keywords"].pages > 0  # read again, not taken from the checkpoint
    assert retry.resumed_lists > 0 and retry.complete

    # another source (or schema) empties the folder: nothing of it is reused
    other = ResumeArea(tmp_path / "x", DAY, "https://api.one.example")
    other.finish("k", other.spool(), {"parent": None, "total_count": 0, "delivered": 0, "passes": 1})
    assert ResumeArea(tmp_path / "x", DAY, "https://api.one.example").finished
    assert not ResumeArea(tmp_path / "x", DAY, "https://api.two.example").finished
    assert not ResumeArea(tmp_path / "x", date(2026, 11, 22), "https://api.one.example").finished


def _cli(data_dir, *args: str, env: dict[str, str] | None = None, **popen) -> subprocess.Popen:
    """``rank-pipeline extract`` (the installed command) on the embedded sandbox, settings in the environment,
    started (a Popen: a test kills it mid-way)."""
    full = command_env({"RANK_PIPELINE_DATA_DIR": str(data_dir), **(env or {})})
    return subprocess.Popen([*rank_pipeline_argv(), "extract", "--date", DAY.isoformat(), *args], env=full, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def _completed(child: subprocess.Popen) -> int:
    """The requests of a finished ``rank-pipeline extract`` (its last line), asserting it succeeded."""
    out, err = child.communicate(timeout=240)
    assert child.returncode == 0, out + err
    line = out.strip().splitlines()[-1]
    assert line.startswith("Completed: 1 day(s), "), line
    return int(line.split(" snapshot rows, ")[1].split(" requests")[0])


@pytest.mark.slow
def test_the_extract_command_retried_in_a_new_process_reuses_the_checkpoints_of_the_killed_one(tmp_path):
    """On the embedded sandbox, whose port changes with every process, ``rank-pipeline extract`` killed
    mid-way and run again re-fetches only the lists the first process did not finish."""
    full = _completed(_cli(tmp_path / "full"))
    # the same day, paced slowly enough to be killed once a few lists are checkpointed
    slow = {"RANK_TRACKER_RATE_PER_KEY": "6", "RANK_TRACKER_RATE_PER_IP": "12", "RANK_TRACKER_RATE_WINDOW_S": "3"}
    child = _cli(tmp_path / "retried", env=slow)
    lists = resume_dir(tmp_path / "retried" / "snapshots", DAY) / "lists.jsonl"
    try:
        deadline = time.monotonic() + 180
        while not (lists.is_file() and len(lists.read_text().splitlines()) >= 3):
            assert child.poll() is None, f"the extraction ended before the kill: {child.stderr.read()[-2000:]}"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    checkpointed = len(lists.read_text().splitlines())
    retry = _completed(_cli(tmp_path / "retried"))
    assert retry <= full - checkpointed, (retry, full, checkpointed)  # each checkpointed list is one request or more
    assert _rows(tmp_path / "retried" / "snapshots") == _rows(tmp_path / "full" / "snapshots")
    assert not resume_dir(tmp_path / "retried" / "snapshots", DAY).exists()  # spent once the day committed


def _page(*ids: str) -> bytes:
    return json.dumps({"data": [{"id": i, "type": "keyword", "attributes": {"text": f"kw {i}"}} for i in ids]}).encode()


def _replayed(area: ResumeArea, key: str) -> list[tuple[datetime, list[str]]]:
    return [(at, [r.id for r in records]) for at, records in area.records(area.finished[key])]


@pytest.mark.parametrize("where", ["local", "memory"])
def test_a_lists_pages_are_replayed_from_their_offsets_whatever_the_store_and_a_dead_runs_tail(tmp_path, where):
    """Lists read at once write their pages interleaved: on local disk into the run's one stream, on an object
    store (``memory://``, fsspec) each into its own. A retry replays each finished list's pages, in order, from the
    offsets its entry holds, past the half-written page a killed run left at the stream's end, and removes the
    pages no finished list refers to."""
    root = tmp_path if where == "local" else f"memory://resume-{uuid.uuid4().hex}/snapshots"
    t0, t1, t2 = (datetime(2026, 11, 21, 8, 0, s, 250, tzinfo=UTC) for s in (1, 2, 3))
    area = ResumeArea(root, DAY, "src")
    first, second, unfinished = area.spool(), area.spool(), area.spool()
    first.write(t0, _page("a", "b"))
    second.write(t0, _page("x"))
    unfinished.write(t1, _page("u"))
    first.write(t1, _page("b", "c"))  # "b" again: replayed once, as the live read delivered it
    second.write(t2, _page("y", "z"))
    area.finish("first", first, {"parent": None, "total_count": 3, "delivered": 3, "passes": 1, "excluded": []})
    area.finish("second", second, {"parent": "p", "total_count": 3, "delivered": 2, "passes": 2, "excluded": ["z"]})
    unfinished.write(t2, _page("v"))
    folder = resume_dir(root, DAY)
    if where == "local":
        # one stream for the run's lists: no file opened, closed or renamed per list
        assert sorted(p.name.rsplit(".", 1)[-1] for p in folder.iterdir()) == ["json", "jsonl", "pages"]
        stream = next(folder.glob("*.pages"))
        with stream.open("r+b") as f:  # killed in the middle of writing its last page
            f.truncate(stream.stat().st_size - 7)
        (folder / f"{uuid.uuid4().hex}.pages").write_bytes(b"a run that died before finishing a list")
    else:
        unfinished.delete()
        area.close()

    retry = ResumeArea(root, DAY, "src")
    assert set(retry.finished) == {"first", "second"}
    assert retry.lookup("second") is None and retry.lookup("second", "p") is not None  # the parent's fingerprint
    assert _replayed(retry, "first") == [(t0, ["a", "b"]), (t1, ["c"])]
    assert _replayed(retry, "second") == [(t0, ["x"]), (t2, ["y"])]  # "z": excluded by its proof
    store = retry.store
    kept = {posixpath.basename(i.path) for i in store.listdir(retry._dir) if i.path.endswith(".pages")}
    assert kept == {f"{e['file']}.pages" for e in retry.finished.values()}  # nothing else left to grow
    retry.discard()
    assert not store.listdir(retry._dir)
