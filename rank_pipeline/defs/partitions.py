"""Daily partitions keyed by snapshot date (UTC), today included (spec: the API tells only the present)."""

import warnings

import dagster as dg

from rank_pipeline.settings import PARTITIONS_START

daily_partitions = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START, timezone="UTC", end_offset=1)
"""One partition per UTC day from :data:`PARTITIONS_START`; ``end_offset=1`` includes today."""

# Every partitioned asset takes BackfillPolicy.single_run() (a backfill of many days is one run); Dagster
# marks that parameter beta and warns once per asset. We use it deliberately: silence that one warning.
warnings.filterwarnings("ignore", message="Parameter `backfill_policy` of function", category=dg.BetaWarning)
