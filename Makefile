# nsys-diag — every target sets up what it needs itself (a local virtualenv in .venv).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP  := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help venv demo test lint samples dist-check bench fuzz clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# The runtime install (what `nsys-diag analyze` needs) and the dev tools on top of it.
$(RUNTIME_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	@touch $(RUNTIME_STAMP)

$(STAMP): $(RUNTIME_STAMP)
	$(PY) -m pip install -q -e '.[dev,browser]'
	@touch $(STAMP)

venv: $(STAMP) ## Create .venv with nsys-diag (editable) and the dev tools

demo: $(RUNTIME_STAMP) ## Analyze the embedded sample trace (runtime deps only); writes build/demo/
	@mkdir -p build/demo
	$(VENV)/bin/nsys-diag analyze sample_traces/worked_example.sqlite \
	    -o build/demo/worked_example.html --json build/demo/worked_example.json
	@echo "open build/demo/worked_example.html"
	@echo "run it yourself: $(VENV)/bin/nsys-diag analyze YOUR_TRACE.sqlite  (or: . $(VENV)/bin/activate)"

# ~3,280 tests: about 10–17 minutes on 2 cores. pytest-xdist (in the dev extra) runs them in parallel
# only on >= 4 cores: on 2 cores the extra worker start-up and fixture set-up made it slower.
test: $(STAMP) ## Run the test suite, ~10–17 min on 2 cores (skips ../shared tests cleanly when absent)
	@jobs=$$($(PY) -c "import os, xdist; print('-n auto' if (os.cpu_count() or 1) >= 4 else '')" 2>/dev/null); \
	echo "make test: ~3,280 tests, about 10–17 minutes on 2 cores$${jobs:+, in parallel ($$jobs)}; progress as [done/total]"; \
	$(PY) -m pytest -q -o console_output_style=count $$jobs

lint: $(STAMP) ## ruff on the whole tree, mypy on the whole package
	$(VENV)/bin/ruff check nsys_diag tests bench scripts
	$(VENV)/bin/mypy

samples: $(STAMP) ## Regenerate sample_traces/ from nsys_diag/synth/
	$(PY) -m nsys_diag.synth --write-samples sample_traces

dist-check: $(STAMP) ## Build the wheel, install it in a fresh venv, check templates ship, run it
	bash scripts/dist_check.sh

bench: $(STAMP) ## Benchmark analyze vs the Arrow floor, naive pandas and nsys-ai (not in make test)
	$(PY) bench/run_bench.py

fuzz: $(STAMP) ## Time-bounded fuzzing of every loader (FUZZ_SECONDS=300); crashes saved as regressions
	$(PY) tests/fuzz/run_fuzz.py --seconds $${FUZZ_SECONDS:-300}

clean: ## Remove build outputs and the venv
	rm -rf build dist $(VENV) .pytest_cache
