"""Ships the SQL models (``dbt_like_sql/``) inside the package as ``rank_pipeline/dbt_like_sql``.

Everything else is in ``pyproject.toml``. An editable install (``pip install -e .``) reads the source
tree's ``dbt_like_sql/`` instead (``rank_pipeline.settings.models_dir``).
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

MODELS = Path(__file__).resolve().parent / "dbt_like_sql"


class BuildPyWithModels(build_py):
    def run(self):
        super().run()
        if not getattr(self, "editable_mode", False) and MODELS.is_dir():
            target = Path(self.build_lib) / "rank_pipeline" / "dbt_like_sql"
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(MODELS, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithModels})
