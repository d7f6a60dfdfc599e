"""Shared fixtures for the SQL model tests: a small sandbox World played over consecutive days.

The ground truth is :class:`rank_pipeline.sandbox.World` (docs/concepts/architecture.md, "Sandbox"). For every
simulated day the fixtures write the World's records as Parquet snapshots with
:class:`rank_pipeline.snapshots.writer.SnapshotWriter` (exactly what extraction would write, without HTTP),
load them into the raw tables with :func:`rank_pipeline.warehouse.raw_load.load_partition`, and build every
model with the runner (:mod:`rank_pipeline.transform`). Tests then compare the marts with pandas
computations made directly from the World.

The world is chosen so that the window holds every scenario the marts must get right (the tests assert
that each is present, so a changed World cannot silently empty a test):

* 35 consecutive days, 2026-01-08 .. 2026-02-11: 1-, 7- and 30-day changes all have history;
* 2026-02-01: a month boundary, where the World's dataRows usage resets;
* 2026-01-20: a plan limit change of account ``globex`` (``LimitChange``);
* acme's dataRows limit equals its usage on 2026-01-25, so utilisation crosses 80 % and 100 %;
* keywords that enter and leave the top 100, keywords whose ranking URL changes, keywords and
  competitors added and removed (seed 4 has competitors added and removed inside the window).

A second, *gapped* history (:func:`gapped_warehouse`, :data:`GAPPED_DAYS`) plays another world with
missed extraction days (one of them the 1st of the month, where dataRows resets), a bulk import of
:data:`BULK_IMPORT_SIZE` keywords on :data:`BULK_IMPORT_DAY`, deletions on :data:`DELETION_DAY` and a
limit change; it is built in full and its last days again one partition at a time (one of them right
after a missed day).

Everything is session-scoped and built once (a few seconds); files live under ``tmp_path_factory``.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from rank_pipeline.sandbox import AccountSpec, KeywordSpec, LimitChange, World, WorldConfig, catalogues
from rank_pipeline.snapshots.schema import ENDPOINTS
from rank_pipeline.snapshots.writer import SnapshotWriter
from rank_pipeline.transform import DuckDBEngine, load_project, run_tests
from rank_pipeline.transform.materialize import build_all
from rank_pipeline.warehouse.raw_load import load_partition, reload_raw_from_snapshots
from rank_pipeline.warehouse.warehouse_file import SCHEMAS

FIRST_DAY = date(2026, 1, 8)
N_DAYS = 35
DAYS: list[date] = [FIRST_DAY + timedelta(days=i) for i in range(N_DAYS)]
RESET_DAY = date(2026, 2, 1)
LIMIT_CHANGE_DAY = date(2026, 1, 20)
CROSSING_DAY = date(2026, 1, 25)
INCREMENTAL_DAYS = 4
"""The last days built one by one incrementally in :func:`incremental_warehouse`."""

SQL_DIR = Path(__file__).resolve().parents[2] / "dbt_like_sql"
_SEED = 4
_START = date(2025, 11, 20)
_LOCATION_CODES = ("2840", "2826", "2276", "2250", "6128581")
_LANGUAGE_CODES = ("en", "es", "de", "fr")


def _config(acme_data_row_limit: int, globex_data_row_limit: int) -> WorldConfig:
    return WorldConfig(
        seed=_SEED,
        start_date=_START,
        accounts=(
            AccountSpec("acme", domains=4, keywords_per_domain=(10, 30), keyword_limit=1_000,
                        data_row_limit=acme_data_row_limit),
            AccountSpec("globex", domains=3, keywords_per_domain=(10, 30), keyword_limit=400,
                        data_row_limit=globex_data_row_limit,
                        limit_change=LimitChange(LIMIT_CHANGE_DAY, 900, 3 * globex_data_row_limit)),
        ),
    )


def make_world() -> World:
    """The test world: limits tuned on a probe world so that acme crosses 80 % and 100 % of its
    dataRows allowance on known days (limits do not change keywords or positions)."""
    probe = World(_config(10**9, 10**9), today=DAYS[-1])
    acme, globex = probe.account("acme"), probe.account("globex")
    acme_limit = probe.usage(acme.account_id, CROSSING_DAY)["attributes"]["dataRows"]["usage"]
    globex_limit = probe.usage(globex.account_id, LIMIT_CHANGE_DAY)["attributes"]["dataRows"]["usage"] * 2
    return World(_config(acme_limit, globex_limit), today=DAYS[-1])


def _extracted_at(day: date) -> datetime:
    return datetime.combine(day, time(7, 0), tzinfo=UTC)


def write_snapshots(world: World, root: Path, day: date) -> None:
    """Write all seven resources of ``day`` for the world's API accounts, as extraction would."""
    accounts = [a for a in world.accounts if a.api_enabled]
    at = _extracted_at(day)
    writers = {r: SnapshotWriter(root, r, day) for r in ENDPOINTS}
    try:
        for a in accounts:
            domains = world.domains(a.account_id, day)
            writers["domains"].write(a.name, domains, extracted_at=at)
            for d in domains:
                writers["keywords"].write(a.name, world.keywords(d["id"], day), parent_id=d["id"], extracted_at=at)
                writers["competitors"].write(
                    a.name, world.competitors(d["id"], day), parent_id=d["id"], extracted_at=at
                )
            writers["tags"].write(a.name, world.tags(a.account_id, day), extracted_at=at)
            writers["usage"].write(a.name, [world.usage(a.account_id, day)], extracted_at=at)
            for engine in ("google", "bing", "yahoo"):
                locs = [catalogues.location_by_code(engine, c) for c in _LOCATION_CODES]
                writers["locations"].write(
                    a.name,
                    [{"id": row["code"], "type": "location", "attributes": row} for row in locs if row],
                    parent_id=engine, extracted_at=at,
                )
                langs = [catalogues.language(engine, c) for c in _LANGUAGE_CODES]
                writers["languages"].write(
                    a.name,
                    [{"id": row["code"], "type": "language", "attributes": row} for row in langs if row],
                    parent_id=engine, extracted_at=at,
                )
        for w in writers.values():
            w.commit()
    except BaseException:
        for w in writers.values():
            w.abort()
        raise


# ------------------------------------------------------------------------------------------ runner


def build_models(
    con: duckdb.DuckDBPyConnection,
    partition: date | None = None,
    *,
    run_yml_tests: bool = True,
    expected_failures: frozenset[str] = frozenset(),
) -> list[str]:
    """Load the seeds and build every model with the runner, then run every yml test of every seed and
    model: a full rebuild (``partition`` None) or one incremental partition, as the daily job does.

    Returns the qualified names built. Fails the calling test when a yml test fails: on ground-truth data
    every documented invariant must hold, blocking or not, except the warn-severity tests named in
    ``expected_failures`` (``<model>.<test name>``), which must then fail (a history with missed days).
    """
    project = load_project(SQL_DIR)
    built = build_all(DuckDBEngine(con), project, partition, full_refresh=partition is None)
    if not run_yml_tests:
        return list(built)
    failed, warned = [], set()
    for relation in [*project.seeds.values(), *project.topological_order()]:
        for result in run_tests(DuckDBEngine(con), relation, partition):
            name = f"{relation.qualified_name}.{result.name}"
            if not result.passed and name in expected_failures and not result.blocking:
                warned.add(name)
            elif not result.passed:
                failed.append(f"{name}: {result.failures} failing, e.g. {result.sample_rows[:2]}")
    assert not failed, "yml tests failed:\n" + "\n".join(failed)
    assert warned == set(expected_failures), f"expected these warn tests to fail: {set(expected_failures) - warned}"
    return list(built)


# ------------------------------------------------------------------------------------------ truth


@dataclass
class Truth:
    """Ground truth from the World, one pandas frame per grain (columns named as in the marts)."""

    world: World
    keywords: pd.DataFrame  # account, domain_id, keyword_id, snapshot_date, position, ranking_url, ...
    usage: pd.DataFrame  # account, snapshot_date, keywords_* and data_rows_* usage/limit/remaining
    competitors: pd.DataFrame  # account, domain_id, competitor_id, snapshot_date, competitor_domain
    domains: pd.DataFrame  # account, domain_id, snapshot_date, domain
    keyword_tags: pd.DataFrame  # account, keyword_id, tag_id, snapshot_date


def make_truth(world: World, days: list[date] = DAYS) -> Truth:
    """Read the World's ground truth for every day of ``days`` (positions via World.position)."""
    kw, us, comp, dom, tags = [], [], [], [], []
    for a in (a for a in world.accounts if a.api_enabled):
        for day in days:
            u = world.usage(a.account_id, day)["attributes"]
            us.append({
                "account": a.name, "snapshot_date": day,
                "keywords_usage": u["keywords"]["usage"], "keywords_limit": u["keywords"]["limit"],
                "keywords_remaining": u["keywords"]["remaining"],
                "data_rows_usage": u["dataRows"]["usage"], "data_rows_limit": u["dataRows"]["limit"],
                "data_rows_remaining": u["dataRows"]["remaining"],
            })
            for d in world.domains(a.account_id, day):
                dom.append({"account": a.name, "domain_id": d["id"], "snapshot_date": day,
                            "domain": d["attributes"]["domain"]})
                for c in world.competitors(d["id"], day):
                    comp.append({"account": a.name, "domain_id": d["id"], "competitor_id": c["id"],
                                 "snapshot_date": day, "competitor_domain": c["attributes"]["domain"]})
                for k in world.keywords(d["id"], day):
                    at = k["attributes"]
                    kw.append({
                        "account": a.name, "domain_id": d["id"], "keyword_id": k["id"], "snapshot_date": day,
                        "search_engine": at["searchEngine"], "device": at["device"],
                        "location_code": at["location"]["code"], "language_code": at["language"]["code"],
                        "search_volume": at["searchVolume"],
                        "position": world.position(k["id"], day), "ranking_url": world.ranking_url(k["id"], day),
                    })
                    for t in dict.fromkeys(at["tagIds"] or []):
                        tags.append({"account": a.name, "keyword_id": k["id"], "tag_id": t, "snapshot_date": day})
    keywords = pd.DataFrame(kw)
    keywords["position"] = keywords["position"].astype("Int64")
    return Truth(world, keywords, pd.DataFrame(us), pd.DataFrame(comp), pd.DataFrame(dom), pd.DataFrame(tags))


# ------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="session")
def world() -> World:
    return make_world()


@pytest.fixture(scope="session")
def truth(world: World) -> Truth:
    return make_truth(world)


@pytest.fixture(scope="session")
def snapshots_dirs(world: World, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two snapshot roots: the days before the last :data:`INCREMENTAL_DAYS`, and those last days
    (so the history can be loaded in one :func:`reload_raw_from_snapshots` and the last days one by one)."""
    history = tmp_path_factory.mktemp("sql_models_snapshots_history")
    recent = tmp_path_factory.mktemp("sql_models_snapshots_recent")
    for i, day in enumerate(DAYS):
        write_snapshots(world, history if i < N_DAYS - INCREMENTAL_DAYS else recent, day)
    return history, recent


def _open(path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    for schema in SCHEMAS:
        con.execute(f"create schema if not exists {schema}")
    return con


@pytest.fixture(scope="session")
def warehouse(snapshots_dirs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory):
    """Every day loaded into raw, then all models built with one full rebuild (and every yml test run)."""
    history, recent = snapshots_dirs
    con = _open(tmp_path_factory.mktemp("sql_models_full") / "warehouse.duckdb")
    reload_raw_from_snapshots(con, history)
    for day in DAYS[-INCREMENTAL_DAYS:]:
        load_partition(con, recent, day)
    build_models(con)
    yield con
    con.close()


@pytest.fixture(scope="session")
def incremental_warehouse(snapshots_dirs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory):
    """All but the last :data:`INCREMENTAL_DAYS` days built in full, then each remaining day loaded and
    built as one incremental partition, as the daily job does (the yml tests run on the last partition)."""
    history, recent = snapshots_dirs
    con = _open(tmp_path_factory.mktemp("sql_models_incremental") / "warehouse.duckdb")
    reload_raw_from_snapshots(con, history)
    build_models(con, run_yml_tests=False)
    for day in DAYS[-INCREMENTAL_DAYS:]:
        load_partition(con, recent, day)
        build_models(con, partition=day, run_yml_tests=day == DAYS[-1])
    yield con
    con.close()


@dataclass(frozen=True)
class Scenario:
    """The fixture window's known days (test modules get it through the ``scenario`` fixture, since
    test directories here are not packages and cannot import from conftest)."""

    days: tuple[date, ...] = tuple(DAYS)
    reset_day: date = RESET_DAY
    limit_change_day: date = LIMIT_CHANGE_DAY
    crossing_day: date = CROSSING_DAY
    incremental_days: int = INCREMENTAL_DAYS
    sql_dir: Path = SQL_DIR


@pytest.fixture(scope="session")
def scenario() -> Scenario:
    return Scenario()


# ------------------------------------------------------------------------------------------ gapped history

GAPPED_FIRST_DAY = date(2026, 1, 16)
GAPPED_MISSING = (date(2026, 1, 20), date(2026, 1, 21), date(2026, 1, 22), date(2026, 2, 1), date(2026, 2, 9))
GAPPED_DAYS: list[date] = [
    d for d in (GAPPED_FIRST_DAY + timedelta(days=i) for i in range(28)) if d not in GAPPED_MISSING
]
"""2026-01-16 .. 2026-02-12 without the missed days (the last built partitions: 02-10 follows a gap)."""
GAPPED_INCREMENTAL_DAYS = 3
BULK_IMPORT_DAY = date(2026, 1, 27)
BULK_IMPORT_SIZE = 150
DELETION_DAY = date(2026, 2, 4)
GAPPED_LIMIT_CHANGE_DAY = date(2026, 1, 25)
COVERAGE_WARNING = "marts.fct_account_snapshot_coverage_daily.previous_day_snapshot_present"


def make_gapped_world() -> World:
    """Another seed; acme gets a bulk import of :data:`BULK_IMPORT_SIZE` keywords on one domain and
    loses 12 keywords of another on :data:`DELETION_DAY`; globex's limits change."""
    config = WorldConfig(
        seed=11,
        start_date=_START,
        accounts=(
            AccountSpec("acme", domains=3, keywords_per_domain=(10, 25), keyword_limit=1_000, data_row_limit=9_000),
            AccountSpec("globex", domains=2, keywords_per_domain=(10, 25), keyword_limit=300, data_row_limit=2_500,
                        limit_change=LimitChange(GAPPED_LIMIT_CHANGE_DAY, 600, 4_000)),
        ),
    )
    world = World(config, today=BULK_IMPORT_DAY)
    acme = world.account("acme")
    domains = [d["id"] for d in world.domains(acme.account_id, BULK_IMPORT_DAY)]
    imported = world.create_keywords(acme.account_id, domains[0], [
        KeywordSpec(f"bulk import term {i}", "google", "desktop" if i % 2 else "mobile", "2840", "en")
        for i in range(BULK_IMPORT_SIZE)
    ])
    assert len(imported) == BULK_IMPORT_SIZE
    world.set_today(DELETION_DAY)
    for kid in world.keyword_ids(domains[1], DELETION_DAY)[:12]:
        assert world.delete_keyword(domains[1], kid)
    world.set_today(GAPPED_DAYS[-1])
    return world


@dataclass(frozen=True)
class Gapped:
    """The gapped history as the tests see it: its world, truth, days and the two warehouses."""

    world: World
    truth: Truth
    days: tuple[date, ...]
    missing: tuple[date, ...]
    full: duckdb.DuckDBPyConnection
    incremental: duckdb.DuckDBPyConnection
    incremental_days: tuple[date, ...]
    bulk_import_day: date = BULK_IMPORT_DAY
    bulk_import_size: int = BULK_IMPORT_SIZE
    deletion_day: date = DELETION_DAY
    limit_change_day: date = GAPPED_LIMIT_CHANGE_DAY
    snapshot_roots: tuple[Path, ...] = ()


@pytest.fixture(scope="session")
def gapped(tmp_path_factory: pytest.TempPathFactory):
    """The gapped history loaded and built in full (every yml test run: only the coverage warning may
    fail), and a second warehouse whose last :data:`GAPPED_INCREMENTAL_DAYS` days are built one
    incremental partition at a time."""
    world = make_gapped_world()
    history = tmp_path_factory.mktemp("sql_models_gapped_history")
    recent = tmp_path_factory.mktemp("sql_models_gapped_recent")
    split = len(GAPPED_DAYS) - GAPPED_INCREMENTAL_DAYS
    for i, day in enumerate(GAPPED_DAYS):
        write_snapshots(world, history if i < split else recent, day)
    # the history is loaded and built once, then the file is copied: one copy gets the last days loaded
    # and rebuilt in full, the other builds them one incremental partition at a time
    inc_path = tmp_path_factory.mktemp("sql_models_gapped_incremental") / "warehouse.duckdb"
    full_path = tmp_path_factory.mktemp("sql_models_gapped_full") / "warehouse.duckdb"
    inc = _open(inc_path)
    reload_raw_from_snapshots(inc, history)
    build_models(inc, run_yml_tests=False)
    inc.close()
    shutil.copy(inc_path, full_path)
    inc, full = _open(inc_path), _open(full_path)
    for day in GAPPED_DAYS[split:]:
        load_partition(inc, recent, day)
        build_models(inc, partition=day, run_yml_tests=False)
        load_partition(full, recent, day)
    build_models(full, expected_failures=frozenset({COVERAGE_WARNING}))
    yield Gapped(world, make_truth(world, GAPPED_DAYS), tuple(GAPPED_DAYS), GAPPED_MISSING, full, inc,
                 tuple(GAPPED_DAYS[split:]), snapshot_roots=(history, recent))
    full.close()
    inc.close()


# ------------------------------------------------------------------------------------------ quota edges


@dataclass(frozen=True)
class QuotaEdges:
    """The quota's edge histories (tests/transform/quota_edges.py): the World, its truth, and the data folder
    whose ``warehouse.duckdb`` holds them built in full (every yml test passed), closed, for read-only use."""

    world: World
    truth: Truth
    days: tuple[date, ...]
    data_dir: Path

    @property
    def published(self) -> Path:
        return self.data_dir / "warehouse.duckdb"


@pytest.fixture(scope="session")
def quota_edges(tmp_path_factory: pytest.TempPathFactory) -> QuotaEdges:
    """Irregular cycles, an overdue reset, a change of cadence, a limit raised mid-cycle, a mass deletion of
    keywords and a reset never seen, each an account of one World, loaded and built in full."""
    import quota_edges as edges

    world = edges.make_edge_world()
    snapshots = tmp_path_factory.mktemp("quota_edges_snapshots")
    for day in edges.DAYS:
        write_snapshots(world, snapshots, day)
    data_dir = tmp_path_factory.mktemp("quota_edges_data")
    con = _open(data_dir / "warehouse.duckdb")
    try:
        reload_raw_from_snapshots(con, snapshots)
        build_models(con)
    finally:
        con.close()
    return QuotaEdges(world, make_truth(world, edges.DAYS), tuple(edges.DAYS), data_dir)


@pytest.fixture(scope="module")
def spark(request):
    """A Spark ``local[2]`` session (2 shuffle partitions) for one test module, its application named after
    the module, stopped after it; the tests' Spark defaults (``tests/spark-conf/``) unless the module's
    ``SPARK_SESSION_CONF`` sets others. Its tests are marked ``spark`` (tests/conftest.py)."""
    from rank_pipeline.transform.spark_session import spark_session

    session = spark_session("local[2]", shuffle_partitions=2, app_name=f"rank-pipeline-{request.module.__name__}",
                            conf=getattr(request.module, "SPARK_SESSION_CONF", {}))
    yield session
    session.stop()
