"""The contract's grammar beyond dotted scalar paths: selectors into arrays (``[N]``, ``[?key=value]``, ``[*]``),
``type: timestamp`` with its encodings, and enums and value maps. The contract's Python reader
(:meth:`ContractField.locate` and ``decode``) and the generated flattening SQL agree record by record; the
shape check counts an empty array as a null (never absent), names values that do not decode with their
shares, and fails an enum whose values change case."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime

import duckdb
import pytest
from test_encodings import _models

from rank_pipeline.shape import check_snapshots, load_contract, load_thresholds
from rank_pipeline.snapshots.writer import SnapshotWriter
from rank_pipeline.transform.contract import ContractField
from rank_pipeline.transform.flatten import flattening_sql

DAY = date(2026, 11, 1)

FIELDS = [
    ContractField(name="first_rank", path="results.serp[0].rank", type="integer", shown=False, nullable=True,
                  null_means="not ranking"),
    ContractField(name="first_url", path="results.serp[0].landingPage", type="string", shown=False, nullable=True),
    ContractField(name="google_rank", path="engines[?name=google].rank", type="integer", shown=False, nullable=True),
    ContractField(name="bing_rank", path="engines[?name=bing].rank", type="integer", shown=False, nullable=True),
    ContractField(name="tag_ids", path="labels[*].uuid", type="array", items="string", shown=False),
    ContractField(name="created", path="created", type="timestamp", shown=False,
                  encoding={"timestamp_format": "epoch_seconds"}),
    ContractField(name="created_ms", path="createdMs", type="timestamp", shown=False,
                  encoding={"timestamp_format": "epoch_milliseconds"}),
    ContractField(name="checked", path="checked", type="timestamp", shown=False,
                  encoding={"timestamp_format": "%d/%m/%Y %H:%M:%S"}),
    ContractField(name="seen", path="seen", type="timestamp", shown=False),
    ContractField(name="device", path="mobile", type="string", shown=False, values={"yes": "mobile", "no": "desktop"}),
    ContractField(name="flag_device", path="isMobile", type="string", shown=False,
                  values={True: "mobile", False: "desktop"}),
    ContractField(name="engine", path="engine", type="string", shown=False, values=["google", "bing", "yahoo"],
                  fold_case=True),
]

RECORDS = [
    {"results": {"serp": [{"rank": 3, "landingPage": "https://a.example/x"}]},
     "engines": [{"name": "bing", "rank": 7}, {"name": "google", "rank": 2}],
     "labels": [{"uuid": "t1"}, {"uuid": "t2"}], "created": 1767243967, "createdMs": 1767243967123,
     "checked": "01/02/2026 05:06:07", "seen": "2026-01-01T05:06:07Z", "mobile": "yes", "isMobile": True,
     "engine": "GOOGLE"},
    {"results": {"serp": []}, "engines": [{"name": "bing", "rank": 1}], "labels": [],
     "created": 1700000000.5, "createdMs": 1700000000000, "checked": "31/12/2025 23:59:59",
     "seen": "2026-01-01 05:06:07.25", "mobile": "no", "isMobile": False, "engine": "bing"},
    {"results": {"serp": [{"rank": 100, "landingPage": "https://b.example/"}, {"rank": 5}]}, "engines": [],
     "labels": [{"uuid": "t3"}], "created": 0, "createdMs": 86400000, "checked": "1/1/2026 0:0:0",
     "seen": "2026-03-01T00:00:00+02:00", "mobile": "yes", "isMobile": True, "engine": "Yahoo"},
    {"results": {"serp": [{"landingPage": "https://c.example/"}]}, "engines": [{"name": "google", "rank": None}],
     "labels": [{"uuid": "t4"}, {"uuid": "t5"}, {"uuid": "t6"}], "created": 1767243967, "createdMs": 1,
     "checked": "28/02/2026 12:00:00", "seen": "2026-01-01", "mobile": "no", "isMobile": False, "engine": "google"},
]


def _python(field: ContractField, attributes: dict) -> object:
    _, value = field.locate(attributes)
    if field.type == "array":
        return value
    decodes, decoded = field.decode(value)
    assert decodes, (field.path, value)
    return decoded


def test_the_python_reader_and_the_generated_sql_agree_on_every_record():
    with duckdb.connect() as con:
        con.execute("create schema raw; create table raw.things (n integer, attributes json)")
        con.executemany("insert into raw.things values (?, ?)", [(i, json.dumps(r)) for i, r in enumerate(RECORDS)])
        sql = flattening_sql("things", FIELDS, ["n", "attributes"])
        rows = con.execute(f"select * from ({sql}) order by n").fetchall()
    for record, row in zip(RECORDS, rows, strict=True):
        for field, value in zip(FIELDS, row[1:], strict=True):
            assert value == _python(field, record), field.name


def test_selectors_read_the_element_asked_for_and_an_empty_array_is_a_null():
    first, _, google, bing, tags = FIELDS[:5]
    assert [_python(first, r) for r in RECORDS] == [3, None, 100, None]
    assert first.locate(RECORDS[1]) == (True, None)  # an empty array: present, null
    assert first.locate(RECORDS[3]) == (False, None)  # an element without the key: absent
    assert first.locate({"results": {}}) == (False, None)  # no array at all: absent
    assert [_python(google, r) for r in RECORDS] == [2, None, None, None]
    assert [_python(bing, r) for r in RECORDS] == [7, 1, None, None]
    assert [_python(tags, r) for r in RECORDS] == [["t1", "t2"], [], ["t3"], ["t4", "t5", "t6"]]


def test_timestamps_decode_to_utc_instants_in_every_encoding():
    created, created_ms, checked, seen = FIELDS[5:9]
    assert _python(created, RECORDS[0]) == datetime(2026, 1, 1, 5, 6, 7, tzinfo=UTC)
    assert _python(created_ms, RECORDS[0]) == datetime(2026, 1, 1, 5, 6, 7, 123000, tzinfo=UTC)
    assert _python(checked, RECORDS[0]) == datetime(2026, 2, 1, 5, 6, 7, tzinfo=UTC)
    assert _python(seen, RECORDS[2]) == datetime(2026, 2, 28, 22, 0, tzinfo=UTC)  # +02:00 to UTC
    assert created.decode("French") == (False, "French")  # a name is no timestamp
    assert seen.decode("French") == (False, "French")
    assert seen.decode(1767243967) == (False, 1767243967)  # an epoch where ISO 8601 is declared
    assert checked.decode("2026-02-30 05:06:07") == (False, "2026-02-30 05:06:07")


def test_a_value_map_and_an_enum_decode_to_our_values_and_refuse_others():
    device, flag, engine = FIELDS[9:12]
    assert device.decode("yes") == (True, "mobile") and device.decode("Yes") == (False, "Yes")
    assert flag.decode(False) == (True, "desktop") and flag.decode(0) == (False, 0)
    assert engine.decode("GOOGLE") == (True, "google") and engine.decode("duckduckgo") == (False, "duckduckgo")
    strict = ContractField(name="engine", path="engine", type="string", shown=False, values=["google", "bing"])
    assert strict.decode("GOOGLE") == (False, "GOOGLE")


@pytest.mark.parametrize(("edit", "problem"), [
    ('path: "results.serp[0].rank", type: integer, shown: false', "needs nullable: true"),
    ('path: "labels[*].uuid", type: string, shown: false', "one [*], in a field of type: array"),
    ('path: "a[?b]", type: string, shown: false, nullable: true', "[?key=value]"),
    ("path: engine, type: string, shown: false, fold_case: true", "fold_case is for a field with values"),
    ("path: engine, type: array, shown: false, values: [a]", "values (an enum or a value map) is for a scalar"),
])
def test_a_malformed_field_is_refused_in_one_line(tmp_path, edit, problem):
    from rank_pipeline.transform.contract import ContractError

    old = "{name: frequency, path: frequency, type: string, shown: false,"
    with pytest.raises(ContractError, match=re.escape(problem)):
        load_contract(_models(tmp_path, [(old, "{name: frequency, " + edit + ",")]))


def _check(tmp_path, days: dict[date, list[dict]], edits):
    for day, records in days.items():
        writer = SnapshotWriter(tmp_path / "snapshots", "keywords", day)
        writer.write("acme", [{"id": f"k{i}", "type": "keyword", "attributes": a} for i, a in enumerate(records)],
                     parent_id="d1", extracted_at=datetime(2026, 11, 1, tzinfo=UTC))
        writer.commit()
    models = _models(tmp_path, edits)
    first, last = min(days), max(days)
    return check_snapshots(tmp_path / "snapshots", load_contract(models), load_thresholds(models), first, last,
                           endpoints=["keywords"])["keywords"]


def _default_keyword(i: int, engine: str = "google") -> dict:
    from rank_pipeline.sandbox.assumptions import keyword_record

    return keyword_record(
        f"k{i}", keyword=f"word {i}", search_engine=engine, device="desktop" if i % 2 else "mobile",
        location={"code": "2840", "name": "United States", "variant": "Country"}, language_code="en",
        frequency="daily", tag_ids=[], search_volume=10 * i, created_at="2025-01-01T00:00:00Z",
        position=None if i % 4 == 0 else 1 + i, url=None if i % 4 == 0 else f"https://example.com/{i}",
        captured="2026-11-01T06:00:00Z")["attributes"]


def test_an_enum_whose_values_change_case_fails_naming_the_values_and_their_shares(tmp_path):
    days = {DAY: [_default_keyword(i) for i in range(30)],
            date(2026, 11, 2): [_default_keyword(i, "GOOGLE" if i < 20 else "bing") for i in range(30)]}
    result = _check(tmp_path, days, [])
    (line,) = result.lines()
    assert line.startswith('keywords: searchEngine does not decode as declared (one of "google", "bing", "yahoo"): '
                           '"GOOGLE" in 66.7% of 30 records'), line
    assert "fold_case: true" in line and "on 2026-11-02" in line


def test_a_timestamp_field_receiving_text_fails_naming_the_path_and_the_value(tmp_path):
    records = [_default_keyword(i) for i in range(30)]
    records[3]["createdAt"] = "French"
    (line,) = _check(tmp_path, {DAY: records}, []).lines()
    assert line.startswith('keywords: createdAt does not decode as declared (a timestamp as "iso8601"): '
                           '"French" in 3.3% of 30 records'), line


def test_a_scalar_moved_into_an_array_is_read_by_its_element_and_an_empty_array_is_null_not_absent(tmp_path):
    records = []
    for i in range(30):
        a = _default_keyword(i)
        organic = a.pop("results")["organic"]
        a["results"] = {"serp": [] if organic["position"] is None else
                        [{"rank": organic["position"], "landingPage": organic["url"]}]}
        a["checkedAt"] = organic["capturedAt"]
        records.append(a)
    edits = [("path: results.organic.position,", 'path: "results.serp[0].rank",'),  # quoted: [ ] in a flow mapping
             ("path: results.organic.url,", 'path: "results.serp[0].landingPage",'),
             ("path: results.organic.capturedAt,", "path: checkedAt,")]
    result = _check(tmp_path, {DAY: records}, edits)
    assert result.passed, result.lines()
    assert "results.serp[*].rank" not in result.unread and "results.serp" not in result.unread

    records[5]["results"]["serp"] = {"rank": 3}  # an object where the contract reads an array
    lines = _check(tmp_path / "again", {DAY: records}, edits).lines()
    assert [x.split(" ", 2)[1] for x in lines] == ["results.serp[0].rank", "results.serp[0].landingPage"]
    assert all("results.serp is object in 3.3% where the contract reads an array" in x for x in lines), lines


def test_column_lineage_reaches_the_contract_path_through_arrays(tmp_path):
    """The marts' column lineage, and the data dictionary written from it, name the contract's own path of a
    field read through an array (so the shape check ranks its failures by the mart columns they feed)."""
    from rank_pipeline.transform import load_project
    from rank_pipeline.transform.docs import render_data_dictionary
    from rank_pipeline.transform.lineage import project_lineage

    models = _models(tmp_path, [("path: results.organic.position,", 'path: "results.serp[0].rank",'),
                                ("path: tagIds,", 'path: "labels[*].uuid",'),
                                ("path: searchEngine,", 'path: "engines[?primary=true].name", nullable: true,')])
    lineage = project_lineage(load_project(models))
    paths = {c: {r.path for r in lineage.sources("staging.stg_keywords", c)} for c in ("position", "tag_ids",
                                                                                       "search_engine")}
    assert paths == {"position": {"results.serp[0].rank"}, "tag_ids": {"labels[*].uuid"},
                     "search_engine": {"engines[?primary=true].name"}}
    assert {r.path for r in lineage.sources("marts.fct_keyword_rankings_daily", "position")} == {"results.serp[0].rank"}
    dictionary = render_data_dictionary(load_project(models), lineage=lineage)
    assert "`raw.keywords.attributes.results.serp[0].rank`" in dictionary
    assert "`raw.keywords.attributes.engines[?primary=true].name`" in dictionary
