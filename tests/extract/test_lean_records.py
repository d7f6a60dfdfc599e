"""The lean record path: a page read raw (attributes as the vendor's bytes) gives the snapshot rows and the
children's requests that the same page parsed whole gives."""

from __future__ import annotations

import gc
import json
from datetime import UTC, date, datetime

from rank_pipeline.api.endpoints import children_of
from rank_pipeline.api.listing import RawRecord, decode_raw_page
from rank_pipeline.api.transport import decode_json
from rank_pipeline.extract.parent_reads import ParentReads
from rank_pipeline.sandbox import World, WorldConfig
from rank_pipeline.settings import models_dir
from rank_pipeline.snapshots.schema import arrow_schema, records_table
from rank_pipeline.transform.contract import loaded_contract

AT = datetime(2026, 11, 20, 6, 30, 1, 123456, tzinfo=UTC)


def _keywords() -> list[dict]:
    world = World(WorldConfig.scaled(3, 120, seed=5), today=date(2026, 11, 20))
    records = []
    for domain in world.domains(world.accounts[0].account_id):
        records += world.keywords(domain["id"])
    return records


def _body(records: list) -> bytes:
    return json.dumps({"data": records}, ensure_ascii=False, separators=(",", ":")).encode()


def _tables(records: list) -> tuple:
    page = decode_raw_page(_body(records))
    assert all(type(r) is RawRecord for r in page.data)
    raw = records_table("keywords", date(2026, 11, 20), "acme", page.data, parent_id="d1", extracted_at=AT)
    parsed = records_table("keywords", date(2026, 11, 20), "acme", json.loads(_body(records))["data"],
                           parent_id="d1", extracted_at=AT)
    raw.validate(full=True)
    return raw, parsed


def test_raw_rows_hold_the_same_json_values_as_parsed_rows():
    records = _keywords()
    records[0] = {**records[0], "attributes": {**records[0]["attributes"], "keyword": "café ☕"}}
    records[1] = {**records[1], "attributes": None}  # null attributes: {} in both
    records[2] = {"id": 7, "type": "keywords", "attributes": {"n": 1}, "links": {"self": "x"}}
    raw, parsed = _tables(records)
    assert raw.schema == arrow_schema("keywords")
    assert raw.drop_columns(["attributes"]).equals(parsed.drop_columns(["attributes"]))
    assert [json.loads(a) for a in raw.column("attributes").to_pylist()] == \
        [json.loads(a) for a in parsed.column("attributes").to_pylist()]
    assert raw.column("attributes")[1].as_py() == "{}"
    assert raw.column("id")[2].as_py() == "7"
    assert raw.column("extracted_at")[0].as_py() == AT


def test_a_page_the_raw_reading_does_not_suit_is_read_the_generic_way():
    assert isinstance(decode_raw_page(_body([{"type": "x", "attributes": {}}])), dict)  # no id: by content
    assert isinstance(decode_raw_page(b'{"data": {"id": 1}}'), dict)  # not a list: the paginator says so
    assert isinstance(decode_raw_page(b'{"data": ["a"]}'), dict)
    assert decode_raw_page(b'{"data": [') is None  # cut short: not JSON, retried
    assert decode_json(b'{"data": [{"id": 1, "attributes": {"x": NaN}}]}')["data"][0]["id"] == 1


def test_parent_reads_ask_for_the_requests_the_whole_records_ask_for():
    fields = loaded_contract(models_dir())
    records = _keywords()
    records.append({"id": "odd", "type": "keywords", "attributes": None})
    children = children_of("keywords")
    reads = ParentReads.of("keywords", children, fields)
    assert reads is not None
    whole = {r for record in records for c in children for r in c.requests_from_parent(c, record, fields)}
    cut = set()
    read = 0
    for record in decode_raw_page(_body(records)).data:
        sparse = reads.new(record)
        if sparse is not None:
            read += 1
            cut.update(r for c in children for r in c.requests_from_parent(c, sparse, fields))
    assert whole and cut == whole
    assert read < len(records) / 10  # a few engines and locations: most records are skipped


def test_a_page_read_at_once_gives_what_its_records_read_one_by_one_give():
    """``new_page`` (the extraction's: a page's attributes decoded in one call) equals ``new`` record by record,
    with a member absent, and with a record that is not an object (the page then read one by one)."""
    fields = loaded_contract(models_dir())
    children = children_of("keywords")
    records = _keywords()
    engine_only = {"id": "engine-only", "type": "keywords", "attributes": {"searchEngine": "google"}}
    for extra in ([engine_only], [engine_only, {"id": "odd", "type": "keywords", "attributes": None}]):
        page = decode_raw_page(_body(records + extra)).data
        one, many = ParentReads.of("keywords", children, fields), ParentReads.of("keywords", children, fields)
        assert one is not None and many is not None
        by_one = [d for d in map(one.new, page) if d is not None]
        half = len(page) // 2  # two pages: what the first read is not read again
        assert by_one == many.new_page(page[:half]) + many.new_page(page[half:])
        assert {"id": "engine-only", "type": "keywords", "attributes": {"searchEngine": "google"}} in by_one
        assert len(by_one) < len(page) / 5


def test_children_reading_the_whole_record_get_no_parent_reads():
    # a domain's keywords and competitors name the domain (parent_record_id): read whole, never skipped
    assert ParentReads.of("domains", children_of("domains"), loaded_contract(models_dir())) is None


def test_a_page_of_objects_is_built_whole_with_the_same_rows():
    """Every record's attributes an object: the columns are built from the page's bytes at once (no record
    falls back), and give the rows the parsed records give, whatever the ids and types are."""
    records = _keywords()[:50]
    variants = {
        "one type, text ids": records,
        "a numeric id": [{**records[0], "id": 7}, *records[1:]],
        "a non-ASCII id": [{**records[0], "id": "mot-clé"}, *records[1:]],
        "two types": [*records[:-1], {**records[-1], "type": "keyword"}],
        "a missing type": [*records[:-1], {k: v for k, v in records[-1].items() if k != "type"}],
        "one record": records[:1],
    }
    for name, page in variants.items():
        raw, parsed = _tables(page)
        assert raw.schema == arrow_schema("keywords"), name
        assert raw.equals(parsed), name  # the page was serialized compactly, as a dict's attributes are
        assert [json.loads(a) for a in raw.column("attributes").to_pylist()] == \
            [r["attributes"] for r in page], name
        assert raw.column("id").to_pylist() == [str(r["id"]) for r in page], name
        assert raw.column("type").to_pylist() == [r.get("type") for r in page], name
    empty = records_table("keywords", date(2026, 11, 20), "acme", [], parent_id="d1", extracted_at=AT)
    assert empty.num_rows == 0 and empty.schema == arrow_schema("keywords")


def test_a_pages_records_and_lookup_members_are_not_tracked_by_the_garbage_collector():
    """A page's thousand records would otherwise start a young collection each page; decoded JSON holds no cycle."""
    records = _keywords()[:50]
    page = decode_raw_page(_body(records))
    assert not gc.is_tracked(page) and not any(gc.is_tracked(r) for r in page.data)
    reads = ParentReads.of("keywords", children_of("keywords"), loaded_contract(models_dir()))
    assert reads is not None
    members = reads._page_decoder.decode(b"[" + b",".join(r.attributes for r in page.data) + b"]")
    assert members and not any(gc.is_tracked(m) for m in members)
