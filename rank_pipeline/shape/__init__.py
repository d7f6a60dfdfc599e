"""The vendor's shape: the contract of every JSON path staging reads, a profile of what the vendor sends, and
the blocking check between them (:func:`load_contract`, :func:`profile_day`, :func:`check_snapshots`,
:func:`record_unread`; docs/concepts/shape-check.md).
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
