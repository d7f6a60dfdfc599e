"""Snapshots on object storage and extraction sharded across workers.

The object store is a real S3-compatible HTTP endpoint on loopback: moto's server mode
(``moto.server.ThreadedMotoServer``). The commands run as a user runs them: ``rank-pipeline`` as a
subprocess, the S3 location and credentials in the environment (``RANK_PIPELINE_SNAPSHOTS_URI``,
``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ...). Ground truth for "the same" is the same run on local
disk, and the sandbox's world (deterministic per day) behind both.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, date, datetime

import duckdb
import pyarrow.fs as pafs
import pytest
from support import command_env, rank_pipeline, rank_pipeline_argv

from rank_pipeline.settings import Shard, shard_of
from rank_pipeline.snapshots.reader import list_snapshot_dates, read_manifest, read_snapshot
from rank_pipeline.snapshots.schema import ENDPOINTS
from rank_pipeline.snapshots.storage import store_for
from rank_pipeline.snapshots.writer import SnapshotWriter
from rank_pipeline.warehouse.errors import SnapshotMissingError
from rank_pipeline.warehouse.raw_load import load_partition

# the daily runs below are two whole `rank-pipeline run`s: on a loaded 2-core machine they exceed the
# suite's default 300 s per test (their setup counts against it)
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("s3"), pytest.mark.timeout(1200)]

BUCKET = "rank-lake"
DAY = date(2026, 11, 20)
TODAY = datetime.now(UTC).date()  # every command is given it: a run after midnight plays it still


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on 127.0.0.1 with one bucket; yields the AWS_* environment that reaches it."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing-secret", "AWS_DEFAULT_REGION": "us-east-1"}
    pafs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", access_key="testing",
                      secret_key="testing-secret", region="us-east-1", allow_bucket_creation=True).create_dir(BUCKET)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the in-process readers below resolve s3:// URIs from the same variables
    try:
        yield env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


cli = functools.partial(rank_pipeline, drop=("AWS_",))
"""``rank-pipeline *args`` with a clean environment plus ``env`` (:func:`support.rank_pipeline`), this process's
``AWS_*`` dropped too: the command reaches S3 only through the variables the test names."""


def _rows(location, resource: str, day: date) -> set[tuple]:
    """(account, id, parent_id, attributes) of a committed snapshot: what was delivered, without times."""
    t = read_snapshot(location, resource, day)
    return set(zip(*(t.column(c).to_pylist() for c in ("account", "id", "parent_id", "attributes")), strict=True))


# -- the daily run, writing its snapshots to S3 --------------------------------------------------------


@pytest.fixture(scope="module")
def runs(s3, tmp_path_factory):
    """``rank-pipeline run`` of today on the embedded sandbox: once with S3 snapshots, once on local disk."""
    s3_data, local_data = tmp_path_factory.mktemp("s3run"), tmp_path_factory.mktemp("localrun")
    uri = f"s3://{BUCKET}/daily/snapshots"
    envs = [command_env({**s3, "RANK_PIPELINE_DATA_DIR": str(s3_data), "RANK_PIPELINE_SNAPSHOTS_URI": uri},
                        drop=("AWS_",)),
            command_env({"RANK_PIPELINE_DATA_DIR": str(local_data)}, drop=("AWS_",))]
    procs = [subprocess.Popen([*rank_pipeline_argv(), "run", "--date", TODAY.isoformat()], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for env in envs]  # the two runs at once: independent data folders
    done = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=1000)
            done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    finally:
        for proc in procs:  # never leave a run behind (or unreaped) if the wait is interrupted
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    return uri, s3_data, done[0], local_data, done[1]


@pytest.mark.slow
def test_a_daily_run_on_s3_equals_the_same_run_on_local_disk(runs, published_marts):
    uri, s3_data, on_s3, local_data, local = runs
    assert on_s3.returncode == 0, on_s3.stdout + on_s3.stderr
    assert local.returncode == 0, local.stdout + local.stderr
    # the snapshots went to the bucket, none to the data folder
    assert not (s3_data / "snapshots").exists() or not any((s3_data / "snapshots").rglob("*.parquet"))
    assert list_snapshot_dates(uri, "keywords") == [TODAY]
    for resource in ENDPOINTS:
        assert _rows(uri, resource, TODAY) == _rows(local_data / "snapshots", resource, TODAY), resource
        assert read_manifest(uri, resource, TODAY).row_count == \
            read_manifest(local_data / "snapshots", resource, TODAY).row_count
    # the warehouse loaded from S3 holds the same raw rows and the same models
    with duckdb.connect(str(s3_data / "warehouse.duckdb"), read_only=True) as a, \
            duckdb.connect(str(local_data / "warehouse.duckdb"), read_only=True) as b:
        for resource in ENDPOINTS:
            q = f"select account, id, parent_id, cast(attributes as varchar) from raw.{resource}"
            assert sorted(a.execute(q).fetchall()) == sorted(b.execute(q).fetchall()), resource
        assert a.execute("select count(*) from raw.keywords").fetchone()[0] > 0
    local_marts = published_marts(local_data / "warehouse.duckdb")
    assert local_marts and any(rows for rows in local_marts.values())
    assert published_marts(s3_data / "warehouse.duckdb") == local_marts
    # DuckDB read the bucket without its httpfs extension (nothing downloaded at run time)
    with duckdb.connect(str(s3_data / "warehouse.duckdb"), read_only=True) as con:
        assert not con.execute("select count(*) from duckdb_extensions() "
                               "where extension_name = 'httpfs' and installed").fetchone()[0]


@pytest.mark.slow
def test_rebuild_from_s3_snapshots_into_an_empty_data_folder(runs, s3, tmp_path, published_marts):
    uri, _, on_s3, local_data, _ = runs
    assert on_s3.returncode == 0, on_s3.stderr
    done = cli("rebuild", "--full-refresh",
               env={**s3, "RANK_PIPELINE_DATA_DIR": str(tmp_path), "RANK_PIPELINE_SNAPSHOTS_URI": uri})
    assert done.returncode == 0, done.stdout + done.stderr
    assert published_marts(tmp_path / "warehouse.duckdb") == published_marts(local_data / "warehouse.duckdb")


# -- commit where renames are not atomic ---------------------------------------------------------------


def _records(prefix: str, n: int) -> list[dict]:
    return [{"id": f"{prefix}{i}", "type": "keywords", "attributes": {"keyword": f"{prefix} {i}"}} for i in range(n)]


def _commit(uri: str, version: str, day: date = DAY) -> dict:
    writer = SnapshotWriter(uri, "keywords", day, row_group_size=3)
    writer.write("acme", _records(f"{version}-acme-", 7), parent_id="d1")
    writer.write("globex", _records(f"{version}-globex-", 4), parent_id="d2")
    return writer.commit()


def _objects(uri: str, day: date = DAY) -> set[str]:
    store = store_for(uri)
    return {os.path.basename(i.path) for i in store.listdir(store.join("keywords", f"snapshot_date={day}"))}


def test_an_interrupted_commit_leaves_the_previous_version_and_its_files_are_ignored(s3, monkeypatch):
    uri = f"s3://{BUCKET}/interrupted"
    v1 = _commit(uri, "v1")
    expected = _rows(uri, "keywords", DAY)
    assert {r[1] for r in expected} == {f"v1-acme-{i}" for i in range(7)} | {f"v1-globex-{i}" for i in range(4)}

    def crash(self, path, text):
        raise OSError("connection reset while writing the manifest")

    monkeypatch.setattr(SnapshotWriter, "_write_manifest", crash)
    with pytest.raises(OSError):
        _commit(uri, "v2")
    # the data files of v2 are in the day's folder, but no manifest lists them: readers see v1 only
    partial = _objects(uri) - set(v1.files) - {"_manifest.json"}
    assert partial, "the interrupted commit should have left its data files behind"
    assert _rows(uri, "keywords", DAY) == expected
    assert read_manifest(uri, "keywords", DAY).files == v1.files
    con = duckdb.connect()
    assert load_partition(con, uri, DAY, ["keywords"]) == {"keywords": 11}
    assert {i for (i,) in con.execute("select id from raw.keywords").fetchall()} == {r[1] for r in expected}

    # a day interrupted before its first manifest is not a day at all
    with pytest.raises(OSError):
        _commit(uri, "v2", day=date(2026, 11, 21))
    assert list_snapshot_dates(uri, "keywords") == [DAY]
    with pytest.raises(SnapshotMissingError, match="never committed"):
        load_partition(con, uri, date(2026, 11, 21), ["keywords"])

    # the next successful commit replaces v1 and removes the leftovers of v1 and of the interrupted v2
    monkeypatch.undo()
    v3 = _commit(uri, "v3")
    assert _objects(uri) == {*v3.files, "_manifest.json"}
    assert {r[1] for r in _rows(uri, "keywords", DAY)} == {f"v3-acme-{i}" for i in range(7)} | \
        {f"v3-globex-{i}" for i in range(4)}


def test_a_commit_killed_before_its_manifest_leaves_the_day_as_it_was(s3):
    """``kill -9`` of a writer whose data files are uploaded and whose manifest is not."""
    uri = f"s3://{BUCKET}/killed"
    _commit(uri, "v1")
    expected = _rows(uri, "keywords", DAY)
    script = textwrap.dedent(f"""
        import sys, time
        from datetime import date
        from rank_pipeline.snapshots.writer import SnapshotWriter
        def hang(self, path, text):
            print("files uploaded", flush=True)
            time.sleep(600)
        SnapshotWriter._write_manifest = hang
        w = SnapshotWriter({uri!r}, "keywords", date({DAY.year}, {DAY.month}, {DAY.day}))
        w.write("acme", [{{"id": "killed-1", "type": "keywords", "attributes": {{}}}}], parent_id="d1")
        w.commit()
    """)
    env = {**os.environ, **s3}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "files uploaded"
        before = _objects(uri)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert any(name.startswith("part-acme-") for name in before - set(read_manifest(uri, "keywords", DAY).files))
    assert _rows(uri, "keywords", DAY) == expected


# -- extraction sharded across workers -----------------------------------------------------------------


@pytest.mark.slow
def test_two_shards_together_deliver_exactly_what_one_run_delivers(runs, s3, tmp_path):
    """Two ``rank-pipeline extract`` workers at once (``RANK_PIPELINE_SHARD=0/2`` and ``1/2``) into one
    bucket prefix, against today's unsharded run of the same sandbox (deterministic per day)."""
    one, two = runs[0], f"s3://{BUCKET}/two-workers"
    assert runs[2].returncode == 0, runs[2].stderr
    accounts = set(read_manifest(one, "domains", TODAY).accounts)
    assert {shard_of(a, 2) for a in accounts} == {0, 1}, "both shards must own an account for this test"
    workers = [subprocess.Popen(
        [*rank_pipeline_argv(), "extract", "--date", TODAY.isoformat()], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
        env=command_env({**s3, "RANK_PIPELINE_DATA_DIR": str(tmp_path / f"worker{i}"),
                         "RANK_PIPELINE_SNAPSHOTS_URI": two, "RANK_PIPELINE_SHARD": f"{i}/2"}, drop=("AWS_",)))
        for i in (0, 1)]
    for worker in workers:
        out, _ = worker.communicate(timeout=600)
        assert worker.returncode == 0, out
    store = store_for(two)
    for resource in ENDPOINTS:
        assert _rows(two, resource, TODAY) == _rows(one, resource, TODAY), resource
        whole, sharded = read_manifest(one, resource, TODAY), read_manifest(two, resource, TODAY)
        assert sharded.shards == 2 and sharded.row_count == whole.row_count
        assert sharded.complete is whole.complete is True
        assert set(sharded.accounts) == set(whole.accounts) == accounts
        for name, report in whole.accounts.items():
            got = sharded.accounts[name]
            for field in ("rows", "expected", "delivered", "complete"):
                assert getattr(got, field) == getattr(report, field), (resource, name, field)
        # each worker extracted only its own accounts
        for i in (0, 1):
            shard = Shard(i, 2)
            text = store.read_text(store.join(resource, f"snapshot_date={TODAY}", shard.manifest_name))
            assert set(json.loads(text)["accounts"]) == {a for a in accounts if shard.owns(a)}
    con = duckdb.connect()
    counts = load_partition(con, two, TODAY)
    assert counts == {r: read_manifest(one, r, TODAY).row_count for r in ENDPOINTS}


def test_a_day_sharded_in_two_is_committed_once_both_shards_are(s3):
    uri = f"s3://{BUCKET}/shard-commit"
    first = SnapshotWriter(uri, "keywords", DAY, shard=Shard(1, 2))
    first.write("acme", _records("a", 3), parent_id="d1")
    first.commit()
    assert list_snapshot_dates(uri, "keywords") == []  # one shard of two is not the day
    with pytest.raises(SnapshotMissingError, match="only some shard workers committed it"):
        load_partition(duckdb.connect(), uri, DAY, ["keywords"])
    second = SnapshotWriter(uri, "keywords", DAY, shard=Shard(0, 2))
    second.write("globex", _records("g", 2), parent_id="d2")
    second.commit()
    assert list_snapshot_dates(uri, "keywords") == [DAY]
    assert {r[:2] for r in _rows(uri, "keywords", DAY)} == {("acme", "a0"), ("acme", "a1"), ("acme", "a2"),
                                                            ("globex", "g0"), ("globex", "g1")}
    manifest = read_manifest(uri, "keywords", DAY)
    assert manifest.row_count == 5 and manifest.shards == 2


# -- settings ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "variable", "value", "says"), [
    ("extract", "RANK_PIPELINE_SNAPSHOTS_URI", "s3://user:secret@bucket/p", "holds credentials"),
    ("extract", "RANK_PIPELINE_SHARD", "2/2", "is not a shard"),
    ("run", "RANK_PIPELINE_SHARD", "0/2", "is for extraction workers"),
])
def test_a_bad_storage_or_shard_setting_is_one_line_exit_2(tmp_path, command, variable, value, says):
    done = cli(command, env={"RANK_PIPELINE_DATA_DIR": str(tmp_path), variable: value}, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    assert says in lines[-1] and variable in lines[-1]
    assert "secret" not in done.stderr
    assert not (tmp_path / "snapshots").exists()


@pytest.mark.parametrize(("value", "says"), [
    ("s3://", "names no bucket"),
    ("s3://bucket/p?acl=public", "unknown option(s) acl"),
    ("nosuchscheme://x/y", "neither pyarrow nor fsspec"),
    ("s3:bucket/p", "looks like a URI without '//'"),
])
def test_snapshots_uri_validation_says_what_to_set(tmp_path, value, says):
    from rank_pipeline.settings import ConfigurationError, Settings

    with pytest.raises(ConfigurationError) as err:
        Settings.from_env({"RANK_PIPELINE_DATA_DIR": str(tmp_path), "RANK_PIPELINE_SNAPSHOTS_URI": value})
    assert says in str(err.value) and "\n" not in str(err.value)
    assert "s3://bucket/prefix" in str(err.value)


def test_a_local_snapshots_uri_is_a_folder(tmp_path):
    from rank_pipeline.settings import Settings

    elsewhere = tmp_path / "lake"
    settings = Settings.from_env({"RANK_PIPELINE_DATA_DIR": str(tmp_path / "d"),
                                  "RANK_PIPELINE_SNAPSHOTS_URI": f"file://{elsewhere}"})
    assert settings.paths.snapshot_store_uri == elsewhere
    unset = Settings.from_env({"RANK_PIPELINE_DATA_DIR": str(tmp_path / "d")})
    assert unset.paths.snapshot_store_uri == (tmp_path / "d" / "snapshots").resolve()


def test_an_fsspec_scheme_works_the_same_way():
    """``memory://`` (fsspec, not pyarrow): commit manifest-last, list, read and load into DuckDB."""
    uri = "memory://lake/snapshots"
    manifest = _commit(uri, "m1")
    assert manifest.files and all(f.startswith("part-") and f.count("-") == 3 for f in manifest.files)
    assert list_snapshot_dates(uri, "keywords") == [DAY]
    assert len(_rows(uri, "keywords", DAY)) == 11
    assert load_partition(duckdb.connect(), uri, DAY, ["keywords"]) == {"keywords": 11}


def test_the_dagster_resources_carry_the_uri_and_the_shard(tmp_path):
    from rank_pipeline.defs.resources import source_from_env, warehouse_from_env
    from rank_pipeline.settings import Settings

    settings = Settings.from_env({"RANK_PIPELINE_DATA_DIR": str(tmp_path), "RANK_PIPELINE_SHARD": "1/3",
                                  "RANK_PIPELINE_SNAPSHOTS_URI": "s3://rank-lake/prod?region=eu-west-1"})
    warehouse = warehouse_from_env(settings)
    assert warehouse.snapshots_uri == "s3://rank-lake/prod?region=eu-west-1"
    assert warehouse.snapshot_store_uri == "s3://rank-lake/prod?region=eu-west-1"
    source = source_from_env(settings)
    assert source.shard == Shard(1, 3)
    assert "shard 1/3" in source.describe()
