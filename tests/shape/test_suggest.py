"""The suggested remap in process (:func:`rank_pipeline.shape.suggest.suggest_remap`): text that decodes to
the contracted integer but for at most three values is proposed with those values as sentinels for null;
text with more values that do not decode is no candidate for an integer."""

from __future__ import annotations

import json
from datetime import date

import pyarrow as pa

from rank_pipeline.sandbox.assumptions import keyword_record
from rank_pipeline.sandbox.shapes import parse_shape
from rank_pipeline.settings import models_dir
from rank_pipeline.shape import load_contract, load_thresholds
from rank_pipeline.shape.suggest import MAX_SENTINELS, suggest_remap

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
