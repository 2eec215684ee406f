# One entry point for people and CI. `make test` sets everything up (a virtual environment with the
# package, its test extras and the BFCL adapter's data package) and runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.budgetgym-installed

.PHONY: setup test demo bench study clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	# TextWorld's Jericho engine is built from source: it needs a C compiler and make.
	@if [ "$$(id -u)" = 0 ] && ! { command -v gcc && command -v make; } >/dev/null 2>&1; then \
		apt-get install -y -o DPkg::Lock::Timeout=600 build-essential; fi
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	# bfcl-eval pins an old numpy and pulls torch; its multi-turn executor and data need neither.
	$(BIN)/python -m pip install -q --no-deps bfcl-eval mpmath
	touch $(STAMP)

setup: $(STAMP)

test: setup
	$(BIN)/python -m pytest -q

demo: setup
	$(BIN)/budgetgym eval --agent noisy-oracle --out runs/demo

study: setup
	$(BIN)/budgetgym study --out runs/study

bench: setup
	@for script in benchmarks/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
