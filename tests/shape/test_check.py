"""The shape check against ground truth: records written as snapshots, each with a known shape, and the
findings the check must (and must not) report."""

from __future__ import annotations

import copy
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from rank_pipeline.sandbox.assumptions import keyword_record
from rank_pipeline.sandbox.shapes import parse_shape
from rank_pipeline.settings import models_dir
from rank_pipeline.shape import (
    check_snapshots,
    load_contract,
    load_thresholds,
    profile_records,
    record_unread,
)
from rank_pipeline.snapshots.writer import SnapshotWriter

D1, D2 = date(2026, 11, 1), date(2026, 11, 2)
CONTRACT = load_contract(models_dir())
THRESHOLDS = load_thresholds(models_dir())


def _keyword(i: int, position: int | None) -> dict:
    return keyword_record(
        f"00000000-0000-0000-0000-{i:012d}", keyword=f"word {i}", search_engine="google", device="desktop",
        location={"code": "2840", "name": "United States", "variant": "Country"}, language_code="en",
        frequency="daily", tag_ids=["t1"] if i % 2 else [], search_volume=10 * i, created_at="2025-01-01T00:00:00Z",
        position=position, url=None if position is None else f"https://example.com/{i}",
        captured="2026-11-01T06:00:00Z")


def _records(n: int = 50) -> list[dict]:
    """``n`` default-shape keyword records, one in five not ranking (position and url null)."""
    return [_keyword(i, None if i % 5 == 0 else 1 + i % 100) for i in range(n)]


def _write(root: Path, day: date, records: list[dict]) -> None:
    writer = SnapshotWriter(root, "keywords", day)
    writer.write("acme", records, parent_id="d1", extracted_at=datetime(2026, 11, 1, tzinfo=UTC))
    writer.commit()


def _check(root: Path, first: date, last: date | None = None, thresholds=THRESHOLDS):
    return check_snapshots(root, CONTRACT, thresholds, first, last or first, endpoints=["keywords"])["keywords"]


def test_the_default_shape_passes(tmp_path):
    _write(tmp_path, D1, _records())
    result = _check(tmp_path, D1)
    assert result.passed, result.lines()
    assert result.days == [D1] and result.records == 50 and result.unread == {}


def test_another_shape_fails_on_the_first_run_naming_each_path_and_the_position_candidate(tmp_path):
    shape = parse_shape("vendor-b")
    _write(tmp_path, D1, [shape.keyword(r, D1) for r in _records()])
    result = _check(tmp_path, D1)
    failed = {f.path: f for f in result.findings}
    assert set(failed) == {"keyword", "searchEngine", "device", "language.code", "results.organic.position",
                           "results.organic.url", "results.organic.capturedAt"}
    assert failed["keyword"].problem == "absent"
    # the position's candidates are the integer paths whose values lie in 1..100: serp.rank only
    assert len(failed["results.organic.position"].candidates) == 1
    assert failed["results.organic.position"].candidates[0].startswith("serp.rank (integer")
    assert failed["device"].candidates[0].startswith("engine.device")
    assert failed["results.organic.url"].candidates[0].startswith("serp.landingPage")
    lines = result.lines()
    assert len(lines) == 7
    assert all("vendor_contract.yml" in line and line.startswith("keywords: ") and "attributes." not in line for line in lines)
    assert "80.0% filled" in next(line for line in lines if "organic.position" in line)  # 1 in 5 null
    assert {"phrase", "engine.name", "engine.device", "serp.rank", "serp.landingPage"} <= set(result.unread)


def test_a_type_change_is_reported_as_a_type_change_not_as_a_null(tmp_path):
    shape = parse_shape("language-string")
    _write(tmp_path, D1, [shape.keyword(r, D1) for r in _records()])
    (finding,) = _check(tmp_path, D1).findings
    assert finding.path == "language.code" and finding.problem == "wrong_type"
    assert "language is string" in finding.what and "type change" in finding.what
    assert finding.candidates[0].startswith("language (string")


def test_absent_and_null_are_told_apart(tmp_path):
    nulls = _records()
    for r in nulls:  # position null everywhere: a real null, present in every record
        r["attributes"]["results"]["organic"].update(position=None, url=None)
    _write(tmp_path, D1, nulls)
    absent = copy.deepcopy(_records())
    for r in absent:  # the key missing from every record
        del r["attributes"]["results"]["organic"]["position"]
    _write(tmp_path, D2, absent)
    by_day = {f.day: {x.path: x.problem for x in _check(tmp_path, d).findings if x.day == d}
              for d in (D1, D2) for f in _check(tmp_path, d).findings}
    assert by_day[D1] == {"results.organic.position": "empty", "results.organic.url": "empty"}
    assert by_day[D2] == {"results.organic.position": "absent"}


def test_another_type_in_some_records_fails_with_its_share(tmp_path):
    records = _records()
    for r in records[:5]:
        r["attributes"]["searchVolume"] = "12"  # a string where an integer was
    _write(tmp_path, D1, records)
    (finding,) = _check(tmp_path, D1).findings
    assert (finding.path, finding.problem) == ("searchVolume", "wrong_type")
    assert finding.share == pytest.approx(0.1) and "string in 10.0%" in finding.what


def test_drift_a_path_filled_yesterday_and_empty_today_fails_only_against_yesterday(tmp_path):
    _write(tmp_path, D1, _records())
    today = _records()
    for r in today[:40]:  # 20% null yesterday, 84% today: a rise of 64 points
        r["attributes"]["results"]["organic"].update(position=None, url=None)
    _write(tmp_path, D2, today)
    result = _check(tmp_path, D2)
    assert {(f.path, f.problem) for f in result.findings} == {
        ("results.organic.position", "null_rise"), ("results.organic.url", "null_rise")}
    assert f"on {D1}" in result.findings[0].what
    assert _check(tmp_path, D1).passed  # the first day alone has nothing to compare with


def test_the_thresholds_seed_is_what_decides(tmp_path):
    records = _records()
    for r in records[:5]:
        del r["attributes"]["device"]  # absent in 10%
    _write(tmp_path, D1, records)
    assert [f.path for f in _check(tmp_path, D1).findings] == ["device"]
    seeds = tmp_path / "models" / "seeds"
    seeds.mkdir(parents=True)
    (seeds / "shape_thresholds.csv").write_text(
        "endpoint,path,max_absent_share,max_wrong_type_share,max_null_share,max_present_drop,"
        "max_null_share_rise,min_records\n*,*,0,0,0.999,0.5,0.5,20\nkeywords,device,0.2,0,0.999,0.5,0.5,20\n")
    assert _check(tmp_path, D1, thresholds=load_thresholds(tmp_path / "models")).passed


def test_profile_counts_present_null_types_distinct_and_examples():
    profile = profile_records("keywords", _records(20))
    position = profile.paths["results.organic.position"]
    assert (position.present, position.null, position.types) == (20, 4, {"integer": 16})
    assert position.distinct == 16 and (position.minimum, position.maximum) == (2, 20)
    assert profile.paths["tagIds[*]"].present == 10 and profile.paths["tagIds[*]"].types == {"string": 10}
    assert profile.paths["keyword"].example is not None and profile.paths["keyword"].distinct == 20


def test_unread_paths_are_recorded_once(tmp_path):
    path = tmp_path / "vendor_fields.json"
    first = record_unread(path, D1, {"keywords": {"serp.rank": "integer, 100.0% of records"}})
    again = record_unread(path, D2, {"keywords": {"serp.rank": "integer, 100.0% of records", "x": "string"}})
    assert first == {"keywords": {"serp.rank": "integer, 100.0% of records"}}
    assert again == {"keywords": {"x": "string"}}


def test_the_kept_counts_of_the_day_before_give_the_same_drift_and_follow_a_re_extraction(tmp_path):
    snapshots, cache = tmp_path / "snapshots", tmp_path / "cache"
    _write(snapshots, D1, _records())
    today = _records()
    for r in today[:40]:
        r["attributes"]["results"]["organic"].update(position=None, url=None)
    _write(snapshots, D2, today)
    uncached = _check(snapshots, D2)
    check_snapshots(snapshots, CONTRACT, THRESHOLDS, D1, D1, endpoints=["keywords"], cache_dir=cache)
    assert (cache / "keywords" / f"{D1}.json").is_file()
    cached = check_snapshots(snapshots, CONTRACT, THRESHOLDS, D2, D2, endpoints=["keywords"], cache_dir=cache)
    assert cached["keywords"].lines() == uncached.lines() and not uncached.passed
    _write(snapshots, D1, today)  # D1 extracted again, now as empty as D2: no rise left
    again = check_snapshots(snapshots, CONTRACT, THRESHOLDS, D2, D2, endpoints=["keywords"], cache_dir=cache)
    assert again["keywords"].passed


def test_after_a_remap_the_fields_file_forgets_the_paths_now_read(tmp_path):
    from rank_pipeline.transform.contract import load_contract as parse

    path = tmp_path / "vendor_fields.json"
    record_unread(path, D1, {"keywords": {"serp.rank": "integer, 83.2% of records", "language": "string, 100.0% of records"}})
    remapped = tmp_path / "models"
    (remapped / "sources").mkdir(parents=True)
    text = (Path(models_dir()) / "sources" / "vendor_contract.yml").read_text()
    (remapped / "sources" / "vendor_contract.yml").write_text(
        text.replace("path: results.organic.position,", "path: serp.rank,"))
    record_unread(path, D2, {}, reads=parse(remapped).reads)
    import json

    # serp.rank is read now; language is still a string where the contract reads language.code
    assert set(json.loads(path.read_text())["keywords"]) == {"language"}
