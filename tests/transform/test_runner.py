"""The dbt-like runner on small throwaway projects (rank_pipeline.transform; DESIGN.md "SQL models")."""

from __future__ import annotations

import random
import textwrap
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pandas as pd
import pytest
import sqlglot
from sqlglot import exp
from support import declare_raw_sources

from rank_pipeline.transform import (
    BuildError,
    DependencyError,
    DuckDBEngine,
    Model,
    ModelConfigError,
    ModelSqlError,
    TestExecutionError,
    incremental_sql,
    load_project,
    loaded_project,
    run_tests,
)
from rank_pipeline.transform.materialize import build, build_all

D0 = date(2026, 3, 1)


def write_project(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (text dedented)."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    declare_raw_sources(root)
    return root


def yml(name: str, materialized: str = "view", extra_config: str = "", body: str = "") -> str:
    config = f"{{materialized: {materialized}{', ' + extra_config if extra_config else ''}}}"
    return f"models:\n  - name: {name}\n    description: test model {name}\n    config: {config}\n{body}"


BASE = {
    "staging/stg_kw.sql": """
        -- rename only
        with source as (select * from raw.keywords)
        select id as keyword_id, snapshot_date, cast(position as integer) as position from source;
        """,
    "staging/stg_kw.yml": yml("stg_kw"),
    "seeds/ctr.csv": "position,ctr\n1,0.3\n2,0.15\n3,0.1\n",
    "seeds/ctr.yml": """
        seeds:
          - name: ctr
            description: CTR by position
            version: 2
            config: {column_types: {position: integer, ctr: double}}
        """,
    "marts/fct_kw.sql": """
        with kw as (select * from staging.stg_kw),
        fct_agg as (select 1 as one)  -- a CTE named like a model is not a dependency
        select kw.*, c.ctr from kw left join seeds.ctr as c on c.position = kw.position cross join fct_agg
        """,
    "marts/fct_kw.yml": yml("fct_kw", "table"),
    "marts/fct_agg.sql": "select snapshot_date, count(*) as n from marts.fct_kw group by all\n",
    "marts/fct_agg.yml": yml("fct_agg", "table"),
}


def raw_keywords(con, rows: list[tuple[date, str, object]]) -> None:
    """(Re)create raw.keywords(snapshot_date, id, position VARCHAR) with ``rows``."""
    con.execute("create schema if not exists raw")
    con.execute("create or replace table raw.keywords (snapshot_date date, id varchar, position varchar)")
    if rows:
        con.executemany("insert into raw.keywords values (?, ?, ?)", [(d, k, p) for d, k, p in rows])


def test_discovery_dependencies_and_order(tmp_path):
    project = load_project(write_project(tmp_path, BASE))
    assert set(project.models) == {"stg_kw", "fct_kw", "fct_agg"}
    stg, fct, agg = (project.models[n] for n in ("stg_kw", "fct_kw", "fct_agg"))
    assert (stg.schema, stg.qualified_name, stg.materialized) == ("staging", "staging.stg_kw", "view")
    assert stg.depends_on == {"raw.keywords"}
    assert fct.depends_on == {"staging.stg_kw", "seeds.ctr"}  # CTEs kw and fct_agg are not dependencies
    assert agg.depends_on == {"marts.fct_kw"}
    assert [m.name for m in project.topological_order()] == ["stg_kw", "fct_kw", "fct_agg"]
    assert project.seeds["ctr"].version == "2"
    assert project.seeds["ctr"].column_types == {"position": "integer", "ctr": "double"}
    assert [m.name for m in project.downstream("staging.stg_kw")] == ["fct_kw"]


def test_a_loaded_project_is_parsed_again_only_when_a_file_changed(tmp_path):
    root = write_project(tmp_path, BASE)
    first = loaded_project(root)
    assert loaded_project(root) is first and set(first.models) == {"stg_kw", "fct_kw", "fct_agg"}
    (root / "marts" / "fct_agg.sql").write_text("select snapshot_date, count(*) as m from marts.fct_kw group by all\n")
    edited = loaded_project(root)  # same size, same second: the content decides
    assert edited is not first and "as m" in edited.models["fct_agg"].sql
    write_project(root, {"marts/fct_more.sql": "select * from marts.fct_agg\n", "marts/fct_more.yml": yml("fct_more")})
    assert set(loaded_project(root).models) == {"stg_kw", "fct_kw", "fct_agg", "fct_more"}


def test_build_all_view_table_and_seed(tmp_path):
    project = load_project(write_project(tmp_path, BASE))
    con = duckdb.connect()
    raw_keywords(con, [(D0, "a", "1"), (D0, "b", "3"), (D0 + timedelta(1), "a", "2")])
    results = build_all(DuckDBEngine(con), project)
    assert list(results) == ["seeds.ctr", "staging.stg_kw", "marts.fct_kw", "marts.fct_agg"]
    assert results["seeds.ctr"].rows == 3 and results["staging.stg_kw"].rows is None
    assert results["marts.fct_kw"].rows == 3 and results["marts.fct_agg"].rows == 2
    assert con.execute("select data_type from information_schema.columns where table_schema = 'seeds' "
                       "and column_name = 'position'").fetchone() == ("INTEGER",)
    assert "version 2" in con.execute("select comment from duckdb_tables() where table_name = 'ctr'").fetchone()[0]
    assert con.execute("select keyword_id, ctr from marts.fct_kw order by 1, snapshot_date").fetchall() == [
        ("a", 0.3), ("a", 0.15), ("b", 0.1)]
    # a view follows raw at once; a table only when rebuilt
    con.execute("insert into raw.keywords values (?, 'c', '2')", [D0])
    assert con.execute("select count(*) from staging.stg_kw").fetchone() == (4,)
    assert con.execute("select count(*) from marts.fct_kw").fetchone() == (3,)
    assert build(DuckDBEngine(con), project.models["fct_kw"]).rows == 4
    assert con.execute("select table_name from information_schema.tables where table_name like '%build%'").fetchall() == []


def test_failed_table_build_keeps_the_previous_table(tmp_path):
    project = load_project(write_project(tmp_path, BASE))
    con = duckdb.connect()
    raw_keywords(con, [(D0, "a", "1")])
    build_all(DuckDBEngine(con), project)
    con.execute("insert into raw.keywords values (?, 'x', 'not a number')", [D0])
    with pytest.raises(BuildError, match="fct_kw") as err:
        build(DuckDBEngine(con), project.models["fct_kw"])
    assert "unchanged" in str(err.value)
    assert con.execute("select keyword_id from marts.fct_kw").fetchall() == [("a",)]
    # switching a model from table to view (and back) replaces the relation kind
    view = write_project(tmp_path, {"marts/fct_kw.yml": yml("fct_kw", "view")})
    con.execute("delete from raw.keywords where id = 'x'")
    build(DuckDBEngine(con), load_project(view).models["fct_kw"])
    assert con.execute("select table_type from information_schema.tables where table_name = 'fct_kw'").fetchone() == ("VIEW",)


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"marts/a.sql": "select * from marts.b", "marts/a.yml": yml("a"),
          "marts/b.sql": "select * from marts.c", "marts/b.yml": yml("b"),
          "marts/c.sql": "select * from marts.a", "marts/c.yml": yml("c")},
         "cycle between models: marts.a -> marts.b -> marts.c -> marts.a"),
        ({"marts/a.sql": "select * from marts.a", "marts/a.yml": yml("a")}, "reads itself"),
        ({"marts/a.sql": "select * from staging.stg_nope", "marts/a.yml": yml("a")}, "no model staging.stg_nope"),
        ({"marts/a.sql": "select * from seeds.nope", "marts/a.yml": yml("a")}, "no seed seeds.nope"),
        ({"marts/a.sql": "select * from raw.keyword", "marts/a.yml": yml("a")}, "no raw table raw.keyword"),
        ({"marts/a.sql": "select * from marts.stg_kw", "marts/a.yml": yml("a")}, "is in schema staging"),
        ({"marts/a.sql": "select 1 as x", "marts/a.yml": yml("a", body=(
            "    columns:\n      - name: x\n        tests: [{relationships: {to: marts.gone, field: id}}]\n"))},
         "no model marts.gone"),
    ],
)
def test_reference_errors_name_the_file_and_the_reference(tmp_path, files, message):
    write_project(tmp_path, BASE | files)
    with pytest.raises(DependencyError, match=message.replace(".", r"\.").replace("(", r"\(")) as err:
        load_project(tmp_path)
    if "cycle" not in message:  # a cycle names the models, not one file
        assert str(tmp_path / "marts" / "a.") in str(err.value)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("select * from keywords", "neither a CTE nor qualified"),
        ("select 1; select 2", "exactly one SELECT"),
        ("create table marts.a as select 1", "exactly one SELECT"),
        ("select * from main.keywords", "schema 'main'"),
        ("select * from wh.raw.keywords", "names a database"),
        ("select from where", "cannot parse"),
    ],
)
def test_sql_errors(tmp_path, sql, message):
    write_project(tmp_path, BASE | {"marts/a.sql": sql, "marts/a.yml": yml("a")})
    with pytest.raises(ModelSqlError, match=message) as err:
        load_project(tmp_path)
    assert str(tmp_path / "marts" / "a.sql") in str(err.value)


@pytest.mark.parametrize(
    ("a_yml", "message"),
    [
        (yml("a", "ephemeral"), "config.materialized is 'ephemeral'; use one of 'view', 'table' or 'incremental'"),
        ("models:\n  - name: a\n    config: {materialized: view}\n", r"missing required key\(s\) \['description'\]"),
        (yml("a") + "    owner: me\n", r"unknown key\(s\) \['owner'\]"),
        (yml("a", "incremental", "incremental: {lookback_days: -1}"), "config.incremental.lookback_days: Input should be greater than or equal to 0"),
        (yml("a", "table", "incremental: {lookback_days: 1}"), "materialized is not incremental"),
        (yml("a", body="    columns:\n      - name: x\n        tests: [uniq]\n"), "unknown test 'uniq'"),
        (yml("a", body="    tests: [not_null]\n"), "not_null is a column test"),
        (yml("a", body="    columns:\n      - name: x\n        tests: [{unique_combination: [x]}]\n"),
         "model-level test"),
        (yml("a", body="    columns:\n      - name: x\n        tests: [{accepted_values: {values: []}}]\n"),
         r"columns\[0\]\.tests\[0\]\.accepted_values\.values: List should have at least 1 item"),
        (yml("a", body="    tests: [{expression: 'x >'}]\n"), "not valid DuckDB SQL"),
        (yml("a", body="    tests: [{expression: 'x > 1'}, {expression: 'x > 1'}]\n"), "not unique"),
        (yml("a", "view", "blocking_tests: [nope]"), "blocking_tests names unknown tests"),
        (yml("b"), "there is no b.sql"),
        ("models: [\n", "not valid YAML"),
        (yml("a", body="    tests:\n      - expression: 'x > 0'\n        blocking: true\n        blocking: false\n"),
         "duplicate key 'blocking'"),
        ("modls: []\n", "unknown top-level key"),
    ],
)
def test_yml_validation_errors_name_file_model_and_problem(tmp_path, a_yml, message):
    write_project(tmp_path, BASE | {"marts/a.sql": "select 1 as x", "marts/a.yml": a_yml})
    with pytest.raises(ModelConfigError, match=message) as err:
        load_project(tmp_path)
    assert str(tmp_path / "marts") in str(err.value)


@pytest.mark.parametrize(
    ("a_yml", "line"),
    [
        (yml("a", body="    columns:\n      - name: x\n        descripton: typo\n"),
         "model 'a': columns[0]: unknown key(s) ['descripton']; allowed: name, description, data_type, tests, meta"),
        (yml("a", "incremental", "incremental: {lookback_days: '2'}"),
         "model 'a': config.incremental.lookback_days: Input should be a valid integer (got '2')"),
        (yml("a", body="    tests: [{expression: 'x > 0', blocking: 'yes'}]\n"),
         "model 'a': tests[0].blocking: Input should be a valid boolean (got 'yes')"),
    ],
)
def test_unknown_key_or_wrong_type_is_one_line_naming_file_and_key_path(tmp_path, a_yml, line):
    write_project(tmp_path, BASE | {"marts/a.sql": "select 1 as x", "marts/a.yml": a_yml})
    with pytest.raises(ModelConfigError) as err:
        load_project(tmp_path)
    assert str(err.value) == f"{tmp_path / 'marts' / 'a.yml'}, {line}"


def test_every_problem_of_an_entry_is_its_own_line(tmp_path):
    bad = yml("a", "ephemeral", body="    owner: me\n    columns:\n      - name: x\n        tests: [uniq]\n")
    write_project(tmp_path, BASE | {"marts/a.sql": "select 1 as x", "marts/a.yml": bad})
    with pytest.raises(ModelConfigError) as err:
        load_project(tmp_path)
    where = f"{tmp_path / 'marts' / 'a.yml'}, model 'a': "
    assert sorted(str(err.value).splitlines()) == sorted([
        where + "config.materialized is 'ephemeral'; use one of 'view', 'table' or 'incremental'",
        where + "columns[0].tests[0]: unknown test 'uniq'; known tests: unique, not_null, accepted_values, "
                "relationships, expression, unique_combination",
        where + "unknown key(s) ['owner']; allowed: columns, tests, name, description, config, meta, unit_tests",
    ])


def test_model_without_yml_and_sql_outside_schema_folders(tmp_path):
    write_project(tmp_path, BASE | {"marts/a.sql": "select 1 as x"})
    with pytest.raises(ModelConfigError, match="has no .yml entry"):
        load_project(tmp_path)
    (tmp_path / "marts" / "a.sql").unlink()
    write_project(tmp_path, {"analysis/q.sql": "select 1"})
    with pytest.raises(ModelConfigError, match="models live under staging/ or marts/"):
        load_project(tmp_path)


TESTED = {
    "marts/dim.sql": "select * from (values ('d1'), ('d2')) as t(domain_id)\n",
    "marts/dim.yml": yml("dim", "table"),
    "marts/fct.sql": "select * from raw.keywords\n",
    "marts/fct.yml": yml("fct", "table", "blocking_tests: [not_null_id]", body="""\
    columns:
      - name: id
        tests: [not_null, unique]
      - name: device
        tests: [{accepted_values: {values: [desktop, mobile]}, blocking: true}]
      - name: domain_id
        tests: [{relationships: {to: marts.dim, field: domain_id}}]
    tests:
      - expression: "position between 1 and 100"
      - unique_combination: [id, device]
        name: one_row_per_id_device
"""),
}


def _fct(con, rows):
    con.execute("create schema if not exists raw")
    con.execute("create or replace table raw.keywords "
                "(snapshot_date date, id varchar, device varchar, domain_id varchar, position integer)")
    con.executemany("insert into raw.keywords values (?, ?, ?, ?, ?)", rows)


def test_each_test_kind_passes_on_clean_data_and_fails_on_crafted_data(tmp_path):
    project = load_project(write_project(tmp_path, TESTED))
    fct = project.models["fct"]
    assert [(t.name, t.blocking) for t in fct.tests] == [
        ("not_null_id", True), ("unique_id", False), ("accepted_device", True),
        ("domain_id_in_dim", False), ("position_between_1_and_100", False),
        ("one_row_per_id_device", False)]
    con = duckdb.connect()
    clean = [(D0, "k1", "desktop", "d1", 1), (D0, "k2", "mobile", "d2", 100), (D0, "k3", None, None, 50)]
    _fct(con, clean)
    build_all(DuckDBEngine(con), project)
    results = run_tests(DuckDBEngine(con), fct)
    assert [(r.name, r.passed, r.failures) for r in results] == [(t.name, True, 0) for t in fct.tests]

    bad = clean + [
        (D0, None, "desktop", "d1", 5),       # not_null
        (D0, "k1", "tablet", "d9", 0),        # unique(k1 twice), accepted_values, relationships, expression
        (D0, "k2", "mobile", "d2", None),     # unique(k2 twice), unique_combination (k2, mobile), expression (null)
    ]
    _fct(con, bad)
    build(DuckDBEngine(con), fct)
    got = {r.name: r for r in run_tests(DuckDBEngine(con), fct)}
    assert {n: r.failures for n, r in got.items()} == {
        "not_null_id": 1, "unique_id": 2, "accepted_device": 1, "domain_id_in_dim": 1,
        "position_between_1_and_100": 2, "one_row_per_id_device": 1}
    assert not any(r.passed for r in got.values())
    assert got["accepted_device"].sample_rows[0]["device"] == "tablet"
    assert sorted(r["id"] for r in got["unique_id"].sample_rows) == ["k1", "k2"]
    assert got["domain_id_in_dim"].sample_rows[0]["domain_id"] == "d9"
    # the SQL is runnable as-is and returns the failing rows
    assert len(con.execute(got["position_between_1_and_100"].sql).fetchall()) == 2
    # partition scope: only that day's rows are tested
    con.execute("insert into raw.keywords values (?, null, 'x', 'd1', 1)", [D0 + timedelta(1)])
    build(DuckDBEngine(con), fct)
    day = {r.name: r.failures for r in run_tests(DuckDBEngine(con), fct, D0 + timedelta(1))}
    assert day["not_null_id"] == 1 and day["unique_id"] == 0 and day["accepted_device"] == 1


def _built_nodate(root: Path, more_tests: str = "") -> tuple[duckdb.DuckDBPyConnection, Model]:
    """``marts.nodate`` (ids a, null, null, b, b; no date column) built in a new DuckDB, with ``not_null`` and
    ``unique`` on ``id`` and ``more_tests`` (yml lines of model tests)."""
    project = load_project(write_project(root, {
        "marts/nodate.sql": "select * from (values ('a'), (null), (null), ('b'), ('b')) as t(id)\n",
        "marts/nodate.yml": yml("nodate", "table", body="""\
    columns:
      - name: id
        tests: [not_null, unique]
""" + more_tests)}))
    con = duckdb.connect()
    build_all(DuckDBEngine(con), project)
    return con, project.models["nodate"]


def test_a_model_without_the_partition_column_is_tested_whole_on_a_daily_run(tmp_path):
    """A daily run's tests read only that day's rows of a relation with the partition column; a relation
    without it is tested whole (run_tests asks the catalog once per relation)."""
    con, model = _built_nodate(tmp_path)
    results = run_tests(DuckDBEngine(con), model, D0, until=D0 + timedelta(2))
    assert [(r.name, r.failures) for r in results] == [("not_null_id", 2), ("unique_id", 1)]
    assert not any("snapshot_date" in r.sql for r in results)


def test_a_test_that_cannot_run_is_named_among_tests_that_run(tmp_path):
    """The tests of a relation are counted in one query; when it fails, the test that cannot run is found and
    named, not the first one."""
    con, model = _built_nodate(tmp_path, """\
    tests:
      - expression: "no_such_column > 0"
        name: reads_a_missing_column
""")
    with pytest.raises(TestExecutionError, match=r"(?s)test reads_a_missing_column of marts.nodate could not run on "
                                                 r"duckdb: .*no_such_column") as raised:
        run_tests(DuckDBEngine(con), model)
    assert raised.value.index == 2


def test_running_tests_on_an_unbuilt_model_is_a_clear_error(tmp_path):
    project = load_project(write_project(tmp_path, TESTED))
    with pytest.raises(TestExecutionError, match=r"(?s)test not_null_id of marts.fct could not run on duckdb: .*Is it built"):
        run_tests(DuckDBEngine(duckdb.connect()), project.models["fct"])


# ---------------------------------------------------------------------------------- incremental

LOOKBACK = 2
INCREMENTAL = {
    "staging/stg_kw.sql": """
        select id as keyword_id, snapshot_date, cast(position as integer) as position from raw.keywords
        """,
    "staging/stg_kw.yml": yml("stg_kw"),
    "seeds/labels.csv": "keyword_id,label\nk0,brand\nk1,generic\nk2,generic\n",
    "marts/fct_inc.sql": """
        with kw as (select * from staging.stg_kw),
        windowed as (
            select
                k.keyword_id,
                k.snapshot_date,
                k.position,
                prev.position - k.position as change_1d,
                avg(k.position) over (
                    partition by k.keyword_id order by k.snapshot_date
                    range between interval 2 days preceding and current row
                ) as avg_position_3d
            from kw as k
            left join staging.stg_kw as prev
                on prev.keyword_id = k.keyword_id and prev.snapshot_date = k.snapshot_date - 1
        )
        select w.*, l.label from windowed as w left join seeds.labels as l using (keyword_id)
        """,
    "marts/fct_inc.yml": yml("fct_inc", "incremental",
                             f"incremental: {{date_column: snapshot_date, lookback_days: {LOOKBACK}}}"),
}


def _history(n_days: int, seed: int = 7) -> list[tuple[date, str, object]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n_days):
        d = D0 + timedelta(i)
        for k in range(3):
            if rng.random() < 0.2:
                continue  # keyword missing that day (gaps)
            rows.append((d, f"k{k}", None if rng.random() < 0.15 else str(rng.randint(1, 100))))
    return rows


def _pandas_truth(rows) -> pd.DataFrame:
    """Ground truth of fct_inc computed independently with pandas."""
    df = pd.DataFrame(rows, columns=["snapshot_date", "keyword_id", "position"])
    df["snapshot_date"] = pd.to_datetime(df["snapshot_date"])
    df["position"] = pd.to_numeric(df["position"]).astype("Float64")
    prev = df.assign(snapshot_date=df["snapshot_date"] + pd.Timedelta(days=1))[["keyword_id", "snapshot_date", "position"]]
    out = df.merge(prev, on=["keyword_id", "snapshot_date"], how="left", suffixes=("", "_prev"))
    out["change_1d"] = out["position_prev"] - out["position"]
    out = out.sort_values(["keyword_id", "snapshot_date"])
    out["avg_position_3d"] = (
        out.set_index("snapshot_date").groupby("keyword_id")["position"].rolling("3D").mean().to_numpy()
    )
    out["label"] = out["keyword_id"].map({"k0": "brand", "k1": "generic", "k2": "generic"})
    out["snapshot_date"] = out["snapshot_date"].dt.date
    return out[["keyword_id", "snapshot_date", "position", "change_1d", "avg_position_3d", "label"]]


def _table(con, name="marts.fct_inc") -> list[tuple]:
    rows = con.execute(f"select keyword_id, snapshot_date, position, change_1d, avg_position_3d, label "
                       f"from {name} order by 1, 2").fetchall()
    return [tuple(None if v is None else (round(v, 9) if isinstance(v, float) else v) for v in r) for r in rows]


def test_incremental_day_by_day_equals_full_build_and_pandas(tmp_path):
    project = load_project(write_project(tmp_path, INCREMENTAL))
    history = _history(12)
    days = sorted({d for d, _, _ in history})
    con = duckdb.connect()
    raw_keywords(con, [])
    modes = []
    for day in days:  # the daily job: load that day's raw partition, build that partition
        con.executemany("insert into raw.keywords values (?, ?, ?)", [r for r in history if r[0] == day])
        modes.append(build_all(DuckDBEngine(con), project, day)["marts.fct_inc"].mode)
    assert modes[0] == "full_refresh" and set(modes[1:]) == {"incremental"}
    incremental = _table(con)
    # re-running a day is idempotent
    build(DuckDBEngine(con), project.models["fct_inc"], days[5])
    assert _table(con) == incremental

    full = duckdb.connect()
    raw_keywords(full, history)
    assert build_all(DuckDBEngine(full), project, full_refresh=True)["marts.fct_inc"].mode == "full_refresh"
    assert _table(full) == incremental

    truth = _pandas_truth(history)
    expected = [tuple(None if pd.isna(v) else (round(float(v), 9) if isinstance(v, float) else v) for v in r)
                for r in truth.itertuples(index=False)]
    expected = [(k, d, None if p is None else int(p), None if c is None else int(c), a, lab)
                for k, d, p, c, a, lab in expected]
    assert incremental == sorted(expected, key=lambda r: (r[0], r[1]))
    assert any(r[3] is not None for r in incremental) and any(r[3] is None for r in incremental)


def test_incremental_partition_reads_only_the_lookback_window(tmp_path):
    project = load_project(write_project(tmp_path, INCREMENTAL))
    model = project.models["fct_inc"]
    history = _history(10)
    day = D0 + timedelta(8)
    con = duckdb.connect()
    raw_keywords(con, history)
    build_all(DuckDBEngine(con), project)

    # 1) the rewritten SQL filters each upstream with the date column to [day - lookback, day]
    sql = incremental_sql(con, model, day)
    tree = sqlglot.parse_one(sql, read="duckdb")
    upstream = [t for t in tree.find_all(exp.Table) if t.db]
    assert {f"{t.db}.{t.name}" for t in upstream} == {"staging.stg_kw", "seeds.labels"}
    for table in upstream:
        if table.name == "labels":  # no date column: read whole
            assert not isinstance(table.parent, exp.From) or table.parent.parent.args.get("where") is None
            continue
        between = table.parent.parent.args["where"].this
        assert isinstance(between, exp.Between)
        assert between.this.name == "snapshot_date"
        assert between.args["low"].sql() == exp.cast(exp.Literal.string(str(day - timedelta(LOOKBACK))), "date").sql()
        assert between.args["high"].sql() == exp.cast(exp.Literal.string(str(day)), "date").sql()
    assert len([t for t in upstream if t.name == "stg_kw"]) == 2

    # 2) behaviour: a poison row just outside the window would fail the cast if it were read
    con.execute("insert into raw.keywords values (?, 'k0', 'not a number')", [day - timedelta(LOOKBACK + 1)])
    result = build(DuckDBEngine(con), model, day)
    assert result.mode == "incremental" and result.partition_date == day
    assert result.rows == len([r for r in history if r[0] == day])
    with pytest.raises(BuildError, match="not a number"):
        build(DuckDBEngine(con), model, full_refresh=True)
    # and the partition build matched the full build made before the poison
    full = duckdb.connect()
    raw_keywords(full, history)
    build_all(DuckDBEngine(full), project)
    day_rows = [r for r in _table(full) if r[1] == day]
    assert [r for r in _table(con) if r[1] == day] == day_rows


def test_incremental_model_must_output_its_date_column(tmp_path):
    files = INCREMENTAL | {"marts/fct_inc.sql": "select keyword_id from staging.stg_kw\n"}
    project = load_project(write_project(tmp_path, files))
    con = duckdb.connect()
    raw_keywords(con, _history(2))
    with pytest.raises(BuildError, match="must output its date column 'snapshot_date'"):
        build_all(DuckDBEngine(con), project, D0)


def test_the_raw_sources_are_declared_in_yml_and_equal_what_the_warehouse_loads(tmp_path):
    """The runner knows the raw tables, with their columns and types, from ``sources:`` in
    ``sources/raw.yml`` (no Python declaration): the shipped declaration equals the tables the
    warehouse creates, column by column in order, each type as DuckDB names it; a model reading a raw table the
    folder does not declare is refused, naming the file and the table; a declaration without columns is refused."""
    import duckdb

    from rank_pipeline.transform.errors import ModelConfigError
    from rank_pipeline.transform.sql import table_columns
    from rank_pipeline.warehouse.engines import raw_columns
    from rank_pipeline.warehouse.raw_load import SOURCE_TABLES

    shipped = load_project(Path(__file__).resolve().parents[2] / "dbt_like_sql")
    assert shipped.sources == frozenset(SOURCE_TABLES)
    with duckdb.connect() as con:  # the declared types, as DuckDB spells them
        con.execute("create schema raw")
        for q, cols in shipped.raw_columns.items():
            con.execute(f"create table {q} ({', '.join(f'{c} {t}' for c, t in cols)})")
        declared = {q: tuple(table_columns(con, "raw", q.split(".")[1]).items()) for q in shipped.raw_columns}
    assert declared == {q: raw_columns(q.split(".")[1]) for q in SOURCE_TABLES}
    write_project(tmp_path, {"staging/stg_x.sql": "select * from raw.rankings\n", "staging/stg_x.yml": yml("stg_x")})
    with pytest.raises(DependencyError, match=r"stg_x.sql: references raw.rankings"):
        load_project(tmp_path)
    (tmp_path / "sources" / "raw.yml").write_text("sources: {rankings: {snapshot_date: date, position: integer}}\n")
    loaded = load_project(tmp_path)
    assert loaded.sources == frozenset({"raw.rankings"})
    assert loaded.raw_columns == {"raw.rankings": (("snapshot_date", "date"), ("position", "integer"))}
    (tmp_path / "sources" / "raw.yml").write_text("sources: [rankings]\n")
    with pytest.raises(ModelConfigError, match=r"raw.yml: `sources:` maps each raw table name .* to its columns"):
        load_project(tmp_path)


def test_sources_are_the_raw_tables_and_a_table_the_pipeline_writes_is_a_pipeline_table(tmp_path):
    """As in dbt, ``sources:`` declares the tables something other than the models loads (the raw tables);
    a table the pipeline's code writes (``ops.run_history``) is declared under ``pipeline_tables:``. The
    words of an older project are refused naming the section to use."""
    from rank_pipeline.transform.errors import ModelConfigError

    shipped = load_project(Path(__file__).resolve().parents[2] / "dbt_like_sql")
    assert set(shipped.tables) == {"ops.run_history"} and "ops.run_history" not in shipped.sources
    write_project(tmp_path, {"staging/stg_x.sql": "select 1 as x\n", "staging/stg_x.yml": yml("stg_x")})
    (tmp_path / "sources" / "raw.yml").write_text("raw_sources: {rankings: {snapshot_date: date}}\n")
    with pytest.raises(ModelConfigError, match=r"raw.yml: unknown top-level key.*`raw_sources:` is now `sources:`"):
        load_project(tmp_path)
    (tmp_path / "sources" / "raw.yml").unlink()
    table = "{name: runs, schema: ops, description: d, columns: [{name: run_id, data_type: VARCHAR, description: r}]}"
    (tmp_path / "sources" / "runs.yml").write_text(f"sources: [{table}]\n")
    with pytest.raises(ModelConfigError, match=r"runs.yml: .* goes under `pipeline_tables:`"):
        load_project(tmp_path)
    (tmp_path / "sources" / "runs.yml").write_text(f"pipeline_tables: [{table}]\n")
    assert set(load_project(tmp_path).tables) == {"ops.runs"}


def test_an_incremental_model_out_of_memory_names_the_setting_that_builds_it_in_steps(tmp_path, monkeypatch):
    """A full refresh DuckDB cannot hold in its memory (20 MB, no spill) fails with the engine's error and a line
    naming ``RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS``; the table is not created."""
    monkeypatch.delenv("RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS", raising=False)
    project = load_project(write_project(tmp_path / "models", {
        "marts/fct_big.sql": """
            select date '2026-01-01' + cast(i % 3 as integer) as snapshot_date, i % 1000000 as k,
                list(cast(i as varchar) || 'xxxxxxxxxxxxxxxxxxxx') as labels
            from range(3000000) as r(i) group by all
            """,
        "marts/fct_big.yml": yml("fct_big", "incremental", "incremental: {date_column: snapshot_date}"),
    }))
    con = duckdb.connect()
    con.execute("set memory_limit = '20MB'")
    con.execute("set temp_directory = ''")
    engine = DuckDBEngine(con)
    with pytest.raises(BuildError) as caught:
        build(engine, project.models["fct_big"])
    assert "Out of Memory" in str(caught.value)
    assert str(caught.value).splitlines()[-1] == (
        f"{project.models['fct_big'].path} (marts.fct_big): to build its history in steps of days, set "
        "RANK_PIPELINE_FULL_REFRESH_BATCH_DAYS (30, say)")
    assert con.execute("select count(*) from information_schema.tables where table_name like '%fct_big%'"
                       ).fetchone()[0] == 0
