"""Running the pipeline unattended, in plain Python (no Dagster): alert digests sent through Apprise
with a ledger so each alert is sent once (:mod:`rank_pipeline.ops.alerts`). The Dagster wiring (sensors,
freshness policies) is in :mod:`rank_pipeline.defs.sensors` and :mod:`rank_pipeline.defs.freshness`."""

from rank_pipeline.ops.alerts import (
    ALERT_KINDS,
    TOP_ITEMS,
    Alert,
    AlertLedger,
    SendReport,
    compose,
    ranking_alerts,
    redact,
    send_digest,
)

__all__ = ["ALERT_KINDS", "TOP_ITEMS", "Alert", "AlertLedger", "SendReport", "compose", "ranking_alerts",
           "redact", "send_digest"]
