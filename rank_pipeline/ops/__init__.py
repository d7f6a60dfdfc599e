"""Running the pipeline unattended: plain Python, no Dagster import (the Dagster wiring is in ``defs``)."""
