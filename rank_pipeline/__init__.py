"""rank-pipeline: rank-tracking API -> Parquet snapshots -> DuckDB warehouse, orchestrated by Dagster."""
