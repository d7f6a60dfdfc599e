"""The vendor's shape: the declared contract of every JSON path staging reads, a profile of what the vendor
really sends, and the blocking check between the two (absent, another type, newly empty, drift).

Public surface: :func:`load_contract`, :func:`load_thresholds`, :class:`Contract`, :class:`ContractError`
(:mod:`~rank_pipeline.shape.contract`); :func:`profile_day`, :func:`profile_records`,
:class:`EndpointProfile` (:mod:`~rank_pipeline.shape.profile`); :func:`check_snapshots`,
:class:`ShapeResult` (:mod:`~rank_pipeline.shape.check`); :func:`record_unread`
(:mod:`~rank_pipeline.shape.registry`); :func:`paths_read` (:mod:`~rank_pipeline.shape.sql_paths`).
"""

from rank_pipeline.shape.check import PathFinding, ShapeResult, check_snapshots
from rank_pipeline.shape.contract import (
    Contract,
    ContractError,
    ContractField,
    ThresholdTable,
    load_contract,
    load_thresholds,
)
from rank_pipeline.shape.profile import EndpointProfile, PathStats, profile_day, profile_records
from rank_pipeline.shape.registry import record_unread

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
