"""Tracked keywords as code (spec "Keyword create: body", "Limits"), no Dagster: :func:`load_keywords_file`,
:func:`json_schema`, :func:`plan_online`, :func:`plan_offline`, :func:`apply_plan`, :func:`planned_rows`
(docs/concepts/keywords.md).
"""

from rank_pipeline.keywords.apply import ApplyFailed, ApplyResult, apply_plan, group_calls, map_errors
from rank_pipeline.keywords.plan import Plan, plan_offline, plan_online
from rank_pipeline.keywords.schema import KeywordsFileError, LoadedFile, json_schema, load_keywords_file
from rank_pipeline.keywords.warehouse import KEYWORDS_FILE_TABLE, planned_rows

__all__ = [
    "KEYWORDS_FILE_TABLE",
    "ApplyFailed",
    "ApplyResult",
    "KeywordsFileError",
    "LoadedFile",
    "Plan",
    "apply_plan",
    "group_calls",
    "json_schema",
    "load_keywords_file",
    "map_errors",
    "plan_offline",
    "plan_online",
    "planned_rows",
]
