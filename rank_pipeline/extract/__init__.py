"""Extraction: the source of a run (the vendor API or the embedded sandbox), one day's extraction of every
endpoint into snapshots, and resume checkpoints for a retried day."""
