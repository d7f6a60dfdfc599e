"""The dependency graph of a project's models: every qualified reference resolved (in SQL, a relationships
test's ``to:``, a unit test's input), a model's read of itself set apart, and the build order
(:mod:`graphlib`'s, ties broken by qualified name).
"""

from __future__ import annotations

import graphlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from rank_pipeline.transform.dependencies import RAW_SCHEMA, SEED_SCHEMA
from rank_pipeline.transform.errors import DependencyError
from rank_pipeline.transform.nodes import Model, Seed

__all__ = ["check_references", "topological_order"]


def check_references(root: Path, models: Mapping[str, Model], seeds: Mapping[str, Seed],
                     raw_tables: frozenset[str]) -> dict[str, Model]:
    """``models`` with each reference checked against ``seeds`` and ``raw_tables``, and a model reading itself
    marked ``reads_itself``; ``root`` is named in hints.

    Raises DependencyError: a reference to a missing model, seed or raw table, or to another schema's model;
    a model reading itself that is not incremental with typed columns; a unit test input it does not read.
    """
    relations = _Relations(root, models, seeds, raw_tables)
    checked = {name: _checked_model(relations, model) for name, model in models.items()}
    for seed in seeds.values():
        for test in seed.tests:
            for dep in test.depends_on:
                relations.check(dep, f"{seed.yml_path}, seed {seed.name!r}, test {test.name}: {dep}")
    return checked


def topological_order(models: Mapping[str, Model]) -> list[Model]:
    """Models ordered after every model they depend on, the smallest qualified name first among ready ones.

    Raises DependencyError: a dependency cycle (named model by model).
    """
    by_q = {m.qualified_name: m for m in models.values()}
    sorter = graphlib.TopologicalSorter({q: {d for d in m.depends_on if d in by_q} for q, m in by_q.items()})
    try:
        sorter.prepare()
    except graphlib.CycleError as exc:
        cycle = list(reversed(exc.args[1]))
        raise DependencyError(f"dependency cycle between models: {' -> '.join(cycle)}; break it") from None
    order: list[Model] = []
    ready = sorted(sorter.get_ready())
    while ready:
        q = ready.pop(0)
        order.append(by_q[q])
        sorter.done(q)
        ready = sorted([*ready, *sorter.get_ready()])
    return order


@dataclass(frozen=True)
class _Relations:
    """The relations a reference may name: the models, the seeds and the raw tables of one project."""

    root: Path
    models: Mapping[str, Model]
    seeds: Mapping[str, Seed]
    raw_tables: frozenset[str]

    def check(self, qualified: str, where: str) -> None:
        """Raise :class:`DependencyError` (prefixed ``where``) unless ``qualified`` names one of them."""
        schema, _, name = qualified.partition(".")
        if schema == RAW_SCHEMA:
            if qualified not in self.raw_tables:
                raise DependencyError(
                    f"{where}: no raw table {qualified}; raw tables are {', '.join(sorted(self.raw_tables))}")
            return
        if schema == SEED_SCHEMA:
            if name not in self.seeds:
                raise DependencyError(
                    f"{where}: no seed {qualified}; add {self.root / SEED_SCHEMA / (name + '.csv')} or fix the name"
                )
            return
        model = self.models.get(name)
        if model is None:
            raise DependencyError(
                f"{where}: no model {qualified}; add {self.root / schema / (name + '.sql')} (with its .yml) "
                "or fix the name"
            )
        if model.schema != schema:
            raise DependencyError(f"{where}: model {name} is in schema {model.schema}; write {model.qualified_name}")


def _checked_model(relations: _Relations, model: Model) -> Model:
    """``model`` once its SQL's references, its tests' and its unit tests' inputs are checked; a read of
    itself set apart (:func:`_reading_itself`)."""
    for dep in sorted(model.depends_on):
        relations.check(dep, f"{model.path}: references {dep}")
    if model.qualified_name in model.depends_on:
        model = _reading_itself(model)
    for test in model.tests:
        for dep in test.depends_on:
            relations.check(dep, f"{model.yml_path}, model {model.name!r}, test {test.name}: {dep}")
    for unit in model.unit_tests:
        for given in unit.given:
            if given.relation not in model.depends_on:
                reads = ", ".join(sorted(model.depends_on)) or "nothing"
                raise DependencyError(
                    f"{model.yml_path}, model {model.name!r}, unit test {unit.name!r}: given {given.relation}, "
                    f"which the model does not read; it reads {reads}")
    return model


def _reading_itself(model: Model) -> Model:
    """A model reading its own relation: allowed when incremental with every column's ``data_type`` declared.

    Raises DependencyError: any other model.
    """
    untyped = [c.name for c in model.columns if not c.data_type]
    if model.incremental is None or untyped or not model.columns:
        raise DependencyError(
            f"{model.path}: model {model.qualified_name} reads itself; only an incremental model whose "
            "columns all declare a data_type in its .yml may (its full build reads an empty relation "
            f"of those types){'; untyped: ' + ', '.join(untyped) if untyped else ''}"
        )
    return replace(model, depends_on=model.depends_on - {model.qualified_name}, reads_itself=True)
