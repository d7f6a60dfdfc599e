"""Encodings: a field declares how the vendor sends it (an integer as text, values that mean null); the shape
check decodes each value, names the ones that do not decode with their path, and runs the range and null
checks on the decoded value; the flattening decodes in SQL as the check does (a timestamp in a declared format
included). Through the command line:
a sentinel outside the declared encoding fails the run naming path and value and publishes nothing, and the
right contract (an edit of the contract alone) gives the marts of the default shape row by row."""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from support import assert_same_marts
from test_vendor_shape_doors import cli

from rank_pipeline.sandbox.assumptions import keyword_record
from rank_pipeline.sandbox.shapes import parse_shape
from rank_pipeline.settings import models_dir
from rank_pipeline.shape import check_snapshots, load_contract, load_thresholds
from rank_pipeline.snapshots.writer import SnapshotWriter

DAY = date(2026, 11, 1)
VENDOR_C = [  # the contract's edit for the sandbox shape vendor-c (paths renamed, two integers sent as text)
    ("name: keyword, path: keyword,", "name: keyword, path: term,"),
    ("name: position, path: results.organic.position, type: integer, range: [1, 100], shown: false, nullable: true,",
     "name: position, path: results.organic.rank, type: integer, range: [1, 100], shown: false, nullable: true,\n"
     '         encoding: {sent_as: string, null_values: ["-"]},'),
    ("name: search_volume, path: searchVolume, type: integer, shown: false, nullable: true,",
     "name: search_volume, path: monthlySearches, type: integer, shown: false, nullable: true,\n"
     '         encoding: {sent_as: string, null_values: [""]},'),
    ("name: tag_name, path: name,", "name: tag_name, path: label,"), ("name: color, path: color,", "name: color, path: hex,"),
    ("name: competitor_domain, path: domain,", "name: competitor_domain, path: website,"),
    ("name: competitor_name, path: name,", "name: competitor_name, path: title,"),
]


def _models(root: Path, edits: list[tuple[str, str]]) -> Path:
    folder = root / "dbt_like_sql"
    shutil.copytree(models_dir(), folder)
    contract = folder / "sources" / "vendor_contract.yml"
    text = contract.read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    contract.write_text(text)
    return folder


def _vendor_c_records(n: int = 60) -> list[dict]:
    shape = parse_shape("vendor-c")
    return [shape.keyword(keyword_record(
        f"00000000-0000-0000-0000-{i:012d}", keyword=f"word {i}", search_engine="google", device="desktop",
        location={"code": "2840", "name": "United States", "variant": "Country"}, language_code="en",
        frequency="daily", tag_ids=[], search_volume=None if i % 3 == 0 else 10 * i, created_at="2025-01-01T00:00:00Z",
        position=None if i % 5 == 0 else 1 + i % 100, url=None if i % 5 == 0 else f"https://example.com/{i}",
        captured="2026-11-01T06:00:00Z"), DAY) for i in range(n)]


def _check(tmp_path: Path, records: list[dict], edits: list[tuple[str, str]]):
    writer = SnapshotWriter(tmp_path / "snapshots", "keywords", DAY)
    writer.write("acme", records, parent_id="d1", extracted_at=datetime(2026, 11, 1, tzinfo=UTC))
    writer.commit()
    models = _models(tmp_path, edits)
    return check_snapshots(tmp_path / "snapshots", load_contract(models), load_thresholds(models), DAY, DAY,
                           endpoints=["keywords"])["keywords"]


def test_the_declared_encoding_decodes_and_the_checks_run_on_the_decoded_value(tmp_path):
    result = _check(tmp_path, _vendor_c_records(), VENDOR_C)
    assert result.passed, result.lines()


def test_a_sentinel_outside_the_encoding_is_named_with_its_path_and_values(tmp_path):
    edits = [(old, new.replace('null_values: ["-"]', 'null_values: ["n/a"]')) for old, new in VENDOR_C]
    result = _check(tmp_path, _vendor_c_records(), edits)
    (line,) = result.lines()
    assert line.startswith('keywords: results.organic.rank does not decode as declared '
                           '(integer sent as string; "n/a" means null): "-" in 20.0% of 60 records')


def test_a_decoded_value_outside_the_range_fails(tmp_path):
    records = _vendor_c_records()
    records[1]["attributes"]["results"]["organic"]["rank"] = "0"
    (line,) = _check(tmp_path, records, VENDOR_C).lines()
    assert 'results.organic.rank is outside 1..100: "0" in 1.7% of 60 records' in line


def test_the_contract_reads_a_field_by_name_and_decodes_it(tmp_path):
    contract = load_contract(_models(tmp_path, VENDOR_C))
    (record,) = _vendor_c_records(2)[1:]
    assert contract.value("keywords", "position", record["attributes"]) == 2
    assert contract.value("keywords", "position", {"results": {"organic": {"rank": "-"}}}) is None
    assert contract.value("keywords", "keyword", record["attributes"]) == "word 1"


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_through_the_cli_a_wrong_sentinel_fails_naming_it_and_the_right_contract_gives_the_default_marts(
        tmp_path, published_marts):
    vendor, default = tmp_path / "vendor", tmp_path / "default"
    shape = {"RANK_SANDBOX_SHAPE": "vendor-c"}
    wrong = _models(tmp_path / "wrong", [(o, n.replace('null_values: ["-"]', 'null_values: ["n/a"]'))
                                         for o, n in VENDOR_C])
    day = datetime.now(UTC).date().isoformat()  # both runs play it, should the test cross midnight, UTC
    failed = cli("run", "--date", day, data_dir=vendor, env={**shape, "RANK_PIPELINE_MODELS_DIR": str(wrong)})
    out = failed.stdout + failed.stderr
    assert failed.returncode == 1, out
    line = next(x for x in out.splitlines() if "results.organic.rank " in x)
    assert 'does not decode as declared (integer sent as string; "n/a" means null): "-" in' in line
    assert "Conversion Error" not in out and "cast" not in out.lower()
    assert not (vendor / "warehouse.duckdb").exists()  # nothing published

    right = {"RANK_PIPELINE_MODELS_DIR": str(_models(tmp_path / "right", VENDOR_C))}
    rebuild = cli("rebuild", data_dir=vendor, env=right)
    assert rebuild.returncode == 0, rebuild.stdout + rebuild.stderr
    baseline = cli("run", "--date", day, data_dir=default)
    assert baseline.returncode == 0, baseline.stderr
    assert_same_marts(published_marts(vendor / "warehouse.duckdb"), published_marts(default / "warehouse.duckdb"))


CAPTURED = '{name: captured_at, path: results.organic.capturedAt, type: timestamp, shown: false,'
STAMPED = [(CAPTURED, CAPTURED + '\n         encoding: {timestamp_format: "%d.%m.%Y %H:%M"},')]


def _stamped_records(texts: list[str]) -> list[dict]:
    records = [keyword_record(
        f"00000000-0000-0000-0000-{i:012d}", keyword=f"word {i}", search_engine="google", device="desktop",
        location={"code": "2840", "name": "United States", "variant": "Country"}, language_code="en",
        frequency="daily", tag_ids=[], search_volume=10 * i, created_at="2025-01-01T00:00:00Z", position=1 + i,
        url=f"https://example.com/{i}", captured="2026-11-01T06:00:00Z") for i in range(len(texts))]
    for record, text in zip(records, texts, strict=True):
        record["attributes"]["results"]["organic"]["capturedAt"] = text
    return records


def test_a_timestamp_in_a_declared_format_decodes_to_the_same_utc_instant_in_python_and_in_the_generated_sql(tmp_path):
    """``timestamp_format`` reads a timestamp sent as ``01.11.2026 06:05`` as 2026-11-01 06:05 UTC (the typed
    column staging receives), in the contract's Python reader and in the flattening SQL alike; the shape
    check passes."""
    import duckdb

    from rank_pipeline.transform.flatten import flattening_sql

    texts = ["01.11.2026 06:05", "1.11.2026 6:05", "31.10.2026 23:59"]
    records = _stamped_records(texts)
    assert _check(tmp_path, records, STAMPED).passed
    contract = load_contract(tmp_path / "dbt_like_sql")
    python = [contract.value("keywords", "captured_at", r["attributes"]) for r in records]
    assert python == [datetime(2026, 11, 1, 6, 5, tzinfo=UTC), datetime(2026, 11, 1, 6, 5, tzinfo=UTC),
                      datetime(2026, 10, 31, 23, 59, tzinfo=UTC)]
    (field,) = [f for f in contract.fields["keywords"] if f.name == "captured_at"]
    with duckdb.connect() as con:
        con.execute("create schema raw; create table raw.keywords (n integer, attributes json)")
        con.executemany("insert into raw.keywords values (?, ?)",
                        [(i, json.dumps(r["attributes"])) for i, r in enumerate(records)])
        sql = flattening_sql("keywords", [field], ["n", "attributes"])
        sql_values = [v for _, v in con.execute(f"select * from ({sql}) order by n").fetchall()]
    assert sql_values == python


def test_a_timestamp_outside_its_declared_format_is_named_with_its_path_and_value(tmp_path):
    records = _stamped_records(["01.11.2026 06:05"] * 3 + ["2026-11-01T06:05:00Z"])
    (line,) = _check(tmp_path, records, STAMPED).lines()
    assert line.startswith('keywords: results.organic.capturedAt does not decode as declared (a timestamp as '
                           '"%d.%m.%Y %H:%M" (UTC)): "2026-11-01T06:05:00Z" in 25.0% of 4 records'), line


@pytest.mark.parametrize(("edit", "problem"), [
    ('encoding: {timestamp_format: "%d.%m.%Y %H:%M %z"}', "the time is taken as UTC"),
    ('encoding: {timestamp_format: "%H:%M"}', "a date (%Y, %m, %d)"),
])
def test_a_timestamp_format_is_refused_unless_python_and_duckdb_read_it_alike(tmp_path, edit, problem):
    from rank_pipeline.transform.contract import ContractError

    with pytest.raises(ContractError, match=re.escape(problem)):
        load_contract(_models(tmp_path, [(CAPTURED, CAPTURED + "\n         " + edit + ",")]))
    folder = tmp_path / "position"
    folder.mkdir()
    position = "name: position, path: results.organic.position, type: integer,"
    with pytest.raises(ContractError, match="timestamp_format is for a timestamp"):  # of an integer field
        load_contract(_models(folder, [(position, position + ' encoding: {timestamp_format: "%Y-%m-%d"},')]))
