"""Benchmark of the SQL models: full rebuild vs one-day incremental, and the raw load vs bare DuckDB.

What it does
    1. Generates ``--days`` daily snapshots of one account with ``--keywords`` tracked keywords spread over
       ``--domains`` domains, written straight into the snapshot column contract (docs/concepts/completeness.md,
       "Snapshots": the common columns, the spec's flattened fields, the full ``attributes`` JSON in the
       sandbox's invented keyword shape) with numpy and pyarrow, plus a ``_manifest.json`` per partition.
       Keywords are vectorised (no per-record Python); the small resources (domains, competitors, tags,
       usage, locations, languages) go through :class:`rank_pipeline.snapshots.writer.SnapshotWriter`.
       Positions drift, oscillate and cross the top-100 boundary; some ranking URLs flip; keywords are
       added through the year, so every mart has work to do.
    2. Loads every day but the last into the raw tables (:func:`rank_pipeline.warehouse.raw_load.reload_raw_from_snapshots`).
    3. Full rebuild: seeds and every model of ``dbt_like_sql/`` with the runner
       (:func:`rank_pipeline.transform.materialize.build_all` with ``full_refresh=True``).
    4. Loads the last day with :func:`rank_pipeline.warehouse.raw_load.load_partition` and, in the same run, the
       same files with a bare ``create table ... as select * from read_parquet([...])`` per resource (the
       reference: the least a load can do). The warehouse is checkpointed first, as the daily job's publish
       leaves it; the pair is repeated ``--load-repeats`` times interleaved (each repeat deletes the day
       and appends it again) and the medians are compared, so one noisy second does not decide the ratio.
    5. One-new-day incremental build of every model for the last day (incremental models build one
       partition, reading their look-back days' narrow columns only where a comparison needs them;
       best position to date and dim_keywords carry their state forward; views are re-created; the
       small dimension tables, one row per domain or competitor, are rebuilt in full).
    6. A late day: re-loads the day 30 days back and rebuilds every model row depending on it (the later
       days within each model's horizon, :mod:`rank_pipeline.transform.horizon`).

Output
    Times of each step, then the ratios: incremental / full rebuild, raw load / bare read_parquet, and
    re-running a day 30 days back / full rebuild, plus the per-model build times (where the time goes). It prints ratios, never a pass
    or fail: the machine is shared and timings are noisy. Timings are wall-clock ``time.perf_counter``.

Usage
    ``python benchmarks/models.py`` (defaults: 365 days x 10,000 keywords over 50 domains, 3.6 million
    keyword rows; a few minutes on 2 cores). The full-scale run is
    ``python benchmarks/models.py --keywords 50000`` (18 million keyword rows; about 10-15 minutes on 2
    busy cores, most of it the raw history load and the full rebuild). Smaller:
    ``python benchmarks/models.py --days 60 --keywords 5000``.
    Files go to ``--workdir`` (default ``benchmarks/.work/models``, git-ignored), emptied first; pass
    ``--keep`` to keep them afterwards (e.g. to open the warehouse in the duckdb shell).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rank_pipeline.snapshots.schema import MANIFEST_NAME, SCHEMA_VERSION, arrow_schema, partition_dir  # noqa: E402
from rank_pipeline.snapshots.writer import SnapshotWriter  # noqa: E402
from rank_pipeline.transform import DuckDBEngine, load_project, materialize  # noqa: E402
from rank_pipeline.warehouse.raw_load import load_partition, reload_raw_from_snapshots  # noqa: E402
from rank_pipeline.warehouse.warehouse_file import SCHEMAS  # noqa: E402

ACCOUNT = "bench"
ENGINES = np.array(["google", "bing", "yahoo"])
DEVICES = np.array(["desktop", "mobile"])
LOCALES = [("2840", "United States", "en"), ("2826", "United Kingdom", "en"), ("2276", "Germany", "de"),
           ("2250", "France", "fr")]
TAG_IDS = [f"00000000-0000-4000-8700-{i:012d}" for i in range(6)]


def _uuid(kind: int, i: int) -> str:
    return f"00000000-0000-4000-8{kind:03d}-{i:012d}"


class Generator:
    """A deterministic synthetic account: ``n_keywords`` keywords over ``n_domains`` domains.

    Keyword ``i`` exists from day index ``start[i]`` on (80 % from day 0, the rest added through the
    period), so the keyword count grows and the quota burns. Its position on day ``t`` is
    ``base + amp * sin(2 pi (t + phase) / period) + noise``, rounded, clipped at 1, null above 100.
    """

    def __init__(self, n_keywords: int, n_domains: int, days: int, first_day: date, seed: int = 7):
        rng = np.random.default_rng(seed)
        self.n, self.first_day, self.days = n_keywords, first_day, days
        self.n_domains = n_domains
        idx = np.arange(n_keywords)
        self.domain = idx % n_domains
        self.domain_ids = np.array([_uuid(2, d) for d in range(n_domains)], dtype=object)
        self.ids = pa.array([_uuid(3, i) for i in range(n_keywords)])
        self.parent = pa.array(self.domain_ids[self.domain])
        added_later = rng.random(n_keywords) < 0.2
        self.start = np.where(added_later, rng.integers(1, max(days, 2), n_keywords), 0)
        self.base = rng.gamma(2.0, 22.0, n_keywords)
        self.amp = rng.uniform(0, 8, n_keywords)
        self.phase = rng.uniform(0, 60, n_keywords)
        self.period = rng.uniform(20, 90, n_keywords)
        self.flips = rng.random(n_keywords) < 0.06
        engine = ENGINES[rng.choice(3, n_keywords, p=[0.6, 0.25, 0.15])]
        device = DEVICES[rng.integers(0, 2, n_keywords)]
        locale = rng.integers(0, len(LOCALES), n_keywords)
        volume = rng.integers(10, 50_000, n_keywords)
        tags = rng.integers(0, len(TAG_IDS) + 2, n_keywords)
        created = [(first_day + timedelta(days=int(s) - 30)).isoformat() for s in self.start]
        prefix = []
        for i in range(n_keywords):
            code, name, lang = LOCALES[locale[i]]
            tag = f'["{TAG_IDS[tags[i]]}"]' if tags[i] < len(TAG_IDS) else "[]"
            prefix.append(
                f'{{"keyword":"keyword {i}","searchEngine":"{engine[i]}","device":"{device[i]}",'
                f'"location":{{"code":"{code}","name":"{name}","variant":"Country"}},"language":{{"code":"{lang}"}},'
                f'"frequency":"daily","tagIds":{tag},"searchVolume":{volume[i]},'
                f'"createdAt":"{created[i]}T00:00:00Z","results":{{"organic":{{"position":'
            )
        self.prefix = pa.array(prefix)
        host = [f"https://www.domain{d}.com/" for d in self.domain]
        self.url_a = pa.array([f'"{h}keyword-{i}/"' for i, h in enumerate(host)])
        self.url_b = pa.array([f'"{h}keyword-{i}-guide/"' for i, h in enumerate(host)])
        self.rng = rng

    def keywords(self, t: int) -> pa.Table:
        """The keyword snapshot of day index ``t`` in the snapshot column contract."""
        day = self.first_day + timedelta(days=t)
        alive = self.start <= t
        noise = np.random.default_rng([7, t]).integers(-2, 3, self.n)
        raw = self.base + self.amp * np.sin(2 * np.pi * (t + self.phase) / self.period) + noise
        pos = np.maximum(1, np.rint(raw)).astype(np.int64)
        ranking = pos <= 100
        pos_text = pc.if_else(pa.array(ranking), pa.array(pos.astype(str)), pa.scalar("null"))
        flip = self.flips & (((t * 2654435761 + np.arange(self.n)) >> 3) % 2 == 1)
        url = pc.if_else(pa.array(flip), self.url_b, self.url_a)
        url = pc.if_else(pa.array(ranking), url, pa.scalar("null"))
        suffix = f',"capturedAt":"{day.isoformat()}T06:00:00Z"}}}}}}'
        attributes = pc.binary_join_element_wise(self.prefix, pos_text, pa.scalar(',"url":'), url,
                                                 pa.scalar(suffix), "")
        mask = pa.array(alive)
        n = int(alive.sum())
        extracted = datetime.combine(day, datetime.min.time(), tzinfo=UTC) + timedelta(hours=7)
        columns = {
            "snapshot_date": pa.array([day] * n, pa.date32()),
            "account": pa.array([ACCOUNT] * n),
            "id": self.ids.filter(mask),
            "type": pa.array(["keyword"] * n),
            "parent_id": self.parent.filter(mask),
            "extracted_at": pa.array([extracted] * n, pa.timestamp("us", tz="UTC")),
            "attributes": attributes.filter(mask),
        }
        return pa.Table.from_pydict(columns, schema=arrow_schema("keywords"))

    def keyword_count(self, t: int) -> int:
        return int((self.start <= t).sum())


def write_keywords(root: Path, day: date, table: pa.Table) -> None:
    """Write one keyword partition and its manifest, as :class:`SnapshotWriter` would lay them out."""
    folder = partition_dir(root, "keywords", day)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"part-{ACCOUNT}-0000.parquet"
    pq.write_table(table, folder / name, compression="zstd", row_group_size=100_000)
    manifest = {
        "resource": "keywords", "snapshot_date": day.isoformat(), "schema_version": SCHEMA_VERSION,
        "row_count": table.num_rows, "files": [name], "written_at": datetime.now(UTC).isoformat(),
        "complete": True, "accounts": {ACCOUNT: {"complete": True, "rows": table.num_rows}},
    }
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest))


def write_small(root: Path, gen: Generator, t: int) -> None:
    """Domains, competitors, tags, usage, locations, languages of day index ``t`` via SnapshotWriter."""
    day = gen.first_day + timedelta(days=t)
    at = datetime.combine(day, datetime.min.time(), tzinfo=UTC) + timedelta(hours=7)
    w = SnapshotWriter(root, "domains", day)
    w.write(ACCOUNT, [{"id": d, "type": "domain", "attributes": {
        "domain": f"domain{i}.com", "host": f"www.domain{i}.com", "matchType": "any", "projectName": f"P{i}"}}
        for i, d in enumerate(gen.domain_ids)], extracted_at=at)
    w.commit()
    w = SnapshotWriter(root, "competitors", day)
    for i, d in enumerate(gen.domain_ids):
        # competitor j of a domain exists on days where (t + i + j) % 97 != 0: a few removals and re-adds
        comps = [{"id": _uuid(6, i * 10 + j), "type": "competitor", "attributes": {
            "domain": f"rival{j}.com", "name": f"Rival {j}", "createdAt": "2025-01-01T00:00:00Z"}}
            for j in range(3) if (t + i + j) % 97 != 0]
        w.write(ACCOUNT, comps, parent_id=d, extracted_at=at)
    w.commit()
    w = SnapshotWriter(root, "tags", day)
    w.write(ACCOUNT, [{"id": tid, "type": "tag", "attributes": {"name": f"tag {i}", "color": "#000000",
                                                              "createdAt": "2025-01-01T00:00:00Z"}}
                      for i, tid in enumerate(TAG_IDS)], extracted_at=at)
    w.commit()
    count = gen.keyword_count(t)
    rows = sum(gen.keyword_count(t - k) for k in range(day.day))
    kw_limit, row_limit = 2 * gen.n, 40 * gen.n
    w = SnapshotWriter(root, "usage", day)
    w.write(ACCOUNT, [{"id": _uuid(1, 0), "type": "usage", "attributes": {
        "apiEnabled": True,
        "keywords": {"usage": count, "limit": kw_limit, "remaining": max(0, kw_limit - count)},
        "dataRows": {"usage": rows, "limit": row_limit, "remaining": max(0, row_limit - rows)}}}], extracted_at=at)
    w.commit()
    for resource, rows_ in (
        ("locations", [{"id": c, "type": "location", "attributes": {"code": c, "name": n, "variant": "Country"}}
                       for c, n, _ in LOCALES]),
        ("languages", [{"id": c, "type": "language", "attributes": {"code": c, "name": c}}
                       for c in sorted({x[2] for x in LOCALES})]),
    ):
        w = SnapshotWriter(root, resource, day)
        for engine in ENGINES:
            w.write(ACCOUNT, rows_, parent_id=str(engine), extracted_at=at)
        w.commit()


def _timed(fn):
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365, help="snapshot days (default 365)")
    parser.add_argument("--keywords", type=int, default=10_000,
                        help="tracked keywords (default 10,000; the full-scale run is 50,000)")
    parser.add_argument("--domains", type=int, default=50, help="domains the keywords spread over (default 50)")
    parser.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / ".work" / "models")
    parser.add_argument("--keep", action="store_true", help="keep the snapshots and warehouse afterwards")
    parser.add_argument("--load-repeats", type=int, default=5,
                        help="pairs of one-day raw load and bare read, interleaved; their medians are compared")
    args = parser.parse_args(argv)
    if args.days < 2 or args.keywords < 1 or args.domains < 1 or args.load_repeats < 1:
        parser.error("need --days >= 2, --keywords >= 1, --domains >= 1 and --load-repeats >= 1")

    shutil.rmtree(args.workdir, ignore_errors=True)
    snapshots = args.workdir / "snapshots"
    snapshots.mkdir(parents=True)
    first_day = date(2026, 1, 1)
    last_day = first_day + timedelta(days=args.days - 1)

    print(f"models benchmark: {args.days} days x {args.keywords:,} keywords over {args.domains} domains "
          f"({first_day} .. {last_day}), work dir {args.workdir}")
    started = time.perf_counter()
    gen = Generator(args.keywords, args.domains, args.days, first_day)
    rows = 0
    for t in range(args.days):
        table = gen.keywords(t)
        rows += table.num_rows
        write_keywords(snapshots, first_day + timedelta(days=t), table)
        write_small(snapshots, gen, t)
    generate_s = time.perf_counter() - started
    print(f"  generate snapshots: {generate_s:8.2f} s  ({rows:,} keyword rows)")

    # history: every day but the last, as one rebuild from snapshots
    history = args.workdir / "history"
    for resource_dir in snapshots.iterdir():
        (history / resource_dir.name).mkdir(parents=True)
        for part in resource_dir.iterdir():
            if part.name != f"snapshot_date={last_day.isoformat()}":
                part.rename(history / resource_dir.name / part.name)
    con = duckdb.connect(str(args.workdir / "warehouse.duckdb"))
    for schema in SCHEMAS:
        con.execute(f"create schema if not exists {schema}")
    _, history_s = _timed(lambda: reload_raw_from_snapshots(con, history))
    print(f"  load history (raw, {args.days - 1} days): {history_s:8.2f} s")

    project = load_project(ROOT / "dbt_like_sql")
    full, full_s = _timed(lambda: materialize.build_all(DuckDBEngine(con), project, None, full_refresh=True))
    print(f"  full rebuild of all models: {full_s:8.2f} s")

    # one new day: the pipeline's loader vs a bare read of the same files. The daily job publishes (a
    # checkpoint) after its build, so the next day's load starts from a checkpointed file: do the same here,
    # or the load would pay for writing out the full rebuild's WAL.
    con.execute("checkpoint")
    files = sorted(str(p) for p in snapshots.glob(f"*/snapshot_date={last_day.isoformat()}/*.parquet"))
    bare_path = args.workdir / "bare.duckdb"

    def bare_load() -> None:
        bare = duckdb.connect(str(bare_path))
        for resource in sorted(loaded):
            names = [f for f in files if f"/{resource}/" in f]
            bare.execute(f"create or replace table {resource} as select * from read_parquet({names!r})")
        bare.close()

    loaded, first_load_s = _timed(lambda: load_partition(con, snapshots, last_day))
    _, first_bare_s = _timed(bare_load)
    # the machine is shared: repeat the pair, interleaved, and compare medians. A repeat deletes the day's
    # raw rows first (then checkpoints, as above) so that every load appends a whole new day.
    load_times, bare_times = [first_load_s], [first_bare_s]
    for _ in range(args.load_repeats - 1):
        for resource in loaded:
            con.execute(f"delete from raw.{resource} where snapshot_date = ?", [last_day])
        con.execute("checkpoint")
        load_times.append(_timed(lambda: load_partition(con, snapshots, last_day))[1])
        bare_times.append(_timed(bare_load)[1])
    load_s, bare_s = statistics.median(load_times), statistics.median(bare_times)
    print(f"  load one day (raw, {sum(loaded.values()):,} rows), median of {len(load_times)}: {load_s:8.2f} s;"
          f" bare read_parquet of the same files: {bare_s:.2f} s (first pair: {first_load_s:.2f} s, "
          f"{first_bare_s:.2f} s)")

    incremental, inc_s = _timed(lambda: materialize.build_all(DuckDBEngine(con), project, last_day))
    print(f"  one-new-day incremental build of all models: {inc_s:8.2f} s")

    # a late day: re-load the day 30 days back and rebuild what depends on it (later days within horizons)
    back = last_day - timedelta(days=min(30, args.days - 1))
    _, reload_s = _timed(lambda: load_partition(con, history if back < last_day else snapshots, back))
    rerun, rerun_s = _timed(lambda: materialize.build_all(DuckDBEngine(con), project, back))
    print(f"  re-run of {back} (30 days back): load {reload_s:.2f} s, models {rerun_s:8.2f} s")
    con.close()

    print("\nratios")
    print(f"  incremental / full rebuild:        {inc_s / full_s:6.3f}  (1-day build costs {inc_s / full_s:.1%} of a"
          f" {args.days - 1}-day rebuild)")
    print(f"  raw load / bare read_parquet:      {load_s / bare_s:6.2f}  (medians of {len(load_times)} interleaved pairs;"
          " overhead of the transactional load)")
    print(f"  day 30 back re-run / full rebuild: {(reload_s + rerun_s) / full_s:6.3f}  (load and models; later days"
          " within each horizon rebuilt)")
    print("\nper model (seconds): full rebuild | incremental day | day 30 back | materialization of the day")
    for name, result in full.items():
        inc, late = incremental.get(name), rerun.get(name)
        print(f"  {name:45s} {result.seconds:8.2f} | {inc.seconds if inc else float('nan'):8.2f} | "
              f"{late.seconds if late else float('nan'):8.2f} | {inc.mode if inc else result.mode}")
    if not args.keep:
        shutil.rmtree(args.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from results import recorded  # benchmarks/ is this script's folder

    sys.exit(recorded("models", main))
