"""A day of more than one DuckDB row group (122,880 rows) loaded into a raw table created in the same transaction
is read whole by every query afterwards.

duckdb 2.0.0 hides such rows from grouped scans when the table was made by ``CREATE TABLE ... AS SELECT`` in the
load's transaction (``count(*)`` sees them, ``group by`` does not); the raw load creates its tables from their
declared columns instead (:mod:`rank_pipeline.transform.duckdb_raw`). This holds it, at the size of a big account.
"""

from __future__ import annotations

from datetime import date

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from rank_pipeline.transform.duckdb_raw import load_raw
from rank_pipeline.transform.primitives import RawDay, RawTable

ROWS = 300_000  # more than two row groups
COLUMNS = (("id", "VARCHAR"), ("snapshot_date", "DATE"), ("attributes", "JSON"), ("loaded_at", "TIMESTAMPTZ"))


def test_a_day_of_several_row_groups_loaded_into_a_new_table_is_seen_by_grouped_queries(tmp_path):
    days = [date(2026, 1, 1), date(2026, 1, 2)]
    handed = []
    for day in days:
        path = tmp_path / f"{day}.parquet"
        pq.write_table(pa.table({"id": [f"k{i}" for i in range(ROWS)], "snapshot_date": [day] * ROWS,
                                 "attributes": ['{"position": 1}'] * ROWS}), path)
        handed.append(RawDay(day, (str(path),), ROWS, str(path), ("id", "snapshot_date", "attributes")))
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        loaded = load_raw(con, [RawTable("keywords", COLUMNS, tuple(handed))], None, None)
        assert loaded == {day: {"keywords": ROWS} for day in days}
        grouped = con.execute("select snapshot_date, count(*), count(distinct id) from raw.keywords "
                              "group by 1 order by 1").fetchall()
        assert grouped == [(day, ROWS, ROWS) for day in days]
    finally:
        con.close()
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as again:
        assert again.execute("select count(*) from raw.keywords where snapshot_date = ?", [days[1]]).fetchone() \
            == (ROWS,)
