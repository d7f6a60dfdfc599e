"""Tracked keywords as code: a reviewed YAML file, planned against the account's catalogues and quota, applied
all-or-nothing per create call (spec "Keyword create: body", "Limits"). No Dagster here.

``load_keywords_file(path) -> LoadedFile``, ``json_schema()``, ``await plan_online(...) -> Plan``,
``plan_offline(loaded, snapshots_uri) -> Plan``, ``await apply_plan(plan, clients) -> ApplyResult``,
``planned_rows(plan)``. Design: docs/concepts/keywords.md.
"""

from rank_pipeline.keywords.apply import ApplyFailed, ApplyResult, apply_plan, group_calls, map_errors
from rank_pipeline.keywords.plan import Plan, plan_offline, plan_online
from rank_pipeline.keywords.schema import KeywordsFileError, LoadedFile, json_schema, load_keywords_file
from rank_pipeline.keywords.warehouse import KEYWORDS_FILE_TABLE, planned_rows, write_planned_rows

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
    "write_planned_rows",
]
