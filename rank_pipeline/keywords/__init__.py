"""Tracked keywords as code: a reviewed YAML file of keywords, planned against the account's catalogues
and quota, applied all-or-nothing per create call (spec, "Keyword create: body", "Limits").

Public surface::

    load_keywords_file(path) -> LoadedFile          # schema + line numbers; KeywordsFileError
    json_schema() -> dict                           # examples/keywords.schema.json
    await plan_online(loaded, clients, source) -> Plan
    plan_offline(loaded, snapshots_uri) -> Plan     # the latest snapshot, no request
    await apply_plan(plan, clients) -> ApplyResult  # ApplyFailed
    planned_rows(plan) -> list[dict]                # the file's rows for raw.keywords_file

No Dagster here: the command line (``rank-pipeline keywords plan|apply``) and the Dagster asset check
(``rank_pipeline.defs.keywords_assets``) call these.
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
