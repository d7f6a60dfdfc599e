"""The thresholds of the shape check (``<models>/seeds/shape_thresholds.csv``) and the contract for the endpoints
extracted (parsed by :mod:`rank_pipeline.transform.contract`); errors are one :class:`ContractError` line.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rank_pipeline.snapshots.schema import ENDPOINTS
from rank_pipeline.transform.contract import Contract, ContractError
from rank_pipeline.transform.contract import load_contract as _load_contract

__all__ = ["THRESHOLDS_FILE", "ThresholdTable", "Thresholds", "load_contract", "load_thresholds"]

THRESHOLDS_FILE = Path("seeds") / "shape_thresholds.csv"
"""The thresholds' seed in the models folder."""


def load_contract(models_dir: Path | str) -> Contract:
    """The contract of ``models_dir`` (:func:`rank_pipeline.transform.contract.load_contract`), naming only the
    endpoints the pipeline extracts. Raises ContractError: it cannot be read (one line).
    """
    return _load_contract(models_dir, tuple(ENDPOINTS))


@dataclass(frozen=True)
class Thresholds:
    """One row of the thresholds seed (shares 0..1 of an endpoint's records of one day)."""

    max_absent_share: float = 0.0
    max_wrong_type_share: float = 0.0
    max_null_share: float = 0.999
    max_present_drop: float = 0.5
    max_null_share_rise: float = 0.5
    min_records: int = 20


class ThresholdTable:
    """The thresholds seed: :meth:`get` returns the most specific row for an endpoint and path."""

    def __init__(self, rows: dict[tuple[str, str], Thresholds], source: Path | None = None):
        self.rows = rows
        self.source = source

    def get(self, endpoint: str, path: str) -> Thresholds:
        for key in ((endpoint, path), (endpoint, "*"), ("*", path), ("*", "*")):
            if key in self.rows:
                return self.rows[key]
        return Thresholds()


def load_thresholds(models_dir: Path | str) -> ThresholdTable:
    """The thresholds seed of ``models_dir`` (:data:`THRESHOLDS_FILE`), or :class:`Thresholds`' defaults without it.
    Raises ContractError: a row with a missing or non-numeric value, or a share outside 0..1.
    """
    path = Path(models_dir) / THRESHOLDS_FILE
    if not path.exists():
        return ThresholdTable({}, None)
    rows: dict[tuple[str, str], Thresholds] = {}
    with path.open(newline="") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            try:
                values: dict[str, Any] = {name: (int if name == "min_records" else float)(row[name])
                          for name in Thresholds.__dataclass_fields__}
            except (KeyError, TypeError, ValueError):
                raise ContractError(f"{path}:{line}: every column of {', '.join(Thresholds.__dataclass_fields__)} "
                                    "needs a number") from None
            if any(not 0 <= v <= 1 for k, v in values.items() if k != "min_records"):
                raise ContractError(f"{path}:{line}: shares are between 0 and 1")
            rows[(row.get("endpoint") or "*", row.get("path") or "*")] = Thresholds(**values)
    return ThresholdTable(rows, path)
