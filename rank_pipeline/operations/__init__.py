"""Running the pipeline unattended, in plain Python (the Dagster wiring is in :mod:`rank_pipeline.defs`):
``alerts`` (digests, each alert once), ``run_history`` (``ops.run_history``), ``data_folder`` (its faults in
one line), ``services`` (Dagster's services stopped by SIGTERM).
"""
