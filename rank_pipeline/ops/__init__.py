"""Unattended operation: plain Python (no Dagster import) that the Dagster wiring in ``rank_pipeline/defs``
calls. :mod:`rank_pipeline.ops.history`: the warehouse's record of its own runs (``ops.run_history``).
"""
