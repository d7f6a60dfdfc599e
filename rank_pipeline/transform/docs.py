"""Generate the data dictionary (``docs/reference/data-dictionary.md``) from the project's ``.yml`` files: per
seed, model and pipeline table its description, materialization, grain, dependencies, columns with tests and
lineage, and asset check names (``rank-pipeline docs --dictionary PATH``).
"""

from __future__ import annotations

from pathlib import Path

from rank_pipeline.transform.lineage import ProjectLineage
from rank_pipeline.transform.nodes import ColumnSpec, Model, PipelineTable, Seed, TestSpec
from rank_pipeline.transform.project import Project, load_project

__all__ = ["render_data_dictionary", "write_data_dictionary"]


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|") or "—"


def _anchor(qualified: str) -> str:
    return qualified.replace(".", "").lower()


def _test_label(test: TestSpec) -> str:
    label = test.describe() if test.kind in ("accepted_values", "relationships") else test.kind
    return f"{label}{' (blocking)' if test.blocking else ''}"


def _columns_table(columns: tuple[ColumnSpec, ...], types: dict[str, str] | None = None,
                   lineage: ProjectLineage | None = None, qualified: str = "") -> list[str]:
    if not columns:
        return ["_No documented columns._", ""]
    with_lineage = lineage is not None and qualified in lineage.columns
    lines = (["| column | description | tests | comes from |", "|---|---|---|---|"] if with_lineage else
             ["| column | description | tests |", "|---|---|---|"])
    for col in columns:
        name = f"`{col.name}`"
        data_type = col.data_type or (types or {}).get(col.name)
        if data_type:
            name += f" ({data_type})"
        tests = "; ".join(_test_label(t) for t in col.tests)
        row = f"| {name} | {_cell(col.description)} | {_cell(tests)} |"
        if with_lineage and lineage is not None:
            sources = ", ".join(f"`{r.label}`" for r in sorted(lineage.sources(qualified, col.name)))
            row += f" {_cell(sources)} |"
        lines.append(row)
    return lines + [""]


def _model_tests(relation: Model | Seed | PipelineTable) -> list[str]:
    tests = [t for t in relation.tests if t.column is None]
    if not tests:
        return []
    lines = ["Model tests:", ""]
    for t in tests:
        lines.append(f"- `{t.name}`{' (blocking)' if t.blocking else ''}: {_cell(t.describe())}")
    return lines + [""]


def _link(project: Project, qualified: str) -> str:
    if project.relation(qualified) is None:
        return f"`{qualified}`"
    return f"[`{qualified}`](#{_anchor(qualified)})"


def render_data_dictionary(project: Project, sources: str = "", lineage: ProjectLineage | None = None) -> str:
    """The data dictionary of ``project`` as Markdown (deterministic): ``sources`` (Markdown of the tables it
    reads) before the seeds; with ``lineage`` (:func:`rank_pipeline.transform.lineage.project_lineage`), each
    column's "comes from".
    """
    order = project.topological_order()
    lines = _contents(project, order)
    if sources:
        lines += [sources.rstrip(), ""]
    if project.seeds:
        lines += ["## Seeds", ""]
    for seed in project.seeds.values():
        lines += _seed_section(project, seed)
    for schema in ("staging", "marts"):
        models = [m for m in order if m.schema == schema]
        if not models:
            continue
        lines += [f"## {schema}", ""]
        for model in models:
            lines += _model_section(project, model, lineage)
    if project.tables:
        lines += ["## ops", ""]
    for table in project.tables.values():
        lines += _table_section(project, table)
    return "\n".join(lines).rstrip() + "\n"


def _contents(project: Project, order: list[Model]) -> list[str]:
    """The title, the schemas in a paragraph, and the contents: seeds, models in build order, ops tables."""
    lines = [
        "# Data dictionary",
        "",
        "Generated from `dbt_like_sql/**/*.yml` by `rank_pipeline.transform.docs.write_data_dictionary` "
        "(`rank-pipeline docs`). Do not edit by hand: edit the `.yml` beside each model and regenerate.",
        "",
        "Schemas: `raw` (one table per API resource, loaded from the Parquet snapshots; see "
        "docs/concepts/completeness.md, \"Snapshots\"), `seeds` (reference CSVs), `staging` (rename and cast only; views, "
        "or incremental where parsing JSON on every read would cost too much), `marts` (analysis tables), `ops` "
        "(what the pipeline records about itself, written by its own code, kept across rebuilds). Each test below "
        "is a Dagster asset check of the same name.",
        "",
        "## Contents",
        "",
    ]
    for seed in project.seeds.values():
        lines.append(f"- {_link(project, seed.qualified_name)} (seed)")
    for model in order:
        lines.append(f"- {_link(project, model.qualified_name)} ({model.materialized})")
    for table in project.tables.values():
        lines.append(f"- [`{table.qualified_name}`](#{_anchor(table.qualified_name)}) (written by the pipeline)")
    lines.append("")
    return lines


def _seed_section(project: Project, seed: Seed) -> list[str]:
    lines = [f"### {seed.qualified_name}", "", _cell(seed.description), ""]
    lines.append(f"- Source: `{seed.path.relative_to(project.root.parent) if seed.path.is_relative_to(project.root.parent) else seed.path}`"
                 f", version {seed.version or 'not set'}")
    users = project.downstream(seed.qualified_name)
    if users:
        lines.append("- Used by: " + ", ".join(_link(project, m.qualified_name) for m in users))
    lines.append("")
    lines += _columns_table(seed.columns, dict(seed.column_types))
    lines += _model_tests(seed)
    return lines


def _model_section(project: Project, model: Model, lineage: ProjectLineage | None) -> list[str]:
    lines = [f"### {model.qualified_name}", "", _cell(model.description), ""]
    lines.append(f"- Materialization: {_materialization(model)}")
    if model.unique_key:
        lines.append("- Grain (unique key): " + ", ".join(f"`{c}`" for c in model.unique_key))
    deps = sorted(model.depends_on)
    lines.append("- Depends on: " + (", ".join(_link(project, d) for d in deps) or "—"))
    users = project.downstream(model.qualified_name)
    if users:
        lines.append("- Used by: " + ", ".join(_link(project, m.qualified_name) for m in users))
    lines.append("")
    lines += _columns_table(model.columns, lineage=lineage, qualified=model.qualified_name)
    lines += _model_tests(model)
    return lines


def _materialization(model: Model) -> str:
    """``table``, ``view``, or ``incremental`` with its date column and lookback (or its fold watermark)."""
    mat = model.materialized
    if model.incremental is not None:
        if model.incremental.strategy == "fold":
            mat += (f" fold of the `{model.incremental.date_column}` days after its watermark "
                    f"(max `{model.incremental.watermark}`)")
        else:
            mat += (f" by `{model.incremental.date_column}`, lookback {model.incremental.lookback_days} "
                    f"day{'s' if model.incremental.lookback_days != 1 else ''}")
        if model.reads_itself:
            mat += "; reads its own earlier rows"
    return mat


def _table_section(project: Project, table: PipelineTable) -> list[str]:
    lines = [f"### {table.qualified_name}", "", _cell(table.description), ""]
    where = table.yml_path
    if where is not None and where.is_relative_to(project.root.parent):
        where = where.relative_to(project.root.parent)
    lines += [f"- Written by the pipeline's code; declared under `pipeline_tables:` in `{where}`", ""]
    lines += _columns_table(table.columns)
    lines += _model_tests(table)
    return lines


def write_data_dictionary(project_dir: Path | str, out_path: Path | str, sources: str = "") -> Path:
    """Load the project in ``project_dir`` and write its data dictionary to ``out_path`` (returned).

    Raises ProjectError: the project is invalid.
    """
    out = Path(out_path)
    text = render_data_dictionary(load_project(project_dir), sources)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out
