"""The nodes of a dbt-like SQL project: models, seeds, the tables the pipeline writes, and their tests.

Frozen dataclasses only, built by :mod:`rank_pipeline.transform.loading` from the project folder (its layout
and ``.yml`` format: :mod:`rank_pipeline.transform.project`); every other module of the runner reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rank_pipeline.transform.dependencies import SEED_SCHEMA

__all__ = [
    "ColumnSpec",
    "IncrementalConfig",
    "Model",
    "Seed",
    "PipelineTable",
    "TestSpec",
    "UnitRows",
    "UnitTest",
]


@dataclass(frozen=True)
class TestSpec:
    """One data test of a model or seed, one Dagster asset check named :attr:`name` (letters, digits, ``_``;
    unique in its model): ``kind`` (``unique``, ``not_null``, ``accepted_values``, ``relationships``,
    ``expression``, ``unique_combination``), ``column`` (None: model-level), ``params`` (``{"values"}``,
    ``{"to", "field"}``, ``{"expression"}``, ``{"columns"}``), ``blocking``, ``depends_on`` (besides its model).
    """

    __test__ = False  # not a pytest test class

    name: str
    kind: str
    column: str | None
    params: Mapping[str, Any]
    blocking: bool = False
    depends_on: frozenset[str] = frozenset()

    def describe(self) -> str:
        """A short human description, e.g. ``accepted_values: google, bing``."""
        if self.kind == "accepted_values":
            return "accepted_values: " + ", ".join(str(v) for v in self.params["values"])
        if self.kind == "relationships":
            return f"relationships: {self.params['to']}.{self.params['field']}"
        if self.kind == "expression":
            return f"expression: {self.params['expression']}"
        if self.kind == "unique_combination":
            return "unique_combination: " + ", ".join(self.params["columns"])
        return self.kind


@dataclass(frozen=True)
class ColumnSpec:
    """A documented column: name, description, optional data type, and its tests."""

    name: str
    description: str = ""
    data_type: str | None = None
    tests: tuple[TestSpec, ...] = ()


@dataclass(frozen=True)
class IncrementalConfig:
    """How an incremental model is built by days (docs/concepts/any-order.md): ``date_column`` (default
    ``snapshot_date``), ``lookback_days`` H (rows of day d read upstream rows of ``d - H .. d`` only),
    ``strategy`` (``delete+insert``, or ``fold``: a dimension rebuilt from its rows and the upstream rows after
    its ``watermark``, the output date column whose maximum is the last day folded).
    """

    date_column: str = "snapshot_date"
    lookback_days: int = 0
    strategy: str = "delete+insert"
    watermark: str | None = None


@dataclass(frozen=True)
class UnitRows:
    """Rows of a unit test's input (``relation``, e.g. ``staging.stg_usage``) or expectation (``""``):
    ``columns`` in first-seen order; ``rows`` as YAML gave them or, from CSV, text (empty: null); omitted: null.
    """

    relation: str
    columns: tuple[str, ...]
    rows: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class UnitTest:
    """One SQL unit test of a model (``unit_tests:`` in its ``.yml``): given rows for some of the
    relations the model reads (the others are empty), the rows the model must return (compared as a
    multiset on the expected columns; see :mod:`rank_pipeline.transform.unit_tests`)."""

    __test__ = False  # not a pytest test class

    name: str
    model: str
    description: str
    given: tuple[UnitRows, ...]
    expect: UnitRows


@dataclass(frozen=True)
class Model:
    """One SQL model ``<schema>.<name>`` (``staging`` or ``marts``; ``name`` unique) from ``path`` (``sql``: one
    SELECT): ``description``, ``materialized`` (``view``, ``table``, ``incremental`` with ``incremental`` set),
    ``columns`` and ``tests`` as in its ``.yml`` (``yml_path``), ``depends_on`` (qualified names read),
    ``unique_key`` (the grain), ``reads_itself`` (its own relation read: earlier rows, or empty in a full build).
    """

    name: str
    schema: str
    path: Path
    sql: str
    description: str
    materialized: str
    columns: tuple[ColumnSpec, ...]
    tests: tuple[TestSpec, ...]
    depends_on: frozenset[str]
    unique_key: tuple[str, ...] = ()
    incremental: IncrementalConfig | None = None
    yml_path: Path | None = None
    reads_itself: bool = False
    unit_tests: tuple[UnitTest, ...] = ()

    @property
    def qualified_name(self) -> str:
        """``<schema>.<name>``, the relation it builds."""
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True)
class Seed:
    """A CSV reference table ``seeds.<name>``: ``column_types`` (DuckDB types given; others detected),
    ``version`` (the ``.yml``'s, or None), ``checksum`` (sha256 of the CSV bytes).
    """

    name: str
    path: Path
    description: str = ""
    version: str | None = None
    column_types: Mapping[str, str] = field(default_factory=dict)
    columns: tuple[ColumnSpec, ...] = ()
    tests: tuple[TestSpec, ...] = ()
    checksum: str = ""
    yml_path: Path | None = None
    schema: str = SEED_SCHEMA
    materialized: str = "seed"
    depends_on: frozenset[str] = frozenset()

    @property
    def qualified_name(self) -> str:
        """``seeds.<name>``."""
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True)
class PipelineTable:
    """A table the pipeline's code writes (``pipeline_tables:``, e.g. ``ops.run_history``): ``columns`` with their
    DuckDB ``data_type`` in ``.yml`` order; ``tests`` as for models, on the whole table.
    """

    name: str
    schema: str
    description: str
    columns: tuple[ColumnSpec, ...]
    tests: tuple[TestSpec, ...]
    yml_path: Path | None = None
    materialized: str = "source"
    depends_on: frozenset[str] = frozenset()

    @property
    def qualified_name(self) -> str:
        """``<schema>.<name>``."""
        return f"{self.schema}.{self.name}"
