# rank-pipeline: the quick start is `make demo` then `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: env demo test test-fast dev sandbox bench bench-extract bench-models lint lock docs clean

env: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $@

$(VENV)/.installed-bench: $(STAMP)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev,bench]'
	@touch $@

## Run the daily job for 7 simulated days against the embedded sandbox.
demo: env
	$(BIN)/rank-pipeline demo --days 7

## The whole test suite.
test: env
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q

## Open the Dagster UI on http://127.0.0.1:3000 (embedded sandbox unless RANK_TRACKER_BASE_URL is set).
## It lists the runs of `make demo` / `rank-pipeline run` (same DAGSTER_HOME, default data/dagster_home).
dev: env
	export DAGSTER_HOME=$${DAGSTER_HOME:-$(CURDIR)/data/dagster_home} && $(BIN)/python -m rank_pipeline.defs.instance \
	  && $(BIN)/dagster dev -w workspace.yaml

## Serve the sandbox API on http://127.0.0.1:8765 for trying by hand.
sandbox: env
	$(BIN)/rank-pipeline sandbox --port 8765

bench: bench-extract bench-models

bench-extract: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/extract.py

bench-models: env
	$(BIN)/python benchmarks/models.py

lint: env
	$(BIN)/ruff check .

docs: env
	$(BIN)/rank-pipeline docs

lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock && .venv-lock/bin/pip install --quiet -e '.[dev,bench]' \
	  && { echo "# Pinned versions used by every install (make env / make bench). Regenerate with 'make lock'."; \
	       .venv-lock/bin/pip freeze --exclude-editable; } > constraints.txt && rm -rf .venv-lock

clean:
	rm -rf data/snapshots data/warehouse*.duckdb* data/dagster_home
