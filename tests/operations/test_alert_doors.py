"""Alert digests through the command line's door: ``rank-pipeline run`` as a subprocess against the sandbox
served over HTTP with a known API key, ``RANK_PIPELINE_ALERT_URLS`` naming a real SMTP server, a real HTTP
receiver and a closed port on loopback. What arrived is read back and compared with the warehouse's raw
positions (ground truth independent of the marts), and with the ledger."""

from __future__ import annotations

import sqlite3
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import httpx
import pytest
from support import extracted_keywords, run_on

from rank_pipeline.operations.alerts import TOP_ITEMS
from rank_pipeline.sandbox import SandboxServer, World, create_app

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("e2e_alert_doors")]

def _top10_truth(published: Path, day) -> tuple[list[str], list[str], list[str]]:
    """From raw.keywords (not the marts): search terms entering / leaving the top 10 on ``day`` against each
    keyword's previous snapshot, and the entering ones a digest lists first (by search volume)."""
    with duckdb.connect(str(published), read_only=True) as con:
        rows = con.execute("""
            with k as (
                select id, snapshot_date, json_extract_string(attributes, '$.keyword') as keyword,
                       try_cast(json_extract(attributes, '$.searchVolume') as bigint) as volume,
                       try_cast(json_extract(attributes, '$.results.organic.position') as integer) as position
                from raw.keywords)
            select now.keyword, now.volume, now.position <= 10 as top_now, prev.position <= 10 as top_before
            from k as now join k as prev on prev.id = now.id and prev.snapshot_date = now.snapshot_date - 1
            where now.snapshot_date = ?""", [day]).fetchall()
    entered = [(kw, vol) for kw, vol, now, before in rows if bool(now) and not bool(before)]
    left = [kw for kw, _, now, before in rows if bool(before) and not bool(now)]
    first = [kw for kw, _ in sorted(entered, key=lambda r: (-(r[1] or 0), r[0]))[:TOP_ITEMS]]
    return [kw for kw, _ in entered], left, first


def _section(body: str, heading: str) -> tuple[int, list[str]]:
    """``(count, items)`` of a digest section ``heading: N`` followed by ``- item`` lines."""
    lines = body.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(heading + ": "):
            items = []
            for item in lines[i + 1:]:
                if not item.startswith("- "):
                    break
                items.append(item[2:].split('"')[1] if item.startswith('- "') else item[2:])
            return int(line.split(": ", 1)[1]), items
    return 0, []


def _day_with_movers(world: World, account: str, last) -> date:
    """The latest day up to ``last`` on which a keyword of ``account`` crosses the top 10 against the day before
    (the world has none on some days, e.g. 2027-02-20: the digest's movers would be checked on nothing)."""
    def top10(keyword_id: str, day: date) -> bool:
        return (world.position(keyword_id, day) or 101) <= 10

    for back in range(30):
        day = last - timedelta(days=back)
        before = {k for _, k in extracted_keywords(world, day - timedelta(days=1), account)}
        if any(k in before and top10(k, day) != top10(k, day - timedelta(days=1))
               for _, k in extracted_keywords(world, day, account)):
            return day
    raise AssertionError(f"no keyword of {account} crosses the top 10 in the 30 days to {last}")


@pytest.fixture(scope="module")
def vendor():
    """The sandbox as the vendor, and the day its runs play: the latest with a move across the top 10. Every
    command runs with its clock on that day (:func:`run_on`): a past ``--date`` is refused against a vendor URL,
    and the module can cross midnight, UTC."""
    world = World(today=datetime.now(UTC).date())
    today = _day_with_movers(world, "acme", world.today)
    world.set_today(today - timedelta(days=1))
    with SandboxServer(create_app(world)) as server:
        yield world, server.base_url, today


def test_run_digests_arrive_once_per_destination_with_the_true_movers(vendor, tmp_path, smtp_server,
                                                                      http_receiver, dead_url):
    world, base_url, today = vendor
    mailbox, mail_url = smtp_server
    bodies, hook_url = http_receiver
    key = world.account("acme").api_key
    env = {"RANK_TRACKER_BASE_URL": base_url, "RANK_TRACKER_API_KEY": key,
           "RANK_PIPELINE_DATA_DIR": str(tmp_path), "RANK_PIPELINE_ALERT_URLS": f"{mail_url},{hook_url},{dead_url}"}
    yesterday = today - timedelta(days=1)
    httpx.put(f"{base_url}/_sandbox/today", json={"today": yesterday.isoformat()}).raise_for_status()
    first = run_on(yesterday, "run", "--date", yesterday.isoformat(), env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    sent_first = (len(mailbox.messages), len(bodies))
    assert sent_first[0] == sent_first[1] <= 1  # day 1: at most a quota alert (nothing to compare with yet)

    httpx.put(f"{base_url}/_sandbox/today", json={"today": today.isoformat()}).raise_for_status()
    second = run_on(today, "run", "--date", today.isoformat(), env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    # the dead destination is one warning naming its position and scheme, never its address
    port = dead_url.rsplit(":", 1)[1].split("/")[0]
    warnings = [line for line in second.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings and all("destination 3 (json://)" in w for w in warnings), second.stderr
    assert port not in second.stderr + second.stdout and "nobody" not in second.stderr
    assert second.stdout.strip().splitlines()[-1].startswith("Completed: 1 day(s)")

    # one digest per destination for the run, the same alerts in both
    assert len(mailbox.messages) == sent_first[0] + 1 and len(bodies) == sent_first[1] + 1
    mail, hook = mailbox.messages[-1], bodies[-1]["json"]
    assert mail["to"] == ["seo-team@example.com"] and bodies[-1]["path"] == "/hooks/rank-alerts"
    assert mail["subject"] == hook["title"] and today.isoformat() in hook["title"]
    assert [line.rstrip() for line in mail["body"].strip().splitlines()] == hook["message"].strip().splitlines()
    body = hook["message"]

    entered, left, listed_first = _top10_truth(tmp_path / "warehouse.duckdb", today)
    assert entered or left, "the sandbox moved no keyword across the top 10: the test proves nothing"
    count, items = _section(body, "Keywords entering the top 10")
    assert count == len(entered) and items == listed_first
    count, items = _section(body, "Keywords leaving the top 10")
    assert count == len(left) and set(items) <= set(left) and len(items) == min(len(left), TOP_ITEMS)
    assert "Failed runs" not in body

    # no key and no destination address in anything sent
    for text in (mail["subject"], mail["body"], hook["title"], hook["message"]):
        assert key not in text and "127.0.0.1" not in text

    # the ledger: every alert of the digest recorded as sent to destinations 1 and 2, none to 3
    with sqlite3.connect(tmp_path / "alerts.sqlite") as con:
        rows = con.execute("select alert_id, destination, status from sent_alerts").fetchall()
    by_destination = {d: {a for a, dd, s in rows if dd == d and s == "sent"} for d in (1, 2, 3)}
    assert by_destination[1] == by_destination[2] and not by_destination[3]
    assert len({a for a in by_destination[1] if a.startswith("entered_top_10:")
                and a.endswith(today.isoformat())}) == len(entered)
    assert not any(url in Path(tmp_path / "alerts.sqlite").read_bytes().decode("latin-1")
                   for url in ("127.0.0.1", "mailto", "json://"))

    # re-running the day sends nothing new
    again = run_on(today, "run", "--date", today.isoformat(), env=env)
    assert again.returncode == 0, again.stderr
    assert len(mailbox.messages) == sent_first[0] + 1 and len(bodies) == sent_first[1] + 1

    # a failed run (the key is rejected): a failure digest naming the step, without the key
    wrong = "wrong-key-" + "y" * 24
    failed = run_on(today, "run", "--date", today.isoformat(), env={**env, "RANK_TRACKER_API_KEY": wrong})
    assert failed.returncode == 1
    assert len(mailbox.messages) == sent_first[0] + 2 and len(bodies) == sent_first[1] + 2
    failure = bodies[-1]["json"]
    assert "FAILED at extract_snapshots" in failure["title"]
    count, items = _section(failure["message"], "Failed runs")
    assert count == 1 and "failed at step extract_snapshots: " in items[0] and "key" in items[0].lower()
    assert "Warehouse not published" in failure["message"]
    assert "Keywords entering" not in failure["message"]
    for text in (failure["title"], failure["message"], mailbox.messages[-1]["body"]):
        assert wrong not in text and key not in text
