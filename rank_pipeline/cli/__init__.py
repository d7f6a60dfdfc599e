"""The ``rank-pipeline`` command line."""
