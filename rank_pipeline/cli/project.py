"""A user's own project: ``init`` (scaffold it), ``files`` (whose is each model file), ``own`` (take a default
to edit) and ``upgrade`` (which of your files differ from the package's new defaults, as diffs).

The project's layout is create-dagster's (``src/<module>/definitions.py`` loading ``src/<module>/defs``), with
the pipeline as its one component (``defs/rank/defs.yaml``), and the files the user owns in
``models/``, laid over the package's (:mod:`rank_pipeline.settings.user_project`). Nothing here ever writes
a file the user already has, nor any file of the installed package.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shutil
from pathlib import Path

from rank_pipeline.cli.args import package_version, today
from rank_pipeline.cli.errors import UsageError
from rank_pipeline.settings import (
    UserProject,
    file_digest,
    find_project,
    model_files,
    package_models_dir,
)

__all__ = ["cmd_files", "cmd_init", "cmd_own", "cmd_upgrade", "scaffold_project"]

_PACKAGE_DIR = Path(__file__).resolve().parents[1]

CONTRACT = "sources/vendor_contract.yml"
"""The vendor's contract, always the user's in a new project."""

EMPTY_KEYWORDS = """\
# Tracked keywords as code (rank-pipeline keywords plan keywords.yml; the format: examples/keywords.yml
# in rank-pipeline's repository). Empty: nothing is tracked through this file yet.
version: 1
domains: []
"""

PYPROJECT = """\
[project]
name = "{name}"
version = "0.1.0"
requires-python = ">=3.11"
# dagster-dg-cli gives `dg` (dg dev, dg check defs) and dagster-webserver the UI, with `pip install -e .`
# as with `uv sync`: tools a project needs are its dependencies, not a dependency group pip ignores
dependencies = [
    "rank-pipeline>={version}",
    "dagster-dg-cli{dagster}",
    "dagster-webserver{dagster}",
]

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["src/{module}"]

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "{module}"

# rank-pipeline's own table: the files of models/ replace the package's files of the same path; started is
# the day `rank-pipeline init` made the project, the first daily partition until data/ holds a snapshot
[tool.rank_pipeline]
models_dir = "models"
started = {started}
"""

DEFINITIONS = """\
from pathlib import Path

from dagster import definitions, load_from_defs_folder


@definitions
def defs():
    return load_from_defs_folder(path_within_project=Path(__file__).parent)
"""

README = """\
# {name}

A rank-pipeline project: the vendor's contract, the SQL models you own and the seeds are in `models/`; any
model not there is read from the installed `rank-pipeline` package. A file in `models/` replaces the
package's file of the same path.

From this folder:

    pip install -e .                # once: the project's tools, `dg` and Dagster's UI (or `uv sync`)
    rank-pipeline demo --days 2     # two simulated days on the embedded sandbox, built with your models
    dg dev                          # Dagster's UI, with the pipeline as this project's component

`rank-pipeline files` says which model files are yours and which come from the package;
`rank-pipeline own NAME` copies a model of the package here to edit; after upgrading the package,
`rank-pipeline upgrade` shows which of your files differ from its new defaults (it changes nothing).
The pipeline's settings are the component's attributes in `src/{module}/defs/rank/defs.yaml`, read by
`rank-pipeline` and `dg` alike (a variable set in the environment, such as `RANK_PIPELINE_DATA_DIR`, overrides
its attribute); the dashboards' definitions are in `dashboards/`; the keywords you track in `keywords.yml`.
"""

GITIGNORE = """\
data/
.env
.rank_pipeline/composed/
__pycache__/
"""

DOTENV = """\
# Read by `dg dev` (and every dg/dagster command run here): Dagster's home is the data folder's, where
# rank-pipeline's runs are recorded, so the UI shows their runs and materializations. An absolute path, written
# by `rank-pipeline init`: after moving the project or changing data_dir in defs.yaml, change it to
# <data folder>/dagster_home. This file is this machine's (.gitignore); add your own variables below.
DAGSTER_HOME={dagster_home}
"""


def dagster_specifier() -> str:
    """The Dagster versions the installed rank-pipeline runs with (its ``dagster`` requirement, e.g.
    ``<1.14,>=1.13``), for the project's ``dagster-dg-cli`` and ``dagster-webserver``, which are released with
    Dagster; the installed Dagster's minor version when the package's metadata is not there."""
    from importlib.metadata import PackageNotFoundError, requires, version

    try:
        for line in requires("rank-pipeline") or []:
            match = re.fullmatch(r"dagster\s*([<>=!~][^;\[]*)", line.strip())
            if match:  # the plain requirement: no extra, no marker
                return match.group(1).strip()
    except PackageNotFoundError:  # pragma: no cover - a source tree without install
        pass
    major, minor = (int(part) for part in version("dagster").split(".")[:2])
    return f">={major}.{minor},<{major}.{minor + 1}"


def _module_name(name: str) -> str:
    """A Python module name for the project ``name`` (``my-rank`` -> ``my_rank``)."""
    module = re.sub(r"[^0-9a-zA-Z_]", "_", name).lower().strip("_") or "rank_project"
    return f"p_{module}" if module[0].isdigit() else module


def package_files_for(name: str) -> list[str]:
    """The package's model files ``name`` stands for: a path (``marts/x.sql``), or a model's or seed's name
    (its ``.sql``/``.csv`` and its ``.yml``).

    Raises:
        UsageError: the package has no such file or model.
    """
    files = model_files(package_models_dir())
    if name in files:
        return [name]
    found = [rel for rel in files if Path(rel).stem == name and Path(rel).parts[0] in ("staging", "marts", "seeds")]
    if not found:
        raise UsageError(f"the package has no model, seed or file {name!r}: see `rank-pipeline files --all`")
    return sorted(found)


def _take(project: UserProject, rels: list[str], replace: bool = False) -> list[str]:
    """Copy the package's files ``rels`` into the project's models folder, recording their digests; a file
    the project already has is left as it is unless ``replace``. Returns the paths copied."""
    package = package_models_dir()
    copied, digests = [], {}
    for rel in rels:
        target = project.models / rel
        if target.exists() and not replace:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package / rel, target)
        copied.append(rel)
        digests[rel] = file_digest(package / rel)
    project.record_defaults(digests, package_version())
    return copied


def _dashboards_dir() -> Path | None:
    """The dashboards' definitions shipped with the package (``rank_pipeline/dashboards``), or the source
    tree's ``dashboards/``; None when neither is there."""
    for path in (_PACKAGE_DIR / "dashboards", _PACKAGE_DIR.parent / "dashboards"):
        if (path / "dashboards.yml").is_file():
            return path
    return None


def scaffold_project(path: Path, own: list[str] | None = None) -> UserProject:
    """Write a new project at ``path`` (module docstring): with ``own``, only those models (names or paths)
    are copied into ``models/``, with the contract and the seeds; without, every model.

    Raises:
        UsageError: ``path`` exists and is not an empty folder, or a name in ``own`` is unknown.
    """
    from rank_pipeline.settings import defs_yaml_text

    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(f"{path} exists and is not an empty folder: give a new folder's path")
    name = path.resolve().name
    module = _module_name(name)
    package = model_files(package_models_dir())
    if own is None:
        rels = [r for r in package if r.split("/")[0] in ("staging", "marts")]
    else:
        rels = [r for n in own for r in package_files_for(n)]
    rels += [CONTRACT, *(r for r in package if r.startswith("seeds/"))]
    home = path.resolve() / "data" / "dagster_home"
    fmt = {"name": name, "module": module, "version": package_version(), "dagster": dagster_specifier(),
           "started": today().isoformat(), "dagster_home": home}
    files = {
        "pyproject.toml": PYPROJECT.format(**fmt),
        "README.md": README.format(**fmt),
        ".gitignore": GITIGNORE,
        ".env": DOTENV.format(**fmt),
        "keywords.yml": EMPTY_KEYWORDS,
        f"src/{module}/__init__.py": "",
        f"src/{module}/definitions.py": DEFINITIONS,
        f"src/{module}/defs/__init__.py": "",
        f"src/{module}/defs/rank/defs.yaml": defs_yaml_text(today()),
    }
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    _dagster_home(home)
    project = UserProject(path.resolve(), (path / "models").resolve(), today())
    project.models.mkdir(parents=True, exist_ok=True)
    _take(project, sorted(set(rels)))
    dashboards = _dashboards_dir()
    if dashboards is not None:
        (path / "dashboards").mkdir()
        shutil.copyfile(dashboards / "dashboards.yml", path / "dashboards" / "dashboards.yml")
        shutil.copytree(dashboards / "datasets", path / "dashboards" / "datasets")
    return project


def _dagster_home(home: Path) -> None:
    """Create the project's Dagster home (``.env``'s ``DAGSTER_HOME``) with the ``dagster.yaml`` the pipeline
    writes there, so ``dg dev`` starts on it before any run (Dagster refuses a home that does not exist)."""
    from rank_pipeline.defs.instance import instance_config

    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text(instance_config(home))


def _project() -> UserProject:
    """The project holding the working folder. Raises UsageError outside one."""
    project = find_project()
    if project is None:
        raise UsageError("not inside a rank-pipeline project (a folder whose pyproject.toml has "
                         "[tool.rank_pipeline]): create one with `rank-pipeline init PATH`")
    return project


def cmd_init(args: argparse.Namespace) -> int:
    path = Path(args.path)
    project = scaffold_project(path, args.own)
    owned = model_files(project.models)
    print(f"rank-pipeline init: a project at {project.root} ({len(owned)} model file(s) of yours in models/, "
          "the rest read from the package)")
    print(f"next: cd {args.path} && pip install -e . && rank-pipeline demo --days 2   (then `dg dev`; "
          "`pip install -e .` gives the project's tools: dg and Dagster's UI)")
    return 0


def cmd_files(args: argparse.Namespace) -> int:
    project = _project()
    package = model_files(package_models_dir())
    owned = model_files(project.models)
    print(f"models of {project.root}: {len(owned)} file(s) yours ({project.models}), the rest from the package "
          f"({package_models_dir()})")
    for rel, path in owned.items():
        if rel not in package:
            how = "yours (added)"
        elif file_digest(path) == file_digest(package[rel]):
            how = "yours (same as the package's)"
        else:
            how = "yours (replaces the package's)"
        print(f"  {how:31} {rel}")
    if args.all:
        for rel in package:
            if rel not in owned:
                print(f"  {'package':31} {rel}")
    else:
        print(f"  {len([r for r in package if r not in owned])} file(s) from the package (--all lists them)")
    return 0


def cmd_own(args: argparse.Namespace) -> int:
    project = _project()
    rels = [r for n in args.names for r in package_files_for(n)]
    kept = [r for r in rels if (project.models / r).exists()] if not args.replace else []
    copied = _take(project, rels, replace=args.replace)
    for rel in copied:
        print(f"  copied  {rel}")
    for rel in kept:
        print(f"  kept    {rel} (yours already; --replace takes the package's)")
    return 0


def upgrade_report(project: UserProject) -> list[tuple[str, str, list[str]]]:
    """``(path, what, diff lines)`` for each of the project's files whose package default changed since it
    was taken (``.rank_pipeline/defaults.json``), or that has no record and differs from the default; the
    diff goes from the user's file to the new default. Reads only."""
    package = model_files(package_models_dir())
    recorded = project.read_defaults()
    report: list[tuple[str, str, list[str]]] = []
    for rel, path in model_files(project.models).items():
        default = package.get(rel)
        if default is None:
            if rel in recorded:
                report.append((rel, "no longer in the package (yours is still read)", []))
            continue
        new, yours, taken = file_digest(default), file_digest(path), recorded.get(rel)
        if new == taken or new == yours:
            continue
        what = ("the default changed; yours is the old default (`rank-pipeline own --replace` takes the new one)"
                if yours == taken else "the default changed and so did yours: merge by hand"
                if taken is not None else "differs from the default (no record of when you took it)")
        diff = difflib.unified_diff(path.read_text().splitlines(keepends=True),
                                    default.read_text().splitlines(keepends=True),
                                    fromfile=f"yours/{rel}", tofile=f"package {package_version()}/{rel}")
        report.append((rel, what, list(diff)))
    return report


def cmd_upgrade(args: argparse.Namespace) -> int:
    project = _project()
    report = upgrade_report(project)
    if not report:
        print(f"rank-pipeline upgrade: none of your files differs from a changed default of {package_version()}")
        return 0
    print(f"rank-pipeline upgrade: {len(report)} of your file(s) differ from the defaults of {package_version()} "
          "(nothing was changed):")
    for rel, what, diff in report:
        print(f"\n{rel}: {what}")
        print("".join(diff), end="" if not diff or diff[-1].endswith("\n") else "\n")
    if args.accept:
        package = model_files(package_models_dir())
        project.record_defaults({rel: file_digest(package[rel]) for rel, _, _ in report if rel in package},
                                package_version())
        print("\nrecorded the new defaults as seen: these files are not reported again until the next change")
    return 0
