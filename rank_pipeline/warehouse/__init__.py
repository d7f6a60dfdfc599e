"""The DuckDB warehouse: the raw layer loaded from snapshots, atomic publishing, and the data folder's
locks and leftovers."""
