"""Benchmark of the vendor-shape check, ``profile`` and ``profile --suggest`` at 50,000 keywords a day.

What it does
    1. Writes two consecutive snapshot days of ``--keywords`` keyword records (default 50,000) in the
       sandbox's default shape (:func:`rank_pipeline.sandbox.assumptions.keyword_record`, one in six not
       ranking) with :class:`rank_pipeline.snapshots.writer.SnapshotWriter`, and a third day of the same
       records in each of the sandbox's ``vendor-c``, ``vendor-d`` and ``vendor-e`` shapes
       (:mod:`rank_pipeline.sandbox.shapes`: renamed paths, numbers as text with sentinels; epoch and text
       timestamps, ids inside objects; the position in an array of objects, the device as a flag).
    2. Times, each ``--repeats`` times (medians):
       - the blocking check of the second day, against the contract and the first day, whose path
         counts the first day's own check kept (:func:`rank_pipeline.shape.check_snapshots`, what every
         run adds);
       - ``profile`` of that day (:func:`rank_pipeline.shape.profile_day`: every path with distinct counts
         and examples);
       - the suggestion on each shape's day, as ``profile --suggest`` makes it: its ``attributes`` read
         (:func:`rank_pipeline.shape.profile.attributes_table`) and the remap matched
         (:func:`rank_pipeline.shape.suggest.suggest_remap`);
       - the check of the ``vendor-e`` day against the contract its suggestion wrote (paths into arrays are
         read record by record in Python: :meth:`rank_pipeline.shape.profile.Profiler.locate`);
       - the reference, measured in the same run: a bare DuckDB read of the same Parquet files
         (``select count(*), max(length(attributes)) from read_parquet(...)``).
    3. Prints the ratios: the check, the profile and the suggestion against the bare read, and the check
       and the suggestion against the least time the day's keywords take to extract at the spec's rate
       ceiling (300 requests per key per minute; 1,000 records per page; every multi-page list read twice to
       prove its id set), which is the floor of that size's daily run (the run takes at least that, so a
       ratio to the floor bounds the ratio to the run from above). The target: each within 5 % of a day.

It prints ratios, never a pass or fail: the machine is shared and timings are noisy.

    .venv/bin/python benchmarks/shape.py [--keywords 50000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb

from rank_pipeline.sandbox.assumptions import keyword_record
from rank_pipeline.sandbox.shapes import parse_shape
from rank_pipeline.settings import models_dir
from rank_pipeline.shape import check_snapshots, load_contract, load_thresholds, profile_day
from rank_pipeline.shape.contract_patch import edited_contract
from rank_pipeline.shape.profile import attributes_table
from rank_pipeline.shape.suggest import suggest_remap
from rank_pipeline.snapshots.reader import snapshot_files
from rank_pipeline.snapshots.writer import SnapshotWriter
from rank_pipeline.transform.contract import CONTRACT_FILE

D1, D2 = date(2026, 11, 1), date(2026, 11, 2)
PER_PAGE, PER_MINUTE = 1000, 300
SUGGESTED = {"vendor-c": date(2026, 11, 3), "vendor-d": date(2026, 11, 4), "vendor-e": date(2026, 11, 5)}
"""The shapes the suggestion is timed on, each on a day of its own."""


def write_day(root: Path, day: date, keywords: int, domains: int = 50, shape: str = "default") -> None:
    writer = SnapshotWriter(root, "keywords", day)
    at = datetime.combine(day, datetime.min.time(), UTC)
    per_domain = max(1, keywords // domains)
    served = parse_shape(shape)
    for d in range(domains):
        records = [served.keyword(keyword_record(
            f"00000000-0000-0000-{d:04d}-{i:012d}", keyword=f"keyword {d} {i}", search_engine="google",
            device="desktop" if i % 3 else "mobile", location={"code": "2840", "name": "United States",
                                                               "variant": "Country"},
            language_code="en", frequency="daily", tag_ids=[f"tag-{i % 7}"] if i % 2 else [],
            search_volume=10 * (i % 500), created_at="2025-01-01T00:00:00Z",
            position=None if i % 6 == 0 else 1 + (i * 7 + day.day) % 100,
            url=None if i % 6 == 0 else f"https://example.com/{d}/{i % 40}", captured=f"{day}T06:00:00Z"), day)
            for i in range(per_domain)]
        writer.write("acme", records, parent_id=f"domain-{d}", extracted_at=at)
    writer.commit()


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--keywords", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    contract, thresholds = load_contract(models_dir()), load_thresholds(models_dir())
    with tempfile.TemporaryDirectory(prefix="bench-shape-") as tmp:
        root = Path(tmp)
        for day in (D1, D2):
            write_day(root, day, args.keywords)
        for shape, day in SUGGESTED.items():
            write_day(root, day, args.keywords, shape=shape)
        files = snapshot_files(root, "keywords", D2)
        listed = ", ".join(f"'{f}'" for f in files)

        def bare() -> None:
            with duckdb.connect() as con:
                con.execute(f"select count(*), max(length(attributes)) from read_parquet([{listed}])").fetchall()

        cache = root / "cache"
        check_snapshots(root, contract, thresholds, D1, D1, endpoints=["keywords"], cache_dir=cache)

        def check() -> None:  # as a daily run does it: the day before was counted by its own run
            result = check_snapshots(root, contract, thresholds, D2, D2, endpoints=["keywords"],
                                     cache_dir=cache)["keywords"]
            assert result.passed, result.lines()

        def profile() -> None:
            profile_day(root, D2, endpoints=["keywords"])

        def suggest(day: date):  # as `profile --suggest` does it for the keywords of a shape's day
            suggestion = suggest_remap(contract, thresholds, {"keywords": attributes_table(root, "keywords", day)})
            assert suggestion.assignments and not suggestion.unmatched, suggestion.notes()
            return suggestion

        remapped_dir = root / "models"
        shutil.copytree(models_dir(), remapped_dir)
        written = remapped_dir / CONTRACT_FILE
        vendor_e = suggest(SUGGESTED["vendor-e"])
        written.write_text(edited_contract(written.read_text(), [
            (a.endpoint, a.spec.name, a.path, a.updates) for a in vendor_e.assignments]))
        remapped = load_contract(remapped_dir)

        def check_arrays() -> None:
            day = SUGGESTED["vendor-e"]
            result = check_snapshots(root, remapped, thresholds, day, day, endpoints=["keywords"])["keywords"]
            assert result.passed, result.lines()

        reference, checked, profiled, arrays = (
            median_seconds(f, args.repeats) for f in (bare, check, profile, check_arrays))
        suggested = {shape: median_seconds(lambda day=day: suggest(day), args.repeats)
                     for shape, day in SUGGESTED.items()}
    pages = -(-args.keywords // PER_PAGE)
    floor = 2 * pages / (PER_MINUTE / 60)  # every page read twice, at the per-key ceiling
    print(f"shape benchmark: {args.keywords:,} keyword records a day, medians of {args.repeats}")
    print(f"  bare DuckDB read of the day's Parquet (reference)   {reference:8.2f} s")
    print(f"  check of the day against the contract and the day before {checked:8.2f} s"
          f"   {checked / reference:6.1f} x the bare read")
    print(f"  profile of the day (distinct counts, examples)      {profiled:8.2f} s   {profiled / reference:6.1f} x")
    print(f"  check of a vendor-e day, paths into arrays           {arrays:8.2f} s   {arrays / reference:6.1f} x")
    for shape, seconds in suggested.items():
        print(f"  suggestion on a {shape} day (read, profile, match) {seconds:8.2f} s   {seconds / reference:6.1f} x")
    print(f"  extraction floor at the rate ceiling ({2 * pages} requests) {floor:8.1f} s")
    print(f"  check / extraction floor: {checked / floor:.3f} (target: at most 0.05 of a day)")
    print(f"  check with paths into arrays / extraction floor: {arrays / floor:.3f}")
    print(f"  suggestion / extraction floor: {max(suggested.values()) / floor:.3f} (the slowest shape; target: at "
          "most 0.05 of a day)")


if __name__ == "__main__":
    from results import recorded  # benchmarks/ is this script's folder

    sys.exit(recorded("shape", main))
