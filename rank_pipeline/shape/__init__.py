"""The vendor's shape: the declared contract of every JSON path staging reads, a profile of what the vendor
really sends, and the blocking check between the two (absent, another type, newly empty, drift).

Public: :func:`load_contract`, :func:`load_thresholds`, :func:`profile_day`, :func:`profile_records`,
:func:`check_snapshots` (a :class:`ShapeResult` per endpoint), :func:`record_unread`,
:func:`~rank_pipeline.shape.sql_paths.paths_read`.
Design: docs/concepts/shape-check.md.
"""

from rank_pipeline.shape.check import PathFinding, ShapeResult, check_snapshots
from rank_pipeline.shape.profile import EndpointProfile, PathStats, profile_day, profile_records
from rank_pipeline.shape.registry import record_unread
from rank_pipeline.shape.thresholds import ThresholdTable, load_contract, load_thresholds
from rank_pipeline.transform.contract import Contract, ContractError, ContractField

__all__ = [
    "Contract",
    "ContractError",
    "ContractField",
    "EndpointProfile",
    "PathFinding",
    "PathStats",
    "ShapeResult",
    "ThresholdTable",
    "check_snapshots",
    "load_contract",
    "load_thresholds",
    "profile_day",
    "profile_records",
    "record_unread",
]
