"""Load the raw tables from the committed snapshots on any engine, then count the records repeated within a
day (:func:`repeated_records_sql`): the step behind the Dagster asset ``load_raw_tables``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from rank_pipeline.api.endpoints import CATALOG
from rank_pipeline.snapshots.schema import ENDPOINTS
from rank_pipeline.transform.primitives import ModelEngine
from rank_pipeline.warehouse.engines import load_partitions, reload_raw

__all__ = ["PER_ACCOUNT_ENDPOINTS", "RawLoad", "load_raw", "repeated_records_sql"]

PER_ACCOUNT_ENDPOINTS = frozenset(r.name for r in CATALOG if not r.account_scoped)
"""Catalogue rows (declared ``account_scoped=False``), read once per account that points to them: the
same record may appear once per account (docs/concepts/architecture.md)."""


def repeated_records_sql(endpoint: str, first: date, last: date) -> str:
    """The DuckDB SELECT of the records of ``raw.<endpoint>`` appearing more than once on one day of
    ``first .. last`` (one row per repeated record: ``snapshot_date``, its key, ``n_rows``, ``accounts``);
    Spark runs it transpiled (:func:`rank_pipeline.transform.spark_dialect.to_spark_sql`)."""
    key = "account, id, parent_id" if endpoint in PER_ACCOUNT_ENDPOINTS else "id, parent_id"
    return (f"select snapshot_date, {key}, count(*) as n_rows, list_sort(list(distinct account)) as accounts "
            f"from raw.{endpoint} where snapshot_date between date '{first.isoformat()}' and "
            f"date '{last.isoformat()}' group by snapshot_date, {key} having count(*) > 1 order by all")


@dataclass
class RawLoad:
    """What :func:`load_raw` did.

    Attributes:
        days: ``{day: {endpoint: rows}}`` of the days loaded within the range, ascending.
        repeated: ``{endpoint: (records repeated, up to 5 of them as JSON-safe rows)}`` over the range.
    """

    days: dict[date, dict[str, int]]
    repeated: dict[str, tuple[int, list[dict]]] = field(default_factory=dict)

    def rows(self, endpoint: str) -> int:
        """Rows of ``endpoint`` loaded over the range's days."""
        return sum(counts.get(endpoint, 0) for counts in self.days.values())


def load_raw(engine: ModelEngine, snapshots_uri: Path | str, first: date, last: date, *,
             full_refresh: bool = False, replace: bool = False, sample_size: int = 5) -> RawLoad:
    """Load the raw days ``first .. last`` from the snapshots under ``snapshots_uri``, then count the
    repeated records of those days.

    Args:
        engine: the model engine (:func:`rank_pipeline.warehouse.engines.open_engine`).
        first, last: the run's days; each must have committed snapshots (unless ``full_refresh`` or
            ``replace``).
        full_refresh: reload every raw table from all committed snapshots (the figures still cover
            ``first .. last`` only).
        replace: the days ``first .. last`` hold exactly what their committed snapshots hold (a day without
            one loses its raw rows; a rebuild of a range).

    Raises:
        rank_pipeline.warehouse.errors.SnapshotMissingError, LoadError: a day is not committed or
            its snapshot is damaged (nothing loaded).
    """
    if full_refresh:
        loaded = {d: c for d, c in reload_raw(engine, snapshots_uri).items() if first <= d <= last}
    elif replace:
        loaded = reload_raw(engine, snapshots_uri, first, last)
    else:
        loaded = load_partitions(engine, snapshots_uri, first, last)
    repeated = dict(zip(ENDPOINTS, engine.failing_rows([repeated_records_sql(r, first, last) for r in ENDPOINTS],
                                                       sample_size), strict=True))
    return RawLoad(days=loaded, repeated=repeated)
