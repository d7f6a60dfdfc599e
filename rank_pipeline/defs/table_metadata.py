"""Dagster's standard table metadata for the raw, seed and model assets: ``dagster/table_name``,
``dagster/column_schema``, ``dagster/row_count``, ``dagster/column_lineage``, ``dagster/code_references``;
asset kinds name the engine in use (:func:`engine_in_use`). Table: docs/concepts/dagster.md, "Table metadata".
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

import dagster as dg

from rank_pipeline.settings import EngineSettings
from rank_pipeline.transform.lineage import ProjectLineage
from rank_pipeline.transform.nodes import ColumnSpec, Model, Seed, TestSpec

__all__ = ["TABLE_NAME", "column_lineage", "column_schema", "code_reference", "engine_in_use",
           "relation_key", "table_name"]

TABLE_NAME = "dagster/table_name"
COLUMN_SCHEMA = "dagster/column_schema"
ROW_COUNT = "dagster/row_count"
COLUMN_LINEAGE = "dagster/column_lineage"
CODE_REFERENCES = "dagster/code_references"


def engine_in_use() -> str:
    """``duckdb`` or ``spark``: the engine ``RANK_PIPELINE_ENGINE`` selects (an invalid value reads as
    ``duckdb`` here; the ``model_engine`` resource refuses it with its one-line message)."""
    try:
        return EngineSettings.from_env().engine
    except ValueError:
        return "duckdb"


def relation_key(qualified: str) -> dg.AssetKey:
    """``"staging.stg_keywords"`` -> ``AssetKey(["staging", "stg_keywords"])`` (raw and seeds alike)."""
    schema, name = qualified.split(".", 1)
    return dg.AssetKey([schema, name])


def table_name(qualified: str, catalog: str) -> str:
    """``warehouse.marts.agg_domain_daily`` (DuckDB: the catalog is the published file's name without
    ``.duckdb``) or ``spark_catalog.marts.agg_domain_daily`` (Spark): ``<catalog>.<schema>.<name>``, the
    catalog from the open engine (``ModelEngine.catalog``) or, before one is open, from
    :data:`rank_pipeline.settings.engine.ENGINES`."""
    return f"{catalog}.{qualified}"


def _constraints(tests: Iterable[TestSpec]) -> dg.TableColumnConstraints | None:
    tests = list(tests)
    if not tests:
        return None
    kinds = {t.kind for t in tests}
    other = [t.describe() for t in tests if t.kind not in ("not_null", "unique")]
    return dg.TableColumnConstraints(nullable="not_null" not in kinds, unique="unique" in kinds, other=other)


def column_schema(relation: Model | Seed | None, types: Iterable[tuple[str, str]] | None = None,
                  descriptions: Mapping[str, str] | None = None) -> dg.TableSchema:
    """The table's :class:`dagster.TableSchema`: the columns of ``types`` (``(name, type)`` in table order)
    or, without them, the ``.yml``'s documented columns; descriptions and constraints from the ``.yml``
    (``descriptions`` for a raw table, which has none)."""
    documented: dict[str, ColumnSpec] = {c.name: c for c in relation.columns} if relation is not None else {}
    declared = dict(relation.column_types) if isinstance(relation, Seed) else {}
    names = [(n, t) for n, t in types] if types is not None else \
        [(c.name, c.data_type or declared.get(c.name) or "") for c in documented.values()]
    columns = []
    for name, type_ in names:
        spec = documented.get(name)
        description = spec.description if spec is not None else (descriptions or {}).get(name)
        columns.append(dg.TableColumn(
            name=name, type=(type_ or (spec.data_type if spec else None) or "unknown").lower(),
            description=description or None,
            constraints=_constraints(spec.tests) if spec is not None else None))
    table_tests = [t.describe() for t in (relation.tests if relation is not None else ()) if t.column is None]
    return dg.TableSchema(columns=columns,
                          constraints=dg.TableConstraints(other=table_tests) if table_tests else None)


def column_lineage(lineage: ProjectLineage, qualified: str) -> dg.TableColumnLineage | None:
    """Per column of model ``qualified``: its direct upstream columns, then its raw and seed columns
    (:meth:`ProjectLineage.upstream`); a JSON field reads ``attributes.results.organic.position``.
    None when the model could not be analysed; columns computed from no column are left out."""
    if qualified not in lineage.columns:
        return None
    deps = {}
    for column in lineage.columns[qualified]:
        refs = lineage.upstream(qualified, column)
        if refs:
            deps[column] = [dg.TableColumnDep(asset_key=relation_key(r.relation), column_name=r.field_name)
                            for r in refs]
    return dg.TableColumnLineage(deps_by_column=deps)


def repository_root(path: Path) -> Path | None:
    """The nearest folder above ``path`` holding ``.git`` (a repository or a worktree), else None."""
    for folder in path.resolve().parents:
        if (folder / ".git").exists():
            return folder
    return None


def code_reference(path: Path) -> dg.CodeReferencesMetadataValue:
    """A code reference to ``path`` (absolute, so the UI can open it), labelled with its path relative to
    the repository holding it (or to its models folder's parent when none does)."""
    path = path.resolve()
    root = repository_root(path) or path.parent.parent.parent
    label = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
    with warnings.catch_warnings():  # code references are a beta API of Dagster
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.CodeReferencesMetadataValue(
            code_references=[dg.LocalFileCodeReference(file_path=str(path), label=label)])
