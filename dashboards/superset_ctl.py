"""Set up and serve the rank-pipeline dashboards in Superset (run with ``.venv-superset/bin/python``).

    python dashboards/superset_ctl.py setup  [--warehouse PATH] [--home DIR]
    python dashboards/superset_ctl.py serve  [--warehouse PATH] [--home DIR] [--port 8088]

``setup`` creates or upgrades Superset's metadata database (SQLite in ``--home``, default ``.superset/``),
creates the admin login, builds the import bundle from ``dashboards/`` (``bundle.py``) against the
published warehouse and imports it (overwriting the datasets, charts and dashboards it defines). ``serve`` runs ``setup`` and
then serves Superset on 127.0.0.1, printing the address and the login.

Environment: ``RANK_PIPELINE_DATA_DIR`` (default ``./data``; the warehouse is ``<dir>/warehouse.duckdb``),
``SUPERSET_ADMIN_USER`` / ``SUPERSET_ADMIN_PASSWORD`` (default ``admin`` / ``admin``: the server listens
on loopback only), ``RANK_PIPELINE_DASHBOARD_PORT`` (default 8088).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(HERE))

import bundle  # noqa: E402  (dashboards/bundle.py, beside this file)

DEFAULT_LOGIN = ("admin", "admin")


def admin_login() -> tuple[str, str]:
    """``(user, password)`` of the Superset admin (environment, default admin/admin)."""
    return (os.environ.get("SUPERSET_ADMIN_USER", DEFAULT_LOGIN[0]),
            os.environ.get("SUPERSET_ADMIN_PASSWORD", DEFAULT_LOGIN[1]))


def superset_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SUPERSET_HOME=str(home), SUPERSET_CONFIG_PATH=str(HERE / "superset_config.py"),
               FLASK_APP="superset", PYTHONWARNINGS="ignore", SUPERSET_LOAD_EXAMPLES="no")
    return env


def superset(home: Path, *args: str, quiet: bool = True) -> None:
    """Run the ``superset`` command of this environment; fail with its output when it fails."""
    proc = subprocess.run([str(BIN / "superset"), *args], env=superset_env(home), capture_output=quiet, text=True)
    if proc.returncode != 0:
        detail = (proc.stdout or "")[-3000:] + (proc.stderr or "")[-3000:] if quiet else ""
        sys.exit(f"`superset {' '.join(args[:2])}` failed (exit {proc.returncode}):\n{detail}")


def setup(warehouse: Path, home: Path) -> None:
    """Metadata database, admin login, and the dashboards imported from the repository's files."""
    if not warehouse.is_file():
        sys.exit(f"no published warehouse at {warehouse}: run `make demo` (or the pipeline) first, "
                 "or point RANK_PIPELINE_DATA_DIR at the folder holding warehouse.duckdb")
    home.mkdir(parents=True, exist_ok=True)
    stamp = home / ".initialised"
    if not stamp.is_file():
        # a freshly initialised metadata database (default login, no dashboards) is kept in the venv and
        # copied: `superset db upgrade` + `init` take minutes on 2 cores, and tests start from scratch
        template = Path(sys.prefix) / "superset-metadata-template.db"
        if template.is_file() and admin_login() == DEFAULT_LOGIN:
            shutil.copyfile(template, home / "superset.db")
        else:
            print(f"creating Superset's metadata database in {home} (once; a few minutes) ...", flush=True)
            superset(home, "db", "upgrade")
            user, password = admin_login()
            superset(home, "fab", "create-admin", "--username", user, "--firstname", "Rank", "--lastname",
                     "Pipeline", "--email", f"{user}@localhost", "--password", password)
            superset(home, "init")
            if admin_login() == DEFAULT_LOGIN:
                shutil.copyfile(home / "superset.db", template)
        stamp.touch()
    with tempfile.TemporaryDirectory() as tmp:
        zip_path = Path(tmp) / "dashboards.zip"
        try:
            summary = bundle.build(warehouse, zip_path)
        except bundle.BundleError as exc:
            sys.exit(f"dashboards/dashboards.yml: {exc}")
        proc = subprocess.run([sys.executable, __file__, "import-bundle", str(zip_path)], env=superset_env(home),
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"importing the dashboards failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    print(f"imported {len(summary['dashboards'])} dashboards over {warehouse}", flush=True)


# the type Superset's importers expect in metadata.yaml, per kind of object
IMPORT_TYPES = (("SqlaTable", "dataset"), ("Slice", "chart"), ("Dashboard", "dashboard"))


def import_bundle(zip_path: Path) -> None:
    """Import the bundle overwriting its datasets, then its charts, then its dashboards (run inside
    Superset's app, with ``superset_env``). ``superset import-dashboards`` alone overwrites only the
    dashboards: Superset 6.1 imports a dashboard's charts and datasets with ``overwrite=False``, so an edited
    chart or dataset SQL would keep its first import."""
    import zipfile

    import yaml
    from superset.app import create_app

    app = create_app()
    with app.app_context():
        from superset import security_manager
        from superset.commands.chart.importers.v1 import ImportChartsCommand
        from superset.commands.dashboard.importers.v1 import ImportDashboardsCommand
        from superset.commands.dataset.importers.v1 import ImportDatasetsCommand
        from superset.commands.importers.v1.utils import get_contents_from_bundle
        from superset.utils.core import override_user

        commands = {"dataset": ImportDatasetsCommand, "chart": ImportChartsCommand,
                    "dashboard": ImportDashboardsCommand}
        with zipfile.ZipFile(zip_path) as zf:
            contents = get_contents_from_bundle(zf)
        metadata = yaml.safe_load(contents["metadata.yaml"])
        with override_user(security_manager.find_user(username=admin_login()[0])):
            for type_, kind in IMPORT_TYPES:
                part = {**contents, "metadata.yaml": yaml.safe_dump({**metadata, "type": type_})}
                commands[kind](part, overwrite=True).run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    if argv is None and sys.argv[1:2] == ["import-bundle"]:  # internal: run by setup inside Superset's env
        import_bundle(Path(sys.argv[2]))
        return 0
    parser.add_argument("command", choices=["setup", "serve"])
    data_dir = Path(os.environ.get("RANK_PIPELINE_DATA_DIR") or REPO / "data")
    parser.add_argument("--warehouse", type=Path, default=data_dir / "warehouse.duckdb")
    parser.add_argument("--home", type=Path, default=REPO / ".superset")
    parser.add_argument("--port", type=int, default=int(os.environ.get("RANK_PIPELINE_DASHBOARD_PORT", "8088")))
    args = parser.parse_args(argv)
    warehouse, home = args.warehouse.resolve(), args.home.resolve()
    setup(warehouse, home)
    if args.command == "serve":
        user, password = admin_login()
        print(f"\nDashboards: http://127.0.0.1:{args.port}/dashboard/list/   login: {user} / {password}\n"
              f"(warehouse {warehouse}; Ctrl-C stops)", flush=True)
        os.execve(str(BIN / "superset"), [str(BIN / "superset"), "run", "-h", "127.0.0.1", "-p", str(args.port),
                                          "--with-threads"], superset_env(home))
    return 0


if __name__ == "__main__":
    sys.exit(main())
