"""The ``rank-pipeline`` command line (entry point :func:`rank_pipeline.cli.main.main`).

Modules, each importing only those listed before it:

- ``errors``: :class:`UsageError` (exit 2) and :class:`RunFailed` (exit 1);
- ``args``: argument types and checks (dates, the daily partitions, whole numbers, the version);
- ``output``: progress, tables, and the invocation's log file (:data:`output.SESSION`);
- ``runs``: in-process runs of the daily Dagster job, their totals, failure reasons and alert digests;
- ``pipeline``, ``models``, ``keywords``: the commands, one module per group;
- ``parser``: the argument parser, mapping each command to its function;
- ``main``: :func:`main` and the top-level error handling (one line on stderr, the exit status).
"""
