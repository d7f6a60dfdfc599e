"""Snapshots, the system of record: Parquet files per day and endpoint, their manifests, and where they
live (a local folder or an object store). Written by :mod:`rank_pipeline.extract`, read by
:mod:`rank_pipeline.warehouse`."""
