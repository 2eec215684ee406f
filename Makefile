# One entry point for people and CI. `make test` sets everything up (a virtual environment with the
# package, its test extras and the BFCL adapter's data package) and runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.budgetgym-installed

.PHONY: setup coding-deps test demo bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,swebench]'
	# bfcl-eval pins an old numpy and pulls torch; its multi-turn executor and data need neither.
	$(BIN)/python -m pip install -q --no-deps bfcl-eval mpmath
	touch $(STAMP)

setup: $(STAMP)

# The coding family's sandboxes, as root: bubblewrap, a Docker engine (started when not running) and
# the locally built test image (debootstrap + docker import, once; skipped when it exists).
coding-deps: setup
	@if [ "$$(id -u)" = 0 ]; then \
	  missing=""; for p in bubblewrap docker.io debootstrap; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then apt-get update -q && apt-get install -y -q -o DPkg::Lock::Timeout=600 $$missing; fi; \
	  if ! docker info >/dev/null 2>&1; then (dockerd >/var/log/budgetgym-dockerd.log 2>&1 &); \
	    for i in $$(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done; fi; \
	  $(BIN)/python -m budgetgym.envs.coding.image || echo "WARNING: the coding image did not build: its tests will skip, saying why"; \
	else echo "not root: the coding tests use whatever bubblewrap and Docker engine are already here"; fi

test: setup coding-deps
	$(BIN)/python -m pytest -q

demo: setup
	$(BIN)/budgetgym eval --agent noisy-oracle --out runs/demo

bench: setup
	@for script in benchmarks/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
