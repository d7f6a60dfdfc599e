"""Scale benchmark: full-rebuild and one-day times of the SQL models on DuckDB and on
Spark (local and on a standalone cluster), in the same run, for each keyword count given (default 50,000 and 300,000 over 365 days).

Snapshots come from benchmarks/models.py's synthetic generator (one account, the keyword snapshot
contract). For each size:

* DuckDB: load the history (every day but the last) into raw, full rebuild of every model, checkpoint; then
  load the last day (beside a bare ``read_parquet`` of its keyword files, the reference) and build it
  incrementally (the daily job). Each phase prints as it ends, with its CPU-seconds and the peak RSS so far.
* Spark (engine ``spark``: ``--master``, default ``local[2]``; engine ``cluster``: a standalone master and
  ``--cluster`` one-core workers, default 2, started on this machine from the pyspark wheel,
  tests/spark_cluster.py, and stopped after): register the history's files, full rebuild of
  every model; then register the last day too and build it incrementally, as DuckDB does (each
  incremental model and dated view rebuilds that day only, tables whole;
  rank_pipeline/transform/spark_engine.py). The slowest models of that day are printed, to show what the
  day costs. Each Spark engine gets its own session (one at a time: Spark allows one per process).

DuckDB's memory is capped by ``RANK_PIPELINE_DUCKDB_MEMORY_LIMIT`` when set, as the pipeline's warehouse writer is.

The models are the shipped ``dbt_like_sql/``, or ``--models DIR`` (default ``RANK_PIPELINE_MODELS_DIR`` when
set, as for the pipeline: :func:`rank_pipeline.settings.models_dir`).

Times are wall-clock seconds on this machine; the ratios Spark/DuckDB are what to compare. Usage::

    .venv/bin/python benchmarks/scale.py --days 365 --keywords 50000,300000
    .venv/bin/python benchmarks/scale.py --days 365 --keywords 5000 --engines duckdb,spark,cluster
    .venv/bin/python benchmarks/scale.py --days 30 --keywords 5000 --conf spark.sql.adaptive.enabled=false
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))  # spark_cluster.py: the launcher the tests and benchmarks share

from models import Generator, write_keywords, write_small  # noqa: E402
from spark_cluster import start_cluster  # noqa: E402

from rank_pipeline.settings import duckdb_memory_limit_from_env, models_dir  # noqa: E402
from rank_pipeline.transform import DuckDBEngine, Project, load_project, materialize  # noqa: E402
from rank_pipeline.transform.spark_engine import SparkEngine  # noqa: E402
from rank_pipeline.transform.spark_session import spark_session  # noqa: E402
from rank_pipeline.warehouse.engines import reload_raw  # noqa: E402
from rank_pipeline.warehouse.raw_load import (  # noqa: E402
    ENDPOINTS,
    ensure_raw_table,
    load_partition,
    reload_raw_from_snapshots,
)
from rank_pipeline.warehouse.warehouse_file import SCHEMAS, limit_memory  # noqa: E402


def _timed(fn):
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def run_size(sessions: Callable[[str, Path], contextlib.AbstractContextManager], days: int, keywords: int, domains: int,
             workdir: Path, engines: list[str], report, project: Project, reuse: bool = False, *,
             batch_days: int = 0, temp_limit: str | None = None) -> dict[str, float]:
    """Generate ``days`` x ``keywords`` snapshots under ``workdir`` and time each engine of ``engines``
    (``duckdb``, ``spark``, ``cluster``) on them, building ``project`` (seeds and models).

    Returns ``{"rows": keyword rows, "generate": s, "<engine>_load_history": s, "<engine>_full": s,
    "<engine>_load_day": s, "<engine>_day": s}`` (wall-clock seconds); ``report(keywords, out, engine)``
    is called as each engine finishes. ``sessions(engine, folder)``: a context manager giving the
    SparkSession of a Spark engine (:func:`spark_for`; a cluster keeps its logs under ``folder``). With
    ``reuse``, snapshots this function generated earlier in ``workdir`` for the same shape (its
    ``generated.json``) are used again, and only the warehouse file is started afresh.
    """
    history, recent = workdir / "history", workdir / "recent"
    first_day = FIRST_DAY
    last_day = first_day + timedelta(days=days - 1)
    marker = workdir / "generated.json"
    shape = {"days": days, "keywords": keywords, "domains": domains}
    if reuse and marker.exists() and {k: v for k, v in json.loads(marker.read_text()).items() if k in shape} == shape:
        rows = json.loads(marker.read_text())["rows"]
        for stale in ("warehouse.duckdb", "warehouse.duckdb.wal"):
            (workdir / stale).unlink(missing_ok=True)
        out: dict[str, float] = {"rows": rows, "generate": 0.0}
        print(f"  {keywords:,} keywords: reusing the {rows:,} keyword rows generated earlier in {workdir}", flush=True)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
        history.mkdir(parents=True)
        gen = Generator(keywords, domains, days, first_day)
        started = time.perf_counter()
        rows = 0
        for t in range(days):
            root = history if t < days - 1 else recent
            table = gen.keywords(t)
            rows += table.num_rows
            write_keywords(root, first_day + timedelta(days=t), table)
            write_small(root, gen, t)
        out = {"rows": rows, "generate": time.perf_counter() - started}
        marker.write_text(json.dumps({**shape, "rows": rows}))
        print(f"  {keywords:,} keywords: generated {rows:,} keyword rows in {out['generate']:.0f} s", flush=True)
    if "duckdb" in engines:
        _duckdb(out, workdir, project, history, recent, last_day, batch_days, temp_limit)
        report(keywords, out, "duckdb")
    for engine in (e for e in engines if e in SPARK_ENGINES):
        with sessions(engine, workdir / engine) as spark:
            _spark(out, spark, engine, workdir, project, history, recent, last_day)
        report(keywords, out, engine)
    return out


def peak_rss_mib() -> float:
    """The peak resident memory so far (MiB) of this process plus its waited-for children (Linux: KiB)."""
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _phase(out, key: str, fn):
    """Time ``fn`` into ``out[key]`` and print the phase as it ends, with this process's CPU-seconds in it (on a
    busy machine the wall time measures the load too), the peak memory so far and the load average."""
    cpu = _cpu_s()
    result, out[key] = _timed(fn)
    out[key + "_cpu"] = _cpu_s() - cpu
    out["peak_rss_mib"] = peak_rss_mib()
    print(f"  phase {key}: {out[key]:.2f} s, CPU {out[key + '_cpu']:.1f} s; peak RSS so far "
          f"{out['peak_rss_mib']:,.0f} MiB; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    return result


def _duckdb(out, workdir, project, history, recent, last_day, batch_days: int = 0, temp_limit: str | None = None
            ) -> None:
    """DuckDB: load the history into raw, full rebuild (``batch_days`` > 0: :func:`_history_in_batches` instead),
    load the last day, build it incrementally (seconds into ``out``; ``temp_limit``: DuckDB's
    ``max_temp_directory_size``). Each phase is printed as it ends, with the peak memory so far; the raw load of the day is
    followed by a bare DuckDB read of the same day's keyword rows (``duckdb_bare_read_day``), its reference."""
    con = duckdb.connect(str(workdir / "warehouse.duckdb"))
    limit_memory(con, duckdb_memory_limit_from_env())  # RANK_PIPELINE_DUCKDB_MEMORY_LIMIT, as the pipeline's writer
    if temp_limit:  # --duckdb-temp-limit: the spill's cap, so a full disk fails the run, not the machine
        con.execute("set max_temp_directory_size = ?", [temp_limit])
    print("  duckdb temp directory " + " ".join(str(v) for v in con.execute(
        "select current_setting('temp_directory'), current_setting('max_temp_directory_size')").fetchone()), flush=True)
    for schema in SCHEMAS:
        con.execute(f"create schema if not exists {schema}")
    limit = con.execute("select current_setting('memory_limit'), current_setting('threads')").fetchone()
    print(f"  duckdb memory_limit {limit[0]}, threads {limit[1]}", flush=True)
    # The raw tables are created first, outside the load's transaction: with duckdb 2.0.0 a table created (from
    # an Arrow scan, as ensure_raw_table does) in the same transaction as an insert of more than a row group
    # (122,880 rows: one day at 300,000 keywords) keeps the rows in its count but returns none to a scan after
    # the commit, and reload_raw_from_snapshots refuses the second day. With the tables there, the reload of
    # the history's days deletes nothing and inserts the same rows.
    for resource_name in ENDPOINTS:
        ensure_raw_table(con, resource_name)
    if batch_days > 0:
        _history_in_batches(out, con, project, history, last_day - timedelta(days=1), batch_days)
    else:
        _phase(out, "duckdb_load_history",
               lambda: reload_raw_from_snapshots(con, history, None, last_day - timedelta(days=1)))
        days_loaded, rows_loaded = con.execute("select count(distinct snapshot_date), sum(1) from raw.keywords").fetchone()
        print(f"  raw.keywords scanned after the load: {rows_loaded:,} rows over {days_loaded} days", flush=True)
        built = _phase(out, "duckdb_full", lambda: materialize.build_all(DuckDBEngine(con), project, None,
                                                                         full_refresh=True))
        _slowest("duckdb full rebuild", built)
    # the daily job's publish checkpoints after its build, so the next day's load starts from a checkpointed
    # file (as benchmarks/models.py times it): the rebuild's log is written out here, timed on its own
    _phase(out, "duckdb_checkpoint", lambda: con.execute("checkpoint"))
    _phase(out, "duckdb_load_day", lambda: load_partition(con, recent, last_day))
    files = sorted(str(f) for f in recent.rglob("*.parquet") if f.relative_to(recent).parts[0] == "keywords")
    _phase(out, "duckdb_bare_read_day", lambda: con.execute(
        "create temp table bare_read_day as select * from read_parquet(?)", [files]))
    con.execute("drop table bare_read_day")
    built = _phase(out, "duckdb_day", lambda: materialize.build_all(DuckDBEngine(con), project, last_day))
    _slowest("duckdb one day", built)
    con.close()
    print(f"  duckdb raw load of a day / bare read of its keyword files: "
          f"{out['duckdb_load_day'] / out['duckdb_bare_read_day']:.1f}; peak RSS {out['peak_rss_mib']:,.0f} MiB",
          flush=True)


def _history_in_batches(out, con, project, history, last: date, batch_days: int) -> None:
    """``--duckdb-batch-days N``: the history as the daily job meets it, N days at a time: each batch's raw days
    loaded, then built (the first batch whole, each later one incrementally for its days, as
    :func:`materialize.build_all` does for a range), so no build holds more than N days of new rows. Sums into
    ``out["duckdb_load_history"]`` and ``out["duckdb_full"]`` (the any-order guarantee: the marts equal a full
    rebuild's); each batch printed."""
    out["duckdb_load_history"] = out["duckdb_full"] = out["duckdb_load_history_cpu"] = out["duckdb_full_cpu"] = 0.0
    first = FIRST_DAY
    while first <= last:
        end = min(first + timedelta(days=batch_days - 1), last)
        batch: dict[str, float] = {}
        _phase(batch, "load", lambda a=first, b=end: reload_raw_from_snapshots(con, history, a, b))
        whole = first == FIRST_DAY
        built = _phase(batch, "build", lambda a=first, b=end, whole=whole: materialize.build_all(
            DuckDBEngine(con), project, None if whole else a, until=None if whole else b, full_refresh=whole))
        _slowest(f"duckdb batch {first} .. {end}", built)
        for key, phase in (("duckdb_load_history", "load"), ("duckdb_full", "build")):
            out[key] += batch[phase]
            out[key + "_cpu"] += batch[phase + "_cpu"]
        out["peak_rss_mib"] = batch["peak_rss_mib"]
        first = end + timedelta(days=1)
    print(f"  history in batches of {batch_days} days: loads {out['duckdb_load_history']:.1f} s "
          f"(CPU {out['duckdb_load_history_cpu']:.1f} s), builds {out['duckdb_full']:.1f} s "
          f"(CPU {out['duckdb_full_cpu']:.1f} s)", flush=True)


def _spark(out, spark, key: str, workdir, project, history, recent, last_day) -> None:
    """Spark (engine ``key``): register the history's files, full rebuild, register the last day, build
    that day incrementally (seconds into ``out`` as ``<key>_...``; the day's slowest models printed)."""
    engine = SparkEngine(spark, workdir / f"{key}_warehouse")
    _, out[f"{key}_load_history"] = _timed(lambda: reload_raw(engine, [history], count=False))
    _, out[f"{key}_full"] = _timed(lambda: materialize.build_all(engine, project))
    _, out[f"{key}_load_day"] = _timed(lambda: reload_raw(engine, [history, recent], count=False))
    built, out[f"{key}_day"] = _timed(lambda: materialize.build_all(engine, project, last_day))
    days = sum(1 for b in built.values() if b.partition_date is not None and b.partition_date == b.until == last_day)
    print(f"  {key} one day: {days} models built for that day only, {len(built) - days} seeds, tables and folds "
          "whole", flush=True)
    _slowest(f"{key} one day", built)


def _slowest(label: str, built: dict) -> None:
    """Print the six relations of ``built`` (``{name: BuildResult}``) that took longest, with their seconds."""
    slowest = sorted(built.items(), key=lambda kv: -kv[1].seconds)[:6]
    print(f"  {label}, slowest: " + ", ".join(f"{q} {b.seconds:.1f} s ({b.mode})" for q, b in slowest), flush=True)


FIRST_DAY = date(2026, 1, 1)
"""The first day of the generated history."""

SPARK_ENGINES = ("spark", "cluster")
"""The engines run on Spark: ``spark`` on ``--master``, ``cluster`` on a standalone cluster started here."""


@contextlib.contextmanager
def spark_for(engine: str, args: argparse.Namespace, folder: Path) -> Iterator:
    """The SparkSession of ``engine``: ``spark`` on ``args.master``; ``cluster`` on a standalone master and
    ``args.cluster`` one-core workers (``args.executor_memory`` each) started on this machine, its logs and
    scratch under ``folder``. The session (and the cluster) stop on exit; start times are printed, not
    counted."""
    conf = {"spark.driver.memory": args.driver_memory, **dict(args.conf)}
    with contextlib.ExitStack() as stack:
        master = args.master
        if engine == "cluster":
            cluster, cluster_s = _timed(lambda: start_cluster(args.cluster, memory=args.executor_memory,
                                                                      work_dir=folder))
            stack.enter_context(cluster)  # its JVMs also stop if this process dies first (spark_cluster's guard)
            master = cluster.master_url
            conf["spark.executor.memory"] = args.executor_memory
            print(f"  standalone cluster {master}: {args.cluster} workers ALIVE in {cluster_s:.1f} s", flush=True)
        spark, session_s = _timed(lambda: spark_session(
            master, shuffle_partitions=args.shuffle_partitions, app_name=f"rank-pipeline-scale-benchmark-{engine}",
            conf=conf))
        stack.callback(spark.stop)
        print(f"  Spark {spark.version} session on {master} start: {session_s:.1f} s (not counted below)", flush=True)
        yield spark


TABLE_HEADER = ("| keywords | keyword rows | engine | load history s | full rebuild s | load 1 day s | 1 day s | "
                "1 day / full |\n|---:|---:|---|---:|---:|---:|---:|---:|")
"""The header of the table :func:`table_row` fills."""


def table_row(keywords: int, r: dict[str, float], key: str, label: str | None = None) -> str:
    """One row of the printed table: the times ``r[key + '_load_history' | '_full' | '_load_day' |
    '_day']`` (seconds) of one engine (``label``, default ``key``, e.g. ``spark local[2]``) at ``keywords``."""
    return (f"| {keywords:,} | {int(r['rows']):,} | {label or key} | {r[key + '_load_history']:.1f} | "
            f"{r[key + '_full']:.1f} | {r[key + '_load_day']:.2f} | {r[key + '_day']:.1f} | "
            f"{r[key + '_day'] / r[key + '_full']:.3f} |")


def _setting(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` of ``--conf`` as ``(key, value)``; argparse reports a malformed one (exit 2)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--keywords", default="50000,300000", help="comma-separated keyword counts")
    parser.add_argument("--domains", type=int, default=50)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--cluster", type=int, default=2, metavar="N",
                        help="engine cluster: the number of one-core workers of the standalone cluster started here")
    parser.add_argument("--executor-memory", default="3g", help="engine cluster: each worker's executor memory")
    parser.add_argument("--shuffle-partitions", type=int, default=4)
    parser.add_argument("--driver-memory", default="8g",
                        help="spark.driver.memory (local mode runs in the driver; Spark's default 1g spills early)")
    parser.add_argument("--conf", action="append", default=[], type=_setting, metavar="KEY=VALUE",
                        help="a setting of every Spark session, e.g. spark.sql.adaptive.enabled=false (repeatable)")
    parser.add_argument("--engines", default="duckdb,spark,cluster",
                        help="comma-separated: duckdb, spark (on --master), cluster (a standalone cluster of "
                             "--cluster workers started here)")
    parser.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / ".work" / "scale")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--reuse", action="store_true",
                        help="use the snapshots generated earlier in --workdir for the same shape (with --keep)")
    parser.add_argument("--models", type=Path, default=None,
                        help="the models project to build (default: RANK_PIPELINE_MODELS_DIR, else the shipped "
                             "dbt_like_sql/)")
    parser.add_argument("--duckdb-temp-limit", default=None, metavar="SIZE",
                        help="DuckDB's max_temp_directory_size (e.g. 15GB): how much the build may spill to disk")
    parser.add_argument("--duckdb-batch-days", type=int, default=0, metavar="N",
                        help="DuckDB: load and build the history N days at a time, as the daily job meets it "
                             "(the first batch whole, later ones incrementally), instead of one full rebuild")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.keywords.split(",") if x.strip()]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if args.days < 2 or not sizes or min(sizes) < 1:
        parser.error("need --days >= 2 and keyword counts >= 1")
    if not engines or set(engines) - {"duckdb", *SPARK_ENGINES} or args.cluster < 1:
        parser.error("--engines takes duckdb, spark, cluster or several, and --cluster at least 1 worker")
    models = args.models or models_dir()
    if not models.is_dir():
        parser.error(f"--models {models}: not a folder")
    label = {"duckdb": "duckdb", "spark": f"spark {args.master}",
             "cluster": f"spark cluster ({args.cluster} workers x 1 core)"}
    print(f"scale benchmark: {args.days} days x {', '.join(f'{n:,}' for n in sizes)} keywords; engines "
          f"{', '.join(label[e] for e in engines)} (Spark driver memory {args.driver_memory}, "
          f"{args.shuffle_partitions} shuffle partitions); {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, python {platform.python_version()}, duckdb {duckdb.__version__}"
          + "".join(f"; --conf {key}={value}" for key, value in args.conf), flush=True)
    project = load_project(models)
    print(f"models: {len(project.models)} models and {len(project.seeds)} seeds from {models}", flush=True)
    rows_out: list[str] = []

    def report(n: int, r: dict[str, float], eng: str) -> None:
        line = table_row(n, r, eng, label[eng])
        rows_out.append(line)
        print("  " + line, flush=True)

    for n in sizes:
        r = run_size(lambda engine, folder: spark_for(engine, args, folder), args.days, n, args.domains, args.workdir / f"k{n}",
                     engines, report, project, args.reuse, batch_days=args.duckdb_batch_days,
                     temp_limit=args.duckdb_temp_limit)
        if "duckdb" in engines:
            rows_out.extend(f"<!-- {n:,} keywords: {label[e]}/duckdb full rebuild {r[e + '_full'] / r['duckdb_full']:.2f}, "
                            f"one day {r[e + '_day'] / r['duckdb_day']:.1f} -->" for e in engines if e in SPARK_ENGINES)
        if not args.keep:
            shutil.rmtree(args.workdir / f"k{n}", ignore_errors=True)
    print("\n" + TABLE_HEADER)
    print("\n".join(rows_out))
    return 0


if __name__ == "__main__":
    from results import recorded  # benchmarks/ is this script's folder

    sys.exit(recorded("scale", main))
