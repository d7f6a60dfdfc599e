"""Superset configuration for the rank-pipeline dashboards (read via ``SUPERSET_CONFIG_PATH``).

Everything Superset writes (its SQLite metadata database, the secret key) lives in ``SUPERSET_HOME``
(default ``.superset/`` in the repository, git-ignored), set by ``dashboards/superset_ctl.py``.
Served on loopback only; the warehouse is opened read-only (see ``dashboards/bundle.py``).
"""

import os
import secrets
from pathlib import Path

_home = Path(os.environ.get("SUPERSET_HOME", Path(__file__).resolve().parent.parent / ".superset"))
_home.mkdir(parents=True, exist_ok=True)
_key_file = _home / "secret_key"
if not _key_file.is_file():
    _key_file.write_text(secrets.token_urlsafe(48))
    _key_file.chmod(0o600)

SECRET_KEY = _key_file.read_text().strip()
SQLALCHEMY_DATABASE_URI = f"sqlite:///{_home / 'superset.db'}"
# the warehouse is a local DuckDB file: no results backend, no async queries, no Celery
CACHE_CONFIG = {"CACHE_TYPE": "NullCache"}
DATA_CACHE_CONFIG = {"CACHE_TYPE": "NullCache"}
FILTER_STATE_CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache", "CACHE_DEFAULT_TIMEOUT": 86400}
EXPLORE_FORM_DATA_CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache", "CACHE_DEFAULT_TIMEOUT": 86400}
TALISMAN_ENABLED = False
WTF_CSRF_ENABLED = True
SUPERSET_WEBSERVER_TIMEOUT = 120
ROW_LIMIT = 50000
FEATURE_FLAGS = {"DASHBOARD_NATIVE_FILTERS": True, "ENABLE_TEMPLATE_PROCESSING": False}
# the database entry points at a file path: allow it (SQLite files stay refused)
PREVENT_UNSAFE_DB_CONNECTIONS = False
LOG_LEVEL = "WARNING"
