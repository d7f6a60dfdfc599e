"""The command line (``rank-pipeline``), one module per job, each importing only those listed before it:
``errors`` (:class:`~rank_pipeline.cli.errors.UsageError`, exit 2; :class:`~rank_pipeline.cli.errors.RunFailed`,
exit 1), ``args``, ``output`` (progress, tables, the log file), ``runs`` (in-process Dagster runs), the
commands (``pipeline``, ``models``, ``keywords``), ``parser`` and ``main`` (:func:`~rank_pipeline.cli.main.main`).
"""
