"""Running the pipeline unattended: plain Python helpers for services, alerts and run history (no Dagster)."""
