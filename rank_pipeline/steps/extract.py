"""Extract days into the snapshots, under the data folder's writer lock (or a shard's): the step behind
``rank-pipeline extract`` and ``extract_snapshots``; :func:`check_source` refuses a bad source first.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta

from rank_pipeline.extract.day import ExtractionProgress, ExtractionReport, run_extraction
from rank_pipeline.extract.source import Source
from rank_pipeline.folder_lock import hold_shard_writer, hold_writer
from rank_pipeline.settings import ConfigurationError, DataPaths

__all__ = ["check_source", "extract_days"]


def check_source(source: Source, paths: DataPaths) -> None:
    """Refuse a source that cannot work before a run starts (:meth:`Source.validate`: base URL, host, keys, the
    folder's recorded source), writing and sending nothing. Raises ConfigurationError: one line naming what to set.
    """
    source.validate(paths.data_dir)


def _days(source: Source, first: date, last: date) -> list[date]:
    if last < first:
        raise ConfigurationError(f"cannot extract {first} .. {last}: the first day is after the last; swap them")
    if first != last and not source.uses_sandbox:
        raise ConfigurationError(
            f"cannot extract {first} .. {last}: the vendor API only tells the present, one day per run. "
            "To rebuild past days from their snapshots, backfill the job rebuild_from_snapshots "
            "(or run `rank-pipeline rebuild --from D --to D`)")
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def extract_days(source: Source, paths: DataPaths, first: date, last: date | None = None, *,
                 holder: str = "an extraction", log: Callable[[str], object] | None = None,
                 detail: Callable[[str], object] | None = None,
                 on_progress: Callable[[ExtractionProgress], None] | None = None) -> list[ExtractionReport]:
    """Extract ``first .. last`` (default the one day ``first``, UTC) from ``source`` into the snapshots of
    ``paths``; returns one :class:`~rank_pipeline.extract.day.ExtractionReport` per day, in order.

    ``holder``: shown to a run waiting for the writer lock; ``log``: where waits and removals are told;
    ``detail``: a few lines per day (None: silent); ``on_progress``: the day's running counters.

    Raises:
        ConfigurationError: a range of days from the vendor API, or a source refused when opened.
        rank_pipeline.folder_lock.LockTimeout: another run holds the data folder (or the shard).
        rank_pipeline.api.RankTrackerError, rank_pipeline.extract.day.ExtractionError: the day failed;
            nothing committed, its finished lists stay checkpointed.
    """
    say = detail or (lambda message: None)
    days = _days(source, first, last or first)
    reports = []
    lock = (hold_writer(paths.data_dir, holder=holder, log=log) if source.shard is None else
            hold_shard_writer(paths.data_dir, source.shard, holder=holder, log=log))
    with lock:
        for day in days:
            opened = source.open(day, paths.data_dir, snapshots_uri=paths.snapshot_store_uri)
            say(f"extracting {day} from {source.describe()} for {len(opened.accounts)} account(s)")
            report = run_extraction(opened.base_url, opened.accounts, day, paths.snapshot_store_uri,
                                    config=source.client_config, on_progress=on_progress,
                                    source_id=source.checkpoint_id, shard=source.shard)
            if report.resumed_lists:
                say(f"resumed {report.resumed_lists} list(s) from the checkpoints of an earlier run of {day}")
            requests = sum(a.requests for a in report.accounts.values())
            say(f"extracted {day} in {report.elapsed_s:.1f} s: {requests} requests, complete={report.complete}; "
                f"per account: { {n: a.model_dump() for n, a in report.accounts.items()} }")
            reports.append(report)
    return reports
