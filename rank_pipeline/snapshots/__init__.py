"""Snapshots, the system of record: Parquet files per day and endpoint, their manifests, and where they
live (a local folder or an object store). Written by :mod:`rank_pipeline.extract`, read by
:mod:`rank_pipeline.warehouse`.

- :mod:`~rank_pipeline.snapshots.schema`: the columns of a snapshot file and the folder layout;
- :mod:`~rank_pipeline.snapshots.writer`: :class:`~rank_pipeline.snapshots.writer.SnapshotWriter`, streaming, committed whole;
- :mod:`~rank_pipeline.snapshots.reader`: committed days, their manifests, files and rows;
- :mod:`~rank_pipeline.snapshots.manifest`: the manifest and the extraction report's parts, typed;
- :mod:`~rank_pipeline.snapshots.storage`: a local folder or an object store.
"""
