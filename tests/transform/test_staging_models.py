"""Staging models against the sandbox World's records, and the "one place" rule for invented fields.

The staging layer is the only place that maps vendor fields (spec-shown flattened columns and the
sandbox's invented shapes in ``attributes``) to warehouse names. These tests check every mapped column
against the World's records of every day, and that no mart reads ``attributes`` or raw tables itself.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.xdist_group(name="sql_models_world")

SQL_DIR = Path(__file__).resolve().parents[2] / "dbt_like_sql"


def rows(con, sql: str) -> list[dict]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _ts(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00"))


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def test_stg_keywords_maps_every_field_of_the_world_records(warehouse, world, scenario):
    actual = {
        (r["keyword_id"], r["snapshot_date"]): r
        for r in rows(warehouse, "select * from staging.stg_keywords")
    }
    expected = {}
    for account in (a for a in world.accounts if a.api_enabled):
        for day in scenario.days:
            for domain in world.domains(account.account_id, day):
                for k in world.keywords(domain["id"], day):
                    at, organic = k["attributes"], k["attributes"]["results"]["organic"]
                    expected[(k["id"], day)] = {
                        "domain_id": domain["id"], "account": account.name, "keyword": at["keyword"],
                        "search_engine": at["searchEngine"], "device": at["device"],
                        "location_code": at["location"]["code"], "location_name": at["location"]["name"],
                        "location_variant": at["location"]["variant"], "language_code": at["language"]["code"],
                        "frequency": at["frequency"], "tag_ids": list(at["tagIds"]),
                        "search_volume": at["searchVolume"], "position": world.position(k["id"], day),
                        "ranking_url": world.ranking_url(k["id"], day), "created_at": _ts(at["createdAt"]),
                        "captured_at": _ts(organic["capturedAt"]),
                    }
    assert set(actual) == set(expected)
    diffs = []
    for key, exp in expected.items():
        got = {c: actual[key][c] for c in exp}
        got["created_at"], got["captured_at"] = _utc(got["created_at"]), _utc(got["captured_at"])
        got["tag_ids"] = list(got["tag_ids"] or [])
        if got != exp:
            diffs.append((key, {c: (exp[c], got[c]) for c in exp if exp[c] != got[c]}))
    assert not diffs, f"{len(diffs)} keyword rows differ, first: {diffs[:3]}"
    not_ranking = [k for k, e in expected.items() if e["position"] is None]
    assert not_ranking, "the window has no not-ranking keyword-day: null position is untested"


def test_stg_keyword_tags_is_the_unnested_tag_list(warehouse, truth):
    actual = {(r["keyword_id"], r["tag_id"], r["snapshot_date"])
              for r in rows(warehouse, "select * from staging.stg_keyword_tags")}
    expected = {(r.keyword_id, r.tag_id, r.snapshot_date) for r in truth.keyword_tags.itertuples()}
    assert expected and actual == expected


def test_stg_usage_is_one_row_per_account_and_day_with_the_world_usage(warehouse, truth):
    actual = pd.DataFrame(rows(warehouse, "select * from staging.stg_usage"))
    assert not actual.duplicated(["account", "snapshot_date"]).any()
    cols = ["keywords_usage", "keywords_limit", "keywords_remaining", "data_rows_usage", "data_rows_limit",
            "data_rows_remaining"]
    merged = truth.usage.merge(actual, on=["account", "snapshot_date"], suffixes=("_truth", ""), how="outer",
                               indicator=True)
    assert (merged["_merge"] == "both").all()
    for c in cols:
        assert (merged[c] == merged[f"{c}_truth"]).all(), c
    assert actual["api_enabled"].all()


def test_stg_competitors_tags_and_domains_map_the_world_records(warehouse, world, truth, scenario):
    comp = {(r["domain_id"], r["competitor_id"], r["snapshot_date"]): r
            for r in rows(warehouse, "select * from staging.stg_competitors")}
    assert set(comp) == {(r.domain_id, r.competitor_id, r.snapshot_date) for r in truth.competitors.itertuples()}
    day = scenario.days[-1]
    for account in (a for a in world.accounts if a.api_enabled):
        for domain in world.domains(account.account_id, day):
            for c in world.competitors(domain["id"], day):
                got = comp[(domain["id"], c["id"], day)]
                assert (got["competitor_domain"], got["competitor_name"], _utc(got["created_at"])) == (
                    c["attributes"]["domain"], c["attributes"]["name"], _ts(c["attributes"]["createdAt"]))
        tags = {r["tag_id"]: r for r in rows(
            warehouse, f"select * from staging.stg_tags where account = '{account.name}' and snapshot_date = '{day}'")}
        expected = {t["id"]: (t["attributes"]["name"], t["attributes"]["color"]) for t in world.tags(account.account_id)}
        assert {k: (v["tag_name"], v["color"]) for k, v in tags.items()} == expected
    domains = {(r["domain_id"], r["snapshot_date"]): r["domain"] for r in rows(warehouse, "select * from staging.stg_domains")}
    assert domains == {(r.domain_id, r.snapshot_date): r.domain for r in truth.domains.itertuples()}


def test_stg_locations_and_languages_map_catalogue_rows(warehouse):
    from rank_pipeline.sandbox import catalogues

    for r in rows(warehouse, "select * from staging.stg_locations"):
        row = catalogues.location_by_code(r["search_engine"], r["location_code"])
        assert (r["location_name"], r["location_variant"], r["country_code"]) == (
            row["name"], row["variant"], row["countryCode"])
    for r in rows(warehouse, "select * from staging.stg_languages"):
        assert r["language_name"] == catalogues.language(r["search_engine"], r["language_code"])["name"]


def test_staging_keeps_every_raw_row(warehouse):
    """Rename and cast only: no staging model drops or duplicates raw records."""
    for resource, model in [("domains", "stg_domains"), ("keywords", "stg_keywords"), ("competitors", "stg_competitors"),
                            ("tags", "stg_tags"), ("usage", "stg_usage"), ("locations", "stg_locations"),
                            ("languages", "stg_languages")]:
        (raw,) = warehouse.execute(f"select count(*) from raw.{resource}").fetchone()
        (staged,) = warehouse.execute(f"select count(*) from staging.{model}").fetchone()
        assert raw == staged > 0, (resource, raw, staged)


def _sql_without_comments(path: Path) -> str:
    return re.sub(r"--[^\n]*", "", path.read_text())


def test_only_staging_reads_raw_tables_and_attributes():
    """The invented fields are mapped in one place: marts read staging, seeds and marts only."""
    marts = sorted((SQL_DIR / "marts").glob("*.sql"))
    assert marts
    for path in marts:
        sql = _sql_without_comments(path)
        assert "raw." not in sql, f"{path.name} reads a raw table; read the staging model instead"
        assert "attributes" not in sql and "json" not in sql.lower(), f"{path.name} parses JSON; do it in staging"
    for path in sorted((SQL_DIR / "staging").glob("*.yml")):
        text = " ".join(path.read_text().split())
        assert "one place" in text or "one-place" in text, f"{path.name} must say staging is the one place that maps fields"
