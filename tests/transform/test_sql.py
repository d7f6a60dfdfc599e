"""``rank_pipeline.transform.sql.table_columns`` gives ``information_schema.columns``' answer, read faster."""

from __future__ import annotations

import duckdb

from rank_pipeline.transform.sql import table_columns


def _information_schema(con: duckdb.DuckDBPyConnection, schema: str, name: str) -> dict[str, str]:
    rows = con.execute(
        "select column_name, data_type from information_schema.columns where table_catalog = current_database() "
        "and table_schema = ? and table_name = ? order by ordinal_position", [schema, name]).fetchall()
    return {column: kind for column, kind in rows}


def test_table_columns_equals_information_schema_on_every_relation_of_a_built_warehouse(warehouse):
    relations = warehouse.execute("select table_schema, table_name from information_schema.tables "
                                  "where table_catalog = current_database()").fetchall()
    assert len(relations) > 30  # raw tables, seeds and every shipped model
    for schema, name in relations:
        expected = _information_schema(warehouse, schema, name)
        assert expected, (schema, name)
        assert table_columns(warehouse, schema, name) == expected, (schema, name)


def test_table_columns_equals_information_schema_on_every_kind_of_type_and_relation():
    with duckdb.connect() as con:
        con.execute("create schema s; create type mood as enum ('calm', 'busy')")
        con.execute('create table s.t (a integer, b decimal(18,3), c struct(x int, "y z" varchar), d varchar[], '
                    'e map(varchar, int), f timestamp with time zone, g date, h double, i json, j uuid, k blob, '
                    '"odd ""name""" int, l interval, m int[3], n union(a int, b varchar), o mood, p hugeint)')
        con.execute("create view s.v as select a, c, sum(h) over () as w from s.t")
        con.execute("create table s.gone (x int); create view s.broken as select x from s.gone; drop table s.gone")
        con.execute("attach ':memory:' as other; create schema other.s; create table other.s.t (only_here int)")
        for schema, name in [("s", "t"), ("s", "v"), ("s", "broken"), ("s", "missing"), ("nope", "t")]:
            assert table_columns(con, schema, name) == _information_schema(con, schema, name), (schema, name)
        assert list(table_columns(con, "s", "t"))[11] == 'odd "name"'
        assert table_columns(con, "s", "missing") == {}
        con.execute("use other")  # the current database's relation, not the first one found
        assert table_columns(con, "s", "t") == {"only_here": "INTEGER"} == _information_schema(con, "s", "t")
