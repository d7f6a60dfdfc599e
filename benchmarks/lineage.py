"""Benchmark of the column lineage (:mod:`rank_pipeline.transform.lineage`) of the shipped models: the
analysis cold (no cache file, no memo) against the previous analysis, measured in the same run.

What it does
    1. Loads ``dbt_like_sql/`` and builds its skeleton on empty inputs (the relation types both analyses
       need, :func:`rank_pipeline.transform.unit_tests.relation_types`, cached for the process after): its
       time is printed on its own, it is the same for both.
    2. Runs the analysis (``lineage._analyse``, what :func:`project_lineage` computes without a cache) and
       the reference (``reference_lineage`` in ``tests/transform/test_lineage.py``, the previous analysis:
       sqlglot's lineage with its trimmed selects, each column's graph walked on its own), ``--repeats``
       times interleaved, which one goes first alternating; medians are compared.
    3. Checks that both give the same result (``to_json()`` and every column's sources).
    4. With ``--fresh``, also times :func:`project_lineage` in a new Python process (imports, skeleton and
       analysis: what a first call costs).

Output
    The times, then the ratio analysis / reference (and the speed-up). It prints ratios, never a pass or
    fail: the machine is shared and timings are noisy. Timings are wall-clock ``time.perf_counter``.

Usage
    ``python benchmarks/lineage.py`` (3 repeats: about half a minute on 2 cores, most of it the reference);
    ``python benchmarks/lineage.py --repeats 5 --fresh``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # support.py, which the reference lineage's test module imports

from rank_pipeline.transform import load_project  # noqa: E402
from rank_pipeline.transform.lineage import _analyse  # noqa: E402
from rank_pipeline.transform.unit_tests import relation_types  # noqa: E402
from tests.transform.test_lineage import reference_lineage  # noqa: E402

FRESH = """
import sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from rank_pipeline.transform import load_project
from rank_pipeline.transform.lineage import project_lineage
project = load_project(Path({models!r}))
started = time.perf_counter()
project_lineage(project)
print(time.perf_counter() - started)
"""


def _timed(fn):
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=ROOT / "dbt_like_sql", help="the project (default dbt_like_sql/)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs of each (default 3)")
    parser.add_argument("--fresh", action="store_true", help="also time project_lineage in a new process")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("need --repeats >= 1")

    project = load_project(args.models)
    print(f"lineage benchmark: {len(project.models)} models of {args.models}, {args.repeats} interleaved repeats")
    _, skeleton_s = _timed(lambda: relation_types(project))
    print(f"  skeleton build (relation types, once; both need it): {skeleton_s:8.2f} s")

    new_times: list[float] = []
    ref_times: list[float] = []
    new = ref = None
    for i in range(args.repeats):
        order = ("new", "ref") if i % 2 == 0 else ("ref", "new")
        for which in order:
            if which == "new":
                new, seconds = _timed(lambda: _analyse(project, project.topological_order()))
                new_times.append(seconds)
            else:
                ref, seconds = _timed(lambda: reference_lineage(project))
                ref_times.append(seconds)
    columns = sum(len(c) for c in new.columns.values())
    new_s, ref_s = statistics.median(new_times), statistics.median(ref_times)
    print(f"  analysis ({columns} columns, {len(new.errors)} errors), median: {new_s:8.2f} s  "
          f"(runs: {', '.join(f'{t:.2f}' for t in new_times)})")
    print(f"  reference (previous analysis), median:    {ref_s:8.2f} s  "
          f"(runs: {', '.join(f'{t:.2f}' for t in ref_times)})")
    same = new.to_json() == ref.to_json() and all(
        new.sources(*key) == ref.sources(*key) for key in ref.direct)
    print(f"  same result as the reference: {'yes' if same else 'NO'}")

    if args.fresh:
        code = FRESH.format(root=str(ROOT), models=str(args.models))
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
        fresh_s = float(out.stdout.strip().splitlines()[-1])
        print(f"  project_lineage in a new process (skeleton + analysis, no cache): {fresh_s:8.2f} s")

    print("\nratios")
    print(f"  analysis / reference:           {new_s / ref_s:6.3f}  ({ref_s / new_s:.1f}x faster)")
    print(f"  (skeleton + analysis) / (skeleton + reference): {(skeleton_s + new_s) / (skeleton_s + ref_s):6.3f}"
          "  (a cold project_lineage call, imports aside)")
    return 0 if same else 1


if __name__ == "__main__":
    from results import recorded  # benchmarks/ is this script's folder

    sys.exit(recorded("lineage", main))
