"""``vendor.<endpoint>`` in a staging model is found on the parsed SQL, not by matching text: a string literal
or a block comment holding ``vendor.tags`` stays as written, the generated CTEs join a ``WITH RECURSIVE`` after
its keyword and an existing CTE list in front, and the compiled model runs on DuckDB with the contract's
columns."""

from __future__ import annotations

import json

import duckdb
import pytest

from rank_pipeline.settings import models_dir
from rank_pipeline.transform.contract import load_contract
from rank_pipeline.transform.errors import ModelSqlError
from rank_pipeline.transform.flatten import compile_vendor_relations

RAW = {"tags": ["snapshot_date", "account", "id", "attributes"]}
TAGS = [{"name": "brand", "color": "#112233", "createdAt": "2026-01-01T00:00:00Z"},
        {"name": "local", "color": None, "createdAt": "2026-02-01T00:00:00Z"}]


def _run(model: str) -> list[tuple]:
    compiled = compile_vendor_relations(model, load_contract(models_dir()), RAW, "stg_tags.sql")
    with duckdb.connect() as con:
        con.execute("create schema raw; create table raw.tags (snapshot_date date, account varchar, id varchar, "
                    "attributes json)")
        con.executemany("insert into raw.tags values ('2026-11-01', 'acme', ?, ?)",
                        [(f"t{i}", json.dumps(t)) for i, t in enumerate(TAGS)])
        return con.execute(compiled).fetchall()


def test_a_string_literal_naming_vendor_tags_is_kept_as_written():
    rows = _run("select 'see vendor.tags' as note, tag_name from vendor.tags order by tag_name")
    assert rows == [("see vendor.tags", "brand"), ("see vendor.tags", "local")]


def test_a_block_comment_is_no_reference():
    model = "/* reads vendor.keywords? no: */ select tag_name /* vendor.usage */ from vendor.tags order by 1"
    compiled = compile_vendor_relations(model, load_contract(models_dir()), RAW, "stg_tags.sql")
    assert "vendor_keywords" not in compiled and "vendor_usage" not in compiled
    assert "/* reads vendor.keywords? no: */" in compiled and "/* vendor.usage */" in compiled
    assert _run(model) == [("brand",), ("local",)]


def test_the_generated_cte_joins_with_recursive_after_its_keyword():
    model = """with recursive n(i) as (select 1 union all select i + 1 from n where i < 2)
select i, tag_name from n, vendor.tags order by i, tag_name"""
    compiled = compile_vendor_relations(model, load_contract(models_dir()), RAW, "stg_tags.sql")
    assert compiled.lower().startswith("with recursive\nvendor_tags as (")
    assert _run(model) == [(1, "brand"), (1, "local"), (2, "brand"), (2, "local")]


def test_an_existing_cte_list_keeps_its_ctes_after_the_generated_one_and_its_lines():
    model = """-- one row per tag
with

source as (
    select * from "vendor"."tags"
)

select tag_name, color, created_at from source order by tag_name"""
    compiled = compile_vendor_relations(model, load_contract(models_dir()), RAW, "stg_tags.sql")
    assert compiled.startswith("-- one row per tag\nwith\nvendor_tags as (")
    assert compiled.rstrip().endswith("select tag_name, color, created_at from source order by tag_name")
    rows = _run(model)
    assert [(r[0], r[1]) for r in rows] == [("brand", "#112233"), ("local", None)]
    assert str(rows[0][2].date()) == "2026-01-01"  # a typed timestamp, from the contract


def test_an_undeclared_vendor_relation_is_refused_in_one_line():
    with pytest.raises(ModelSqlError, match=r"stg_x.sql: reads vendor.nothing, which the vendor's contract does not"):
        compile_vendor_relations("select * from vendor.nothing", load_contract(models_dir()), RAW, "stg_x.sql")
