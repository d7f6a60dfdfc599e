"""Fault injection for the sandbox, all off by default and seeded: latency, 5xx, dropped connections, hung
requests, invalid JSON, shifting records, key revocation, an outside consumer of the budget; replaceable at
runtime (``PUT /_sandbox/faults``). Each switch: docs/concepts/sandbox.md, "Faults".
"""

from __future__ import annotations

import math
import random
import threading
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from rank_pipeline.errors import RankPipelineError

__all__ = ["DroppedConnection", "FaultDecision", "FaultInjector", "Faults"]

_Z99 = 2.3263478740408408  # standard normal 99th percentile


@dataclass(frozen=True)
class Faults:
    """Fault switches (docs/concepts/sandbox.md, "Faults"). Rates are probabilities in [0, 1]; times in ms
    unless the name says ``_s``."""

    seed: int = 0
    latency_median_ms: float = 0.0
    latency_p99_ms: float = 0.0
    latency_per_1000_records_ms: float = 0.0
    error_rate: float = 0.0
    drop_rate: float = 0.0
    hang_rate: float = 0.0
    hang_s: float = 30.0
    invalid_json_rate: float = 0.0
    shift_rate: float = 0.0
    shift_inserts: int = 1
    shift_deletes: int = 1
    outside_consumer: int = 0
    revoke_after: int = 0
    revoke_position: int = 2

    def __post_init__(self):
        for name in ("error_rate", "drop_rate", "hang_rate", "invalid_json_rate", "shift_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"Faults.{name} must be a probability in [0, 1], got {value!r}")
        for name in ("latency_median_ms", "latency_p99_ms", "latency_per_1000_records_ms", "hang_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"Faults.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.revoke_position < 1:
            raise ValueError(f"Faults.revoke_position must be >= 1, got {self.revoke_position!r}")
        for name in ("shift_inserts", "shift_deletes", "outside_consumer", "revoke_after"):
            if getattr(self, name) < 0:
                raise ValueError(f"Faults.{name} must be >= 0, got {getattr(self, name)!r}")

    def to_dict(self) -> dict:
        """All switches as a JSON-ready dict."""
        return asdict(self)

    def updated(self, changes: dict) -> Faults:
        """A copy with ``changes`` applied. ValueError names unknown fields or bad values."""
        known = {f.name: f.type for f in fields(self)}
        unknown = sorted(set(changes) - set(known))
        if unknown:
            raise ValueError(f"unknown fault switch(es) {unknown}; known: {sorted(known)}")
        coerced: dict[str, Any] = {}
        for name, value in changes.items():
            current = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"Faults.{name} must be a number, got {value!r}")
            coerced[name] = int(value) if isinstance(current, int) else float(value)
        return replace(self, **coerced)

    @property
    def any_on(self) -> bool:
        """True when at least one switch is on."""
        return any(
            (self.latency_median_ms, self.latency_per_1000_records_ms, self.error_rate, self.drop_rate,
             self.hang_rate, self.invalid_json_rate, self.shift_rate, self.outside_consumer, self.revoke_after)
        )


@dataclass(frozen=True)
class FaultDecision:
    """What happens to one request: ``latency_s`` delay; ``action`` one of None, ``"error"``,
    ``"drop"``, ``"hang"``, ``"invalid_json"``; ``error_status`` for ``"error"``; ``shift`` whether
    to write to the keyword list first, with ``random.Random(shift_seed)`` choosing what."""

    latency_s: float = 0.0
    action: str | None = None
    error_status: int = 500
    shift: bool = False
    shift_seed: int = 0


class DroppedConnection(RankPipelineError):
    """Raised after a partial response to make the server drop the connection (fault ``drop_rate``)."""


class FaultInjector:
    """Draws a :class:`FaultDecision` per request from ``random.Random(faults.seed)``. Thread-safe."""

    def __init__(self, faults: Faults | None = None):
        self._lock = threading.Lock()
        self.set(faults if faults is not None else Faults())

    @property
    def faults(self) -> Faults:
        """The current switches."""
        return self._faults

    def set(self, faults: Faults) -> None:
        """Replace the switches and restart the RNG from ``faults.seed``."""
        with self._lock:
            self._faults = faults
            self.rng = random.Random(faults.seed)

    def decide(self, *, records: int = 1, keyword_list: bool = False) -> FaultDecision:
        """The faults for one request; ``records`` is the page size asked for (latency scaling)."""
        f = self._faults
        with self._lock:
            z = self.rng.gauss(0.0, 1.0)
            u_error, u_status, u_drop, u_hang, u_json, u_shift = (self.rng.random() for _ in range(6))
            shift_seed = self.rng.getrandbits(32)
        latency_ms = 0.0
        if f.latency_median_ms > 0:
            sigma = math.log(f.latency_p99_ms / f.latency_median_ms) / _Z99 if f.latency_p99_ms > f.latency_median_ms else 0.0
            latency_ms = f.latency_median_ms * math.exp(sigma * z)
        latency_ms += f.latency_per_1000_records_ms * records / 1000.0
        action, status = None, 500
        if u_drop < f.drop_rate:
            action = "drop"
        elif u_hang < f.hang_rate:
            action = "hang"
        elif u_error < f.error_rate:
            action, status = "error", (500, 502, 503)[int(u_status * 3)]
        elif u_json < f.invalid_json_rate:
            action = "invalid_json"
        shift = keyword_list and u_shift < f.shift_rate
        return FaultDecision(latency_ms / 1000.0, action, status, shift, shift_seed)
