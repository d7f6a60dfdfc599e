"""Snapshots, the system of record: Parquet files per day and endpoint, their manifests, and where they live.

Modules: ``schema`` (columns, layout), ``writer`` (:class:`~rank_pipeline.snapshots.writer.SnapshotWriter`),
``reader`` (committed days, manifests, rows), ``manifest`` (typed records), ``storage`` (folder or object store).
"""
