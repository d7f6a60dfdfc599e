# rank-pipeline: the quick start is `make demo` then `make test`.
# The venvs' interpreter: the distribution's /usr/bin/python3 when it is 3.11 or newer and can make a venv,
# else the python3 on PATH; PYTHON=... chooses another. A distribution's CPython is built with profile-guided
# and link-time optimization; one built from source without them (pyenv's default) ran the suite's Python
# slower on the same machine (docs/how-to/contributing.md, "The interpreter").
SYSTEM_PYTHON := /usr/bin/python3
ifeq ($(origin PYTHON),undefined)
PYTHON := $(shell $(SYSTEM_PYTHON) -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' \
	    >/dev/null 2>&1 && echo $(SYSTEM_PYTHON) || echo python3)
endif
VENV   ?= .venv
BIN    := $(VENV)/bin
# two installs into one venv, each once: the package alone (what the pipeline needs at run time: make demo,
# dev, sandbox, docs), then its dev, spark and postgres extras on top (make env: tests, lint, benchmarks).
# make test-fast, which runs no Spark test, installs the dev and postgres extras alone (make env-core): no
# pyspark, whose build from its source archive is the longest part of a fresh install.
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP         := $(VENV)/.installed-dev
CORE_STAMP    := $(VENV)/.installed-dev-core
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# cache bytecode even if the environment forbids it, so each process reuses modules compiled once, not again
unexport PYTHONDONTWRITEBYTECODE

.PHONY: env env-core env-runtime demo test test-services test-fast dev sandbox bench bench-extract bench-models bench-lineage bench-scale bench-shape bench-overhead lint lock \
        docs site site-serve clean dashboard dashboard-env dashboard-env-try browser lock-dashboards \
        postgres-server postgres-server-try

## The development venv: the package with its dev, spark and postgres extras (make test, lint, bench).
env: $(STAMP)

## The venv of make test-fast: the package with its dev and postgres extras (no pyspark, no Java).
env-core: $(CORE_STAMP)

## The run-time venv: the package alone, no extras (no pyspark, no test tools).
env-runtime: $(RUNTIME_STAMP)

# The installer: uv (from PyPI, into the venv itself) when it can be had, else pip; versions pinned by
# constraints.txt either way. INSTALL is expanded when its recipe runs, after the venv and uv are there.
UV_STAMP   := $(VENV)/.installer
DEV_SPEC   := .[dev,spark,postgres]
CORE_SPEC  := .[dev,postgres]
BENCH_SPEC := .[dev,spark,postgres,bench]
INSTALL     = $(if $(wildcard $(BIN)/uv),$(BIN)/uv pip install --python $(BIN)/python,$(BIN)/pip install) \
	      --quiet -c constraints.txt

$(UV_STAMP):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install --quiet "$$(grep -E '^uv==' constraints.txt || echo uv)" \
	  || echo "uv could not be installed; installing with pip (slower)" >&2
	@touch $@

$(RUNTIME_STAMP): pyproject.toml constraints.txt | $(UV_STAMP)
	$(INSTALL) -e .
	@touch $@

$(STAMP): $(RUNTIME_STAMP)
	$(INSTALL) -e '$(DEV_SPEC)'
	@touch $@ $(CORE_STAMP)

$(CORE_STAMP): $(RUNTIME_STAMP)
	$(INSTALL) -e '$(CORE_SPEC)'
	@touch $@

$(VENV)/.installed-bench: $(STAMP)
	$(INSTALL) -e '$(BENCH_SPEC)'
	@touch $@

## Run the daily job once over 7 simulated days (a single-run backfill) against the embedded sandbox.
demo: env-runtime
	$(BIN)/rank-pipeline demo --days 7

## The whole test suite (installs the dashboards' Superset venv and chromium first, for the browser test).
## make lint runs beside those installs (test-services), before pytest: a style or type finding fails it
## before anything is tested. From a fresh clone its mypy is about 15 s of one core, the installs mostly the other's.
## Four workers on two cores: a worker waiting (a daemon's ticks, a freshness window, a server or a cluster
## starting) leaves its core to the others, and the two cores stay busy nearly throughout (benchmarks/RESULTS.md,
## "make test and make test-fast, fresh clone"). Each xdist_group runs whole on one
## worker, the heaviest first (tests/work_units.py, applied by tests/conftest.py; --no-loadscope-reorder keeps that order).
PYTEST_XDIST := --dist loadgroup --no-loadscope-reorder
test: env
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint test-services
	$(BIN)/python -m pytest -n 4 $(PYTEST_XDIST) -q --durations=20

# The browser test's and the PostgreSQL test's installs, one after the other: each may run apt-get, and two
# apt-get at once fail on dpkg's lock.
test-services:
	@$(MAKE) --no-print-directory dashboard-env-try
	@$(MAKE) --no-print-directory postgres-server-try

## The fast tier, for the edit-and-test loop (about 2 minutes on 2 cores from a fresh clone, three workers):
## every test except, by marker
## (pyproject.toml; tests/conftest.py adds some from the fixtures a test uses), the slow kinds: spark (starts
## Spark or a JVM), cluster (a Spark standalone cluster or Spark Connect server), browser (Chromium, the
## dashboards' Superset venv), daemon (dagster-daemon, the webserver, dagster dev), postgres (a PostgreSQL
## server), root (needs root), slow (10 s or more: whole runs and commands in subprocesses, long histories);
## and, as in make test, soak and spark_long. It installs no pyspark (make env-core), dashboards' venv, chromium or PostgreSQL.
## make test (what CI runs) still runs every tier.
FAST_MARKERS := not (spark or cluster or browser or daemon or postgres or root or slow or soak or spark_long)
test-fast: lint
	$(BIN)/python -m pytest -n 3 $(PYTEST_XDIST) -q --durations=30 -m "$(FAST_MARKERS)"

## Open the Dagster UI on http://127.0.0.1:3000 (embedded sandbox unless RANK_TRACKER_BASE_URL is set).
## It lists the runs of `make demo` / `rank-pipeline run` (same DAGSTER_HOME, default data/dagster_home).
## Stop it with Ctrl-C or SIGTERM to its process group (make waits for the recipe; rank_pipeline.operations.services
## makes `dagster dev` take SIGTERM even when started in the background).
DEV_HOST ?= 127.0.0.1
DEV_PORT ?= 3000
dev: env-runtime
	export DAGSTER_HOME=$${DAGSTER_HOME:-$(CURDIR)/data/dagster_home} && $(BIN)/python -m rank_pipeline.defs.instance \
	  && exec $(BIN)/python -m rank_pipeline.operations.services $(BIN)/dagster dev -w workspace.yaml -h $(DEV_HOST) -p $(DEV_PORT)

## Serve the sandbox API on http://127.0.0.1:8765 for trying by hand.
sandbox: env-runtime
	$(BIN)/rank-pipeline sandbox --port 8765

bench: bench-extract bench-models bench-shape

## The vendor-shape check, profile and suggested remap at 50,000 keywords a day, as ratios (benchmarks/shape.py).
bench-shape: env
	RANK_BENCH_RECORD=1 $(BIN)/python benchmarks/shape.py

## A day's bookkeeping (Dagster's run, events, checks, metadata, history, publish) against its SQL and
## extraction, at the demo's size and 5,000 and 50,000 keywords, as ratios (benchmarks/overhead.py, ~5 min).
bench-overhead: env
	RANK_BENCH_RECORD=1 $(BIN)/python benchmarks/overhead.py

bench-extract: $(VENV)/.installed-bench
	RANK_BENCH_RECORD=1 $(BIN)/python benchmarks/extract.py

bench-models: env
	RANK_BENCH_RECORD=1 $(BIN)/python benchmarks/models.py

## Column lineage of dbt_like_sql/ cold, against the previous analysis (about half a minute).
bench-lineage: env
	RANK_BENCH_RECORD=1 $(BIN)/python benchmarks/lineage.py --fresh

## DuckDB, Spark local[2] and a two-worker standalone cluster: full rebuild and one day, at 365 days x 50,000 and
## x 300,000 keywords (hours).
bench-scale: env
	RANK_BENCH_RECORD=1 $(BIN)/python benchmarks/scale.py

## ruff over the repository, then mypy over rank_pipeline/ ([tool.mypy] in pyproject.toml); either's
## finding fails it, and with it make test and make test-fast before pytest starts (a few seconds; about
## 15 s for mypy's first run, which fills .mypy_cache/).
## ruff, then mypy over rank_pipeline/. In make test's venv pyspark is installed and its calls are
## type-checked; in make test-fast's (env-core) it is not, and mypy takes the Spark engine's pyspark calls as
## untyped (pyproject.toml, tool.mypy).
lint: env-core
	$(BIN)/ruff check .
	$(BIN)/mypy

docs: env-runtime
	$(BIN)/rank-pipeline docs --dictionary docs/reference/data-dictionary.md

## The documentation site (MkDocs, Material theme, from docs/ and mkdocs.yml) into build/site, --strict:
## a broken link or a page missing from the nav fails (make test builds it too: tests/test_documentation.py).
site: env
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

## Serve the documentation site on http://127.0.0.1:8000, rebuilt on each edit.
site-serve: env
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve -a 127.0.0.1:8000

lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock && .venv-lock/bin/pip install --quiet -e '.[dev,spark,postgres,bench]' \
	  && { echo "# Pinned versions used by every install (make demo, make env, make bench). Regenerate with 'make lock'."; \
	       .venv-lock/bin/pip freeze --exclude-editable; } > constraints.txt && rm -rf .venv-lock

clean:
	rm -rf data/snapshots data/warehouse*.duckdb* data/dagster_home

## Dashboards (Superset) in their own venv, never the pipeline's .venv; see dashboards/ and docs/how-to/dashboards.md.
SUPERSET_VENV  ?= .venv-superset
SUPERSET_STAMP := $(SUPERSET_VENV)/.installed

dashboard-env: $(SUPERSET_STAMP) browser

# the same installer as the pipeline's venv (uv when make env could install it, else pip), into this venv
$(SUPERSET_STAMP): dashboards/requirements.txt dashboards/constraints.txt | $(UV_STAMP)
	@test -x $(SUPERSET_VENV)/bin/python || $(PYTHON) -m venv $(SUPERSET_VENV)
	$(if $(wildcard $(BIN)/uv),$(BIN)/uv pip install --python $(SUPERSET_VENV)/bin/python,$(SUPERSET_VENV)/bin/pip install) \
	  --quiet -c dashboards/constraints.txt -r dashboards/requirements.txt
	@touch $@

# $(call apt_install,PACKAGE,WHAT NEEDS IT): Debian's PACKAGE through apt when root, else one line and exit 1
apt_install = { test "$$(id -u)" = 0 && apt-get update -qq \
	  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1) >/dev/null; } \
	  || { echo "cannot install $(1) (needs root and Debian's apt): run 'apt-get install $(1)' as root;" \
	            "$(2) is skipped until then" >&2; exit 1; }

## Debian's PostgreSQL server for the tests of Dagster's PostgreSQL storage (the test starts its own on loopback).
postgres-server:
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
	  || $(call apt_install,postgresql,tests/operations/test_postgres_storage.py)

postgres-server-try:
	@$(MAKE) --no-print-directory postgres-server || echo "warning: PostgreSQL's server could not be installed;" \
	  "tests/operations/test_postgres_storage.py will be skipped" >&2

## Debian's chromium for the browser test (playwright drives it; no browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || $(call apt_install,chromium,the browser test)

# make test goes on when the dashboards' tools cannot be installed: the browser test then skips, saying why
dashboard-env-try:
	@$(MAKE) --no-print-directory dashboard-env || echo "warning: the dashboards' Superset venv or chromium" \
	  "could not be installed; tests/dashboards will be skipped" >&2

## Serve the dashboards on http://127.0.0.1:8088 over the published warehouse (after `make demo`).
dashboard: $(SUPERSET_STAMP)
	$(SUPERSET_VENV)/bin/python dashboards/superset_ctl.py serve

lock-dashboards:
	rm -rf .venv-lock-dash && $(PYTHON) -m venv .venv-lock-dash \
	  && .venv-lock-dash/bin/pip install --quiet -r dashboards/requirements.txt \
	  && { echo "# Pinned versions of the dashboards' venv (make dashboard-env). Regenerate with 'make lock-dashboards'."; \
	       .venv-lock-dash/bin/pip freeze; } > dashboards/constraints.txt && rm -rf .venv-lock-dash
