"""The keywords file in the warehouse: one row per wanted combination in ``raw.keywords_file``
(columns :data:`rank_pipeline.warehouse.raw_load.KEYWORDS_FILE_COLUMNS`, written by the engine's ``replace_raw_rows``), planned
offline against the day's snapshot; ``marts.keywords_file_vs_tracked`` compares them with what is tracked.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rank_pipeline.keywords.plan import Plan
from rank_pipeline.warehouse.raw_load import (
    KEYWORDS_FILE_TABLE,
)

__all__ = ["KEYWORDS_FILE_TABLE", "planned_rows"]


def planned_rows(plan: Plan, planned_at: datetime | None = None) -> list[dict]:
    """One dict per distinct wanted combination of each domain of the plan (file order), keyed by
    :data:`~rank_pipeline.warehouse.raw_load.KEYWORDS_FILE_COLUMNS`; ``location_code`` is None when the
    location could not be resolved, ``domain_id`` None for a domain no account holds."""
    planned_at = planned_at or datetime.now(UTC)
    rows: list[dict] = []
    for d in plan.domains:
        seen: set = set()
        for w in d.wanted:
            if w.key in seen:
                continue
            seen.add(w.key)
            rows.append({
                "account": d.account, "domain_id": d.domain_id, "domain": d.name, "keyword": w.word,
                "search_engine": w.engine, "device": w.device, "location": w.location,
                "location_code": w.location_code, "language_code": w.language, "frequency": w.frequency,
                "tags": list(w.tags), "file": str(plan.loaded.path), "file_line": plan.loaded.line(w.loc("word")),
                "planned_at": planned_at,
            })
    return rows

