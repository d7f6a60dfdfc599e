"""Daily partitions keyed by snapshot date (UTC), today included (spec: the API tells only the present)."""

import dagster as dg

from rank_pipeline.settings import PARTITIONS_START

daily_partitions = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START, timezone="UTC", end_offset=1)
"""One partition per UTC day from :data:`PARTITIONS_START`; ``end_offset=1`` includes today."""
