"""Running the pipeline unattended: plain Python, no Dagster import (the Dagster wiring, sensors and
freshness policies, is in :mod:`rank_pipeline.defs.sensors` and :mod:`rank_pipeline.defs.freshness`).

- :mod:`rank_pipeline.operations.alerts`: alert digests sent through Apprise, with a ledger so each alert is sent once;
- :mod:`rank_pipeline.operations.run_history`: the warehouse's record of its own runs (``ops.run_history``);
- :mod:`rank_pipeline.operations.data_folder`: a faulty data folder (read-only, not writable, full) told in one line;
- :mod:`rank_pipeline.operations.services`: ``make dev`` and service managers: Dagster's services started so SIGTERM stops them.
"""
