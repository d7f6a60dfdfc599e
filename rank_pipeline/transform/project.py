"""Discover and validate a dbt-like SQL project.

Why it is shaped so: docs/concepts/architecture.md, "Warehouse and the dbt-like runner".

Layout of a project directory (``dbt_like_sql/``)::

    staging/<name>.sql + <name>.yml     models of schema ``staging``
    marts/<name>.sql + <name>.yml       models of schema ``marts``
    seeds/<name>.csv [+ <name>.yml]     seeds, loaded as tables ``seeds.<name>``
    sources/raw.yml                     ``sources:``, the raw tables models read (loaded by the pipeline's raw
                                        load, not by a model: dbt's sources), with their columns
    sources/<name>.yml                  ``pipeline_tables:``, tables the pipeline's code writes (schema
                                        ``ops``), documented
    sources/vendor_contract.yml         the vendor's contract (:mod:`rank_pipeline.transform.contract`): a
                                        staging model reads ``vendor.<endpoint>``, generated from it

A model is one file holding one plain DuckDB SELECT (no templating: it runs as-is in the duckdb shell).
Its schema is its top folder, its name the file stem; model names are unique across schemas. It refers
to relations only by qualified name: ``raw.<resource>``, ``seeds.<name>``, ``staging.<model>``,
``marts.<model>``; unqualified names must be CTEs. Dependencies are found by parsing the SQL with
sqlglot (DuckDB dialect).

Model ``.yml`` (dbt ``schema.yml`` style; any ``.yml`` under staging/ or marts/ may hold entries; the
schema is declared and validated in :mod:`rank_pipeline.transform.schema`)::

    models:
      - name: fct_x                          # required, matches <name>.sql in the same folder
        description: "..."                   # required, non-empty
        config:
          materialized: view | table | incremental          # default view
          unique_key: col | [cols]                          # documentation of the grain
          incremental: {date_column: snapshot_date, lookback_days: N}   # incremental only
                                                    # (+ strategy: fold, watermark: col; see runner)
          blocking_tests: true | false | [test names]       # default false
        columns:
          - name: col
            description: "..."
            data_type: "..."                 # optional, documentation
            tests: [unique, not_null, {accepted_values: {values: [...]}},
                    {relationships: {to: "marts.x", field: "y"}}]
        tests:
          - {expression: "<SQL boolean that must hold for every row>", name?: slug, blocking?: bool}
          - {unique_combination: [cols], blocking?: bool}

Any test given as a mapping may carry ``blocking: true`` and ``name: <slug>``. Seed ``.yml``::

    seeds:
      - name: ctr_curve
        description: "..."
        version: 1                                  # bumped when the CSV changes meaning
        config: {column_types: {col: duckdb type}}  # or data_type per column
        columns: [...]                              # as for models
        tests: [...]                                # as for models

Pipeline table ``.yml`` (a table written by the pipeline's code, not by SQL, and not a source in dbt's
sense: its columns and tests are documented here, the data dictionary lists it, and its tests run as
asset checks where it is written; models do not read it)::

    pipeline_tables:
      - name: run_history
        schema: ops
        description: "..."
        columns: [{name: run_id, data_type: VARCHAR, description: "...", tests: [not_null]}, ...]
        tests: [...]                                # as for models

Test names are short and stable, because each becomes a Dagster asset check: the ``name`` given, else
:func:`rank_pipeline.transform.names.default_test_name` (``not_null_<col>``, ``unique_<col>``,
``accepted_<col>``, ``<col>_in_<table>``, ``unique_domain_competitor``, the expression in words).

The nodes are in :mod:`rank_pipeline.transform.nodes`, the reading of the folder (and its strict YAML) in
:mod:`rank_pipeline.transform.loading`, the references and the build order in
:mod:`rank_pipeline.transform.graph`; this module puts them together into a :class:`Project`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from rank_pipeline.transform.dependencies import SEED_SCHEMA
from rank_pipeline.transform.errors import ModelConfigError
from rank_pipeline.transform.graph import check_references, topological_order
from rank_pipeline.transform.loading import load_models, load_pipeline_tables, load_raw_sources, load_seeds
from rank_pipeline.transform.nodes import Model, PipelineTable, Seed

__all__ = ["Project", "load_project", "loaded_project"]


@dataclass
class Project:
    """A loaded, validated project: models and seeds by name, dependencies acyclic.

    Attributes:
        root: the project directory.
        models: ``{name: Model}``.
        seeds: ``{name: Seed}``.
        sources: qualified raw tables models may read (``raw.keywords``, ...).
        raw_columns: ``{raw table: ((column, DuckDB type), ...)}`` as ``sources:`` declares them.
        tables: ``{qualified name: PipelineTable}``, the tables the pipeline writes (``pipeline_tables:``).
    """

    root: Path
    models: dict[str, Model]
    seeds: dict[str, Seed]
    sources: frozenset[str] = frozenset()
    tables: dict[str, PipelineTable] = field(default_factory=dict)
    raw_columns: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)

    def relation(self, qualified_name: str) -> Model | Seed | None:
        """The model or seed building ``schema.name``, None for raw tables and unknown names."""
        schema, _, name = qualified_name.partition(".")
        if schema == SEED_SCHEMA:
            return self.seeds.get(name)
        model = self.models.get(name)
        return model if model is not None and model.schema == schema else None

    def topological_order(self) -> list[Model]:
        """Models ordered so that each comes after every model it depends on (ties by qualified name;
        :func:`rank_pipeline.transform.graph.topological_order`)."""
        return topological_order(self.models)

    def downstream(self, qualified_name: str) -> list[Model]:
        """Models that read ``qualified_name`` directly."""
        return [m for m in self.topological_order() if qualified_name in m.depends_on]


def load_project(project_dir: Path | str) -> Project:
    """Discover, parse and validate a project (see the module docstring for its layout).

    Args:
        project_dir: the ``dbt_like_sql`` folder.

    Returns:
        A :class:`Project` whose dependencies are complete and acyclic.

    Raises:
        ModelConfigError: a malformed ``.yml``, a model without a ``.yml`` entry (or with two), an entry
            without a ``.sql``, a ``.sql`` outside ``staging/`` and ``marts/``, duplicate model names.
        ModelSqlError: a ``.sql`` that is not one plain SELECT or references relations badly.
        DependencyError: a reference (in SQL or in a relationships test) to a missing model, seed or raw
            table; a model in the wrong schema; a dependency cycle.
    """
    root = Path(project_dir)
    if not root.is_dir():
        raise ModelConfigError(f"{root}: the SQL project directory does not exist")
    seeds = load_seeds(root)
    models = load_models(root)
    raw = load_raw_sources(root)
    tables = load_pipeline_tables(root)
    models = check_references(root, models, seeds, frozenset(raw))
    project = Project(root=root, models=models, seeds=seeds, sources=frozenset(raw), raw_columns=raw,
                      tables=tables)
    project.topological_order()  # raises on a cycle
    return project


_loaded: dict[Path, tuple[tuple | None, Project]] = {}


def loaded_project(project_dir: Path | str) -> Project:
    """:func:`load_project` of ``project_dir``, parsed again only when a file of the folder was added,
    removed or edited (its content) since this process last parsed it: the definitions, and each run's vendor-shape
    check, read the same project (parsing its ``.yml`` and ``.sql`` files takes a good part of a second).
    The project returned is shared: read it, never change it.

    Raises:
        ProjectError: as :func:`load_project`.
    """
    root = Path(project_dir).resolve()
    stamp = _folder_stamp(root)
    loaded = _loaded.get(root)
    if stamp is None or loaded is None or loaded[0] != stamp:
        _loaded[root] = loaded = (stamp, load_project(root))
    return loaded[1]


def _folder_stamp(root: Path) -> tuple | None:
    """Every file under ``root`` with a digest of its content (a millisecond or two for the project's
    files); None when the folder changed while it was read."""
    try:
        return tuple((str(path), hashlib.blake2b(path.read_bytes(), digest_size=16).digest())
                     for path in sorted(root.rglob("*")) if path.is_file())
    except OSError:
        return None
