"""Discover and validate a dbt-like SQL project (``dbt_like_sql/``) into a :class:`Project`: one plain DuckDB
SELECT per model with its ``.yml`` entry (docs/concepts/models.md, "The project").
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
    """A loaded, validated project, dependencies acyclic: ``root``; ``models`` and ``seeds`` by name; ``sources``
    (readable raw tables, ``raw.keywords``); ``raw_columns`` (``{raw table: ((column, DuckDB type), ...)}``);
    ``tables`` (``{qualified name: PipelineTable}``).
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
    """Discover, parse and validate the project in ``project_dir`` (the ``dbt_like_sql`` folder).

    Returns:
        A :class:`Project` whose dependencies are complete and acyclic.
    Raises:
        ModelConfigError: a malformed ``.yml``, a model without exactly one ``.yml`` entry, an entry without
            a ``.sql``, a ``.sql`` outside ``staging/`` and ``marts/``, duplicate model names.
        ModelSqlError: a ``.sql`` that is not one plain SELECT or references relations badly.
        DependencyError: a reference to a missing model, seed or raw table; a wrong schema; a cycle.
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
    """:func:`load_project` of ``project_dir``, parsed again only when a file of the folder changed since this
    process parsed it. The project returned is shared: never change it. Raises ProjectError as :func:`load_project`.
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
