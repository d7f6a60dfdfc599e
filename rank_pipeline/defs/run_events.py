"""A finished or running run's events, read for what a reader needs: :func:`run_events`."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

__all__ = ["TIME_MARGIN_S", "run_events"]

TIME_MARGIN_S = 60.0
"""Seconds either side of a run's start and end within which its materializations are looked for (they are
then kept by run id): room for the clocks of other processes and hosts than the one recording the run."""


def run_events(instance: dg.DagsterInstance, record: dg.RunRecord, kinds: set[dg.DagsterEventType],
               materialized: Iterable[dg.AssetKey]) -> list[dg.EventLogEntry]:
    """The events of ``kinds`` of the run ``record``, its materializations only those of the assets
    ``materialized``: read from the index asset by asset, within the run's start and end give or take
    :data:`TIME_MARGIN_S`, and kept by run id. A model's materialization carries its column schema and lineage;
    decoding every one of a run's to read a few was about 7 % of a run's CPU (docs/concepts/dagster.md, "Run
    history"). The run's own log gives the other kinds (``all_logs``). Raises what the instance's storage raises.
    """
    run_id = record.dagster_run.run_id
    materialization = dg.DagsterEventType.ASSET_MATERIALIZATION
    events = list(instance.all_logs(run_id, of_type=kinds - {materialization}))
    if materialization not in kinds or record.start_time is None:  # a run that never started materialized nothing
        return events
    after = record.start_time - TIME_MARGIN_S
    before = record.end_time + TIME_MARGIN_S if record.end_time is not None else None
    for key in materialized:
        cursor = None
        while True:
            found = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=key, after_timestamp=after, before_timestamp=before),
                limit=1000, cursor=cursor, ascending=True)
            events += [r.event_log_entry for r in found.records if r.run_id == run_id]
            if not found.has_more:
                break
            cursor = found.cursor
    return events
