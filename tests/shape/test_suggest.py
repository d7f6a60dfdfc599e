"""The suggested remap in process (:func:`rank_pipeline.shape.suggest.suggest_remap`): text that decodes to
the contracted integer but for at most three values is proposed with those values as sentinels for null;
text with more values that do not decode is no candidate for an integer."""

from __future__ import annotations

import json
from datetime import date, datetime

import pyarrow as pa

from rank_pipeline.sandbox.assumptions import keyword_record
from rank_pipeline.sandbox.shapes import parse_shape
from rank_pipeline.settings import models_dir
from rank_pipeline.shape import load_contract, load_thresholds
from rank_pipeline.shape.fitting import MAX_SENTINELS
from rank_pipeline.shape.suggest import suggest_remap

DAY = date(2026, 11, 1)


def _records(rank_of) -> pa.Table:
    """60 keyword records in vendor-c's shape, the rank text of record ``i`` being ``rank_of(i)``."""
    out = []
    for i in range(60):
        record = parse_shape("vendor-c").keyword(keyword_record(
            f"k{i}", keyword=f"word {i}", search_engine="google", device="desktop",
            location={"code": "2840", "name": "United States", "variant": "Country"}, language_code="en",
            frequency="daily", tag_ids=[], search_volume=10 * i, created_at="2025-01-01T00:00:00Z",
            position=1 + i % 100, url=f"https://example.com/{i}", captured=f"{DAY}T06:00:00Z"), DAY)
        record["attributes"]["results"]["organic"]["rank"] = rank_of(i)
        out.append(json.dumps(record["attributes"]))
    return pa.table({"attributes": pa.array(out, pa.string())})


def _position(rank_of):
    suggestion = suggest_remap(load_contract(models_dir()), load_thresholds(models_dir()),
                               {"keywords": _records(rank_of)})
    return next((a for a in suggestion.assignments if a.spec.name == "position"), None)


def test_integer_text_with_sentinels_is_proposed_with_the_sentinels_as_null():
    sentinels = ["-", "n/a", "?"][:MAX_SENTINELS]
    found = _position(lambda i: sentinels[i % len(sentinels)] if i % 5 == 0 else str(1 + i))
    assert found is not None and found.path == "results.organic.rank"
    assert found.encoding is not None and found.encoding["sent_as"] == "string"
    assert sorted(found.encoding["null_values"]) == sorted(sentinels)  # most frequent first
    assert "80.0% decode as integer" in found.note


def test_integer_text_with_more_values_than_sentinels_that_do_not_decode_is_no_candidate():
    others = ["-", "n/a", "?", "none"]
    found = _position(lambda i: others[i % 4] if i % 5 == 0 else str(1 + i))
    assert found is None or found.path != "results.organic.rank"


def test_the_values_of_many_paths_read_in_one_pass_equal_each_paths_own_counts():
    from rank_pipeline.shape.profile import Profiler

    with Profiler("keywords", _records(lambda i: "-" if i % 4 == 0 else str(i % 7))) as profiler:
        paths = [p for p, s in profiler.profile().paths.items() if "[*]" not in p and set(s.types) - {"object", "array"}]
        paths.append("no.such.path")
        one_pass = profiler.value_counts_of(paths)
        assert list(one_pass) == paths and one_pass["no.such.path"] == {}
        for path in paths:
            assert list(one_pass[path].items()) == list(profiler.value_counts(path).items()), path


def _table(records: list[dict]) -> pa.Table:
    return pa.table({"attributes": pa.array([json.dumps(r) for r in records], pa.string())})


def _keywords(n: int = 60) -> list[dict]:
    return [keyword_record(
        f"k{i}", keyword=f"word {i}", search_engine=("google", "bing")[i % 2], device=("desktop", "mobile")[i % 3 == 0],
        location={"code": "2840", "name": "United States", "variant": "Country"}, language_code="en",
        frequency="daily", tag_ids=[f"00000000-0000-0000-0000-{i % 5:012d}"], search_volume=10 * i,
        created_at=f"2025-01-{1 + i % 28:02d}T00:00:00Z", position=None if i % 4 == 0 else 1 + i,
        url=None if i % 4 == 0 else f"https://example.com/{i}", captured=f"{DAY}T06:00:00Z")["attributes"]
        for i in range(n)]


def _suggest(records: list[dict]):
    return suggest_remap(load_contract(models_dir()), load_thresholds(models_dir()), {"keywords": _table(records)})


def _assigned(suggestion, name: str):
    return next((a for a in suggestion.assignments if a.spec.name == name), None)


def test_an_epoch_a_text_format_and_ids_inside_objects_are_proposed_with_their_encodings():
    records = []
    for a in _keywords():
        a["created"] = int(datetime.fromisoformat(a.pop("createdAt")).timestamp())
        a["labels"] = [{"uuid": t} for t in a.pop("tagIds")]
        organic = a["results"]["organic"]
        organic["checked"] = datetime.fromisoformat(organic.pop("capturedAt")).strftime("%d/%m/%Y %H:%M:%S")
        records.append(a)
    suggestion = _suggest(records)
    created, tags, captured = (_assigned(suggestion, n) for n in ("created_at", "tag_ids", "captured_at"))
    assert created is not None and (created.path, created.encoding) == ("created", {"timestamp_format": "epoch_seconds"})
    assert tags is not None and tags.path == "labels[*].uuid"
    assert captured is not None and captured.path == "results.organic.checked"
    assert captured.encoding == {"timestamp_format": "%d/%m/%Y %H:%M:%S"}
    assert not suggestion.unmatched


def test_a_timestamp_is_never_proposed_from_text_that_is_no_timestamp():
    """The creation time gone, the language's name the only text left: no candidate, and the line says why."""
    records = []
    for a in _keywords():
        del a["createdAt"]
        a["languageName"] = "French"
        records.append(a)
    suggestion = _suggest(records)
    assert _assigned(suggestion, "created_at") is None
    (line,) = [x for x in suggestion.notes() if x.startswith("keywords.created_at:")]
    assert "has no candidate" in line and "refused" in line and "not decode as a timestamp" in line, line


def test_a_flag_is_proposed_as_a_value_map_and_a_device_with_three_values_is_not():
    records = []
    for a in _keywords():
        a["isMobile"] = a.pop("device") == "mobile"
        records.append(a)
    device = _assigned(_suggest(records), "device")
    assert device is not None and device.path == "isMobile"
    assert device.updates == {"values": {True: "mobile", False: "desktop"}}

    for i, a in enumerate(records):
        a["isMobile"] = ("yes", "no", "maybe")[i % 3]
    suggestion = _suggest(records)
    assert _assigned(suggestion, "device") is None
    (line,) = [x for x in suggestion.notes() if x.startswith("keywords.device:")]
    assert "3 distinct values for the field's 2" in line, line


def test_a_scalar_in_an_array_of_objects_is_read_by_its_first_element_only_when_none_holds_more():
    records = []
    for a in _keywords():
        organic = a.pop("results")["organic"]
        a["serp"] = [] if organic["position"] is None else [{"rank": organic["position"], "landingPage": organic["url"]}]
        a["capturedAt"] = organic["capturedAt"]
        records.append(a)
    position = _assigned(_suggest(records), "position")
    assert position is not None and position.path == "serp[0].rank"

    records[1]["serp"].append({"rank": 99, "landingPage": "https://example.com/other"})
    suggestion = _suggest(records)
    assert _assigned(suggestion, "position") is None
    (line,) = [x for x in suggestion.notes() if x.startswith("keywords.position:")]
    assert "serp holds up to 2 elements per record" in line and "[?key=value]" in line, line
