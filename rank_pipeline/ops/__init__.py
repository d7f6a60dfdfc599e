"""Running the pipeline unattended: plain Python, no Dagster import (the Dagster wiring is in ``rank_pipeline/defs``).

- :mod:`rank_pipeline.ops.history`: the warehouse's record of its own runs (``ops.run_history``);
- :mod:`rank_pipeline.ops.data_folder`: a faulty data folder (read-only, not writable, full) told in one line.
"""
