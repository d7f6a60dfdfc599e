"""Shards as Dagster partitions (``RANK_PIPELINE_SHARDS=2``), through the doors users go through.

Against the embedded sandbox (deterministic per day; every run process starts its own). The two shard
partitions of one day run as two ``dagster job execute`` processes at once, in one data folder and one
Dagster instance; the sensor ``daily_run_when_shards_committed`` is evaluated on that instance and the
daily run it requests is launched the same way. Together they must deliver exactly the snapshot rows of
every endpoint and the marts of one unsharded daily run of the same day (another folder, no
``RANK_PIPELINE_SHARDS``). A day with one shard of two committed gets no daily run from the sensor, and
a daily run launched by hand for it refuses in one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from support import PARTITION_START, command_env, rank_pipeline

from rank_pipeline.defs.instance import dagster_home, open_instance
from rank_pipeline.defs.jobs import DAILY_JOB_NAME, build_daily_job
from rank_pipeline.defs.partitions import DATE_TAG, SHARD_TAG, shard_partition_key
from rank_pipeline.defs.sensors import run_outcome
from rank_pipeline.defs.shard_runs import SHARD_JOB_NAME, build_shards_committed_sensor
from rank_pipeline.extract.embedded_sandbox import EmbeddedSandbox
from rank_pipeline.settings import SPEC_PER_IP_LIMIT, Settings, Shard, ShardPlan, shard_of
from rank_pipeline.snapshots.reader import list_snapshot_dates, read_manifest, read_snapshot
from rank_pipeline.snapshots.schema import ENDPOINTS

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e_shard_partitions"), pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
DAY = date(2026, 3, 2)
LATER = date(2026, 3, 3)
DAGSTER = Path(sys.executable).parent / "dagster"


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    return command_env({**PARTITION_START, "RANK_PIPELINE_DATA_DIR": str(data_dir),
                        "DAGSTER_HOME": str(_home(data_dir)), **extra})


def _home(data_dir: Path) -> Path:
    """The folder's own ``DAGSTER_HOME`` (``<data_dir>/dagster_home``), whatever this process's is."""
    return dagster_home(data_dir, {})


def _execute(env: dict[str, str], job: str, day: date, shard: Shard | None = None) -> subprocess.Popen:
    """``dagster job execute`` of one partition, tagged as the daemon tags the run of a schedule's or
    sensor's request (``dagster/partition``, and per dimension for a day x shard key)."""
    tags = {"dagster/partition": day.isoformat()}
    if shard is not None:
        tags = {"dagster/partition": str(shard_partition_key(day.isoformat(), shard)),
                DATE_TAG: day.isoformat(), SHARD_TAG: shard.key}
    return subprocess.Popen([str(DAGSTER), "job", "execute", "-m", "rank_pipeline.defs.definitions", "-j", job,
                             "--tags", json.dumps(tags)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _finish(proc: subprocess.Popen) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=600)
    return proc.returncode, out


def _rows(root: Path, resource: str, day: date) -> set[tuple]:
    """Every column of a committed snapshot but its extraction time, as a set of rows."""
    table = read_snapshot(root, resource, day)
    table = table.drop_columns(["extracted_at"])
    return set(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))


def _sensor_requests(instance: dg.DagsterInstance, plan: ShardPlan, cursor: str | None):
    sensor = build_shards_committed_sensor(plan, build_daily_job(plan))
    context = dg.build_sensor_context(instance=instance, cursor=cursor)
    result = sensor(context)
    return ([] if isinstance(result, dg.SkipReason) else list(result)), context.cursor


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    """The sharded folder after both shards of DAY ran at once and shard 0 of LATER ran; the unsharded
    folder after one daily run of DAY."""
    accounts = [a.name for a in EmbeddedSandbox.get().at(DAY).accounts()]
    assert {shard_of(a, 2) for a in accounts} == {0, 1}, "both shards must own an account for this test"
    sharded, whole = tmp_path_factory.mktemp("sharded"), tmp_path_factory.mktemp("unsharded")
    for folder in (sharded, whole):  # dagster.yaml under each folder's DAGSTER_HOME, as the command line writes it
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DAGSTER_HOME", str(_home(folder)))
            open_instance(folder)
    env = _env(sharded, RANK_PIPELINE_SHARDS="2")
    # the two shards alone at once (the unsharded reference after them): a third process starting beside them on
    # a loaded machine could delay one shard's start past the other's end
    shards = [_execute(env, SHARD_JOB_NAME, DAY, shard) for shard in ShardPlan(2).shards]
    for proc in shards:
        code, out = _finish(proc)
        assert code == 0, out
    code, out = _finish(_execute(_env(whole), DAILY_JOB_NAME, DAY))
    assert code == 0, out
    code, out = _finish(_execute(env, SHARD_JOB_NAME, LATER, Shard(0, 2)))
    assert code == 0, out
    return sharded, whole, env


@pytest.mark.slow
def test_the_shards_of_a_day_run_at_once_each_on_its_own_accounts_and_budget(worlds):
    sharded, _, _ = worlds
    instance = dg.DagsterInstance.from_config(str(_home(sharded)))
    runs = [r for r in instance.get_run_records(dg.RunsFilter(job_name=SHARD_JOB_NAME,
                                                              tags={"dagster/partition/date": DAY.isoformat()}))]
    assert sorted(r.dagster_run.tags["dagster/partition/shard"] for r in runs) == ["0-of-2", "1-of-2"]
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    first, second = sorted(runs, key=lambda r: r.start_time)
    assert second.start_time < first.end_time, "the two shard runs must overlap in time (parallel processes)"
    for record in runs:
        shard = Shard.from_key(record.dagster_run.tags["dagster/partition/shard"])
        materializations = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(["snapshots", "domains"]),
                                  asset_partitions=[str(shard_partition_key(DAY.isoformat(), shard))]), limit=1)
        meta = materializations.records[0].asset_materialization.metadata
        # one address for both shards: each paces to half the per-IP ceiling, and nothing was refused
        assert meta["per_ip_limit"].value == SPEC_PER_IP_LIMIT // 2
        assert meta["shard"].value == str(shard)
        assert meta["rate_limited_total"].value == 0
        assert run_outcome(instance, record.dagster_run.run_id).days == DAY.isoformat()  # alerts name the day
        text = (sharded / "snapshots" / "domains" / f"snapshot_date={DAY}" / shard.manifest_name).read_text()
        assert all(shard_of(a, 2) == shard.index for a in json.loads(text)["accounts"])


@pytest.mark.slow
def test_one_shard_of_two_gets_no_daily_run_and_a_daily_run_by_hand_refuses(worlds):
    sharded, _, env = worlds
    plan = Settings.from_env(env).shards
    assert list_snapshot_dates(sharded / "snapshots", "domains") == [DAY]  # LATER has one shard of two
    instance = dg.DagsterInstance.from_config(str(_home(sharded)))
    requests, _ = _sensor_requests(instance, plan, None)
    assert [r.partition_key for r in requests] == [DAY.isoformat()]
    code, out = _finish(_execute(env, DAILY_JOB_NAME, LATER))
    assert code != 0
    assert "only some shard workers committed it" in out
    assert not (sharded / "warehouse.duckdb").exists()


@pytest.mark.slow
def test_the_requested_daily_run_delivers_what_one_unsharded_run_delivers(worlds, published_marts):
    sharded, whole, env = worlds
    plan = Settings.from_env(env).shards
    instance = dg.DagsterInstance.from_config(str(_home(sharded)))
    requests, cursor = _sensor_requests(instance, plan, None)
    assert [r.partition_key for r in requests] == [DAY.isoformat()]
    assert _sensor_requests(instance, plan, cursor)[0] == []  # never twice for one day
    code, out = _finish(_execute(env, DAILY_JOB_NAME, date.fromisoformat(requests[0].partition_key)))
    assert code == 0, out
    for resource in ENDPOINTS:
        assert read_manifest(sharded / "snapshots", resource, DAY).shards == 2
        assert _rows(sharded / "snapshots", resource, DAY) == _rows(whole / "snapshots", resource, DAY), resource
    with duckdb.connect(str(sharded / "warehouse.duckdb"), read_only=True) as con:
        history = con.execute("select job_name, requests, rate_limited from ops.run_history "
                              "where snapshot_date = ? order by job_name", [DAY]).fetchall()
    # the run history keeps each shard run's extraction figures beside the daily run's row
    assert [h[0] for h in history] == [DAILY_JOB_NAME, SHARD_JOB_NAME, SHARD_JOB_NAME]
    assert all(h[1] > 0 and h[2] == 0 for h in history[1:])
    got, want = published_marts(sharded / "warehouse.duckdb"), published_marts(whole / "warehouse.duckdb")
    assert set(got) == set(want) and any(want.values())
    for name in want:
        assert got[name] == want[name], name


@pytest.mark.slow
def test_the_definitions_load_in_both_modes_from_workspace_yaml(tmp_path):
    for shards in ("", "2"):
        env = _env(tmp_path / f"data{shards}", RANK_PIPELINE_SHARDS=shards)
        Path(env["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([str(DAGSTER), "definitions", "validate", "-w", "workspace.yaml"], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    from rank_pipeline.defs.component import build_definitions

    sharded = build_definitions(Settings.from_env({"RANK_PIPELINE_DATA_DIR": str(tmp_path), "RANK_PIPELINE_SHARDS": "2",
                                                   **PARTITION_START}))
    shard_job = sharded.resolve_job_def(SHARD_JOB_NAME)
    assert {str(k) for k in shard_job.partitions_def.get_partition_keys() if k.startswith(DAY.isoformat())} == \
        {f"{DAY}|0-of-2", f"{DAY}|1-of-2"}
    daily = sharded.resolve_job_def(DAILY_JOB_NAME)
    assert not any(k.path[0] == "snapshots" for k in daily.asset_layer.executable_asset_keys)
    sensor = sharded.resolve_sensor_def("daily_run_when_shards_committed")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    # the schedule requests one run per shard of the tick's day
    schedule = sharded.resolve_schedule_def("daily_rank_pipeline_schedule")
    with dg.build_schedule_context(scheduled_execution_time=datetime(2026, 3, 2, 6, 15, tzinfo=UTC),
                                   repository_def=sharded.get_repository_def()) as context:
        requests = list(schedule.evaluate_tick(context).run_requests)
    assert sorted(r.partition_key for r in requests) == [f"{DAY}|0-of-2", f"{DAY}|1-of-2"]
    assert {r.job_name for r in requests} <= {None, SHARD_JOB_NAME}
    unsharded = build_definitions(Settings.from_env({"RANK_PIPELINE_DATA_DIR": str(tmp_path)}))
    assert not any(j.name == SHARD_JOB_NAME for j in unsharded.resolve_all_job_defs())


def test_a_command_line_run_with_shards_set_is_one_line_exit_2(tmp_path):
    done = rank_pipeline("run", env=_env(tmp_path, RANK_PIPELINE_SHARDS="2"), timeout=180)
    assert done.returncode == 2, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "RANK_PIPELINE_SHARDS=2" in last and "dagster-daemon" in last
    assert not (tmp_path / "snapshots").exists()


def _digest(folder: Path) -> dict[str, int]:
    """Size of every snapshot file and warehouse file: what a refused run must leave as it was."""
    files = [*sorted((folder / "snapshots").rglob("*")), *sorted(folder.glob("warehouse*.duckdb"))]
    return {str(p.relative_to(folder)): p.stat().st_size for p in files if p.is_file()}


@pytest.mark.slow
def test_a_changed_shard_count_is_refused_in_one_line_and_the_history_kept(worlds):
    """The first runs recorded their partitioning; definitions built with another shard count (3 in the
    sharded folder, none there, 2 in the unsharded folder) fail to load with one line naming
    RANK_PIPELINE_SHARDS and what to set, through ``dagster job execute`` as the daemon loads them and
    through ``rank-pipeline run``; nothing in the folders changes."""
    sharded, whole, env = worlds
    assert json.loads((sharded / "dagster_partitioning.json").read_text()) == {"snapshot_assets": "daily x 2 shards"}
    assert json.loads((whole / "dagster_partitioning.json").read_text()) == {"snapshot_assets": "daily"}
    before = {folder: _digest(folder) for folder in (sharded, whole)}
    cases = [(_env(sharded, RANK_PIPELINE_SHARDS="3"), SHARD_JOB_NAME, "RANK_PIPELINE_SHARDS=3", "set RANK_PIPELINE_SHARDS=2"),
             (_env(sharded), DAILY_JOB_NAME, "RANK_PIPELINE_SHARDS=unset", "set RANK_PIPELINE_SHARDS=2"),
             (_env(whole, RANK_PIPELINE_SHARDS="2"), SHARD_JOB_NAME, "RANK_PIPELINE_SHARDS=2", "unset RANK_PIPELINE_SHARDS")]
    for case_env, job, said, advice in cases:
        code, out = _finish(_execute(case_env, job, LATER))
        assert code != 0, out
        assert said in out and advice in out and "strand their partition history" in out, out[-3000:]
    done = rank_pipeline("run", "--date", LATER.isoformat(), env=_env(sharded))
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("error: ")]
    assert line.startswith("error: RANK_PIPELINE_SHARDS=unset would partition the snapshot assets daily, but the "
                           f"runs of {sharded} were partitioned daily x 2 shards"), line
    assert {folder: _digest(folder) for folder in (sharded, whole)} == before
