"""The published warehouse opens in DuckDB 1.x: a 1.x ``duckdb`` in its own venv reads a mart.

The pipeline writes with duckdb 2.x, whose own storage format (version 69) 1.x refuses; the publish step
writes the published file in storage version v1.0.0 (``RANK_PIPELINE_STORAGE_VERSION``). Fails on the
old publish (a byte copy of the build file): duckdb 1.4 raises on opening it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
from support import require

# the session fixtures run a demo and, on a fresh venv, create Superset's metadata database: minutes
pytestmark = [pytest.mark.xdist_group("dashboards"), pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[2]

READER_VENV = REPO / ".venv-duckdb1"
READER_PIN = "duckdb==1.4.*"
QUERY = ("select domain, snapshot_date::varchar, round(sum(visibility * tracked_keywords) / sum(tracked_keywords), 4) "
         "from marts.agg_domain_segment_daily group by all order by all")

READER = textwrap.dedent(
    """
    import json, sys, duckdb
    con = duckdb.connect(sys.argv[1], read_only=True)
    rows = con.execute(sys.argv[2]).fetchall()
    print(json.dumps({"version": duckdb.__version__, "rows": [list(r) for r in rows]}))
    """
)


def reader_python() -> str:
    """The venv with a DuckDB 1.x (created once, then cached in .venv-duckdb1, git-ignored)."""
    python = READER_VENV / "bin" / "python"
    if subprocess.run([str(python), "-c", "import duckdb"], capture_output=True).returncode != 0 \
            if python.is_file() else True:
        made = subprocess.run([sys.executable, "-m", "venv", "--clear", str(READER_VENV)], capture_output=True, text=True)
        if made.returncode == 0:
            made = subprocess.run([str(python), "-m", "pip", "install", "--quiet", READER_PIN],
                                  capture_output=True, text=True)
        require(made.returncode == 0,
                f"could not install {READER_PIN} into {READER_VENV} (needs PyPI): {made.stderr[-500:]}")
    return str(python)


@pytest.mark.slow
def test_published_warehouse_is_read_by_duckdb_1x(demo_data):
    published = demo_data / "warehouse.duckdb"
    proc = subprocess.run([reader_python(), "-c", READER, str(published), QUERY], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["version"].startswith("1."), out["version"]
    with duckdb.connect(str(published), read_only=True) as con:
        expected = [list(r) for r in con.execute(QUERY).fetchall()]
    assert expected and out["rows"] == expected
    # the build file stays in the running DuckDB's own format; only the published file is the old one
    with duckdb.connect(str(demo_data / "warehouse.build.duckdb"), read_only=True) as con:
        (build_rows,) = con.execute("select count(*) from marts.agg_domain_segment_daily").fetchone()
    assert build_rows > 0
