# csorch: set-up, the main job, tests, benchmarks. `make setup` is idempotent; validate,
# test and bench depend on it, so each of them works on a fresh machine.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(abspath $(VENV))/bin/python
SETUP_STAMP := $(VENV)/.csorch-setup
EXT_LIB := ext/qext/_C.so
EXT_INPUTS := $(shell find ext/csrc -type f) ext/qext/build.py
PYTEST_ARGS ?=

.PHONY: help setup validate test fuzz bench bench-qext bench-orchestrator lint clean

help:
	@echo "make validate   the main job: the release gate (builds everything it needs)"
	@echo "make test       set up and run the test suite"
	@echo "make fuzz       long fuzzing of the log parsers and config loaders (minutes)"
	@echo "make bench      qext kernels, then csorch's overhead, baseline and warm-rerun ratios"
	@echo "make bench-qext / bench-orchestrator   one of the two"
	@echo "make setup      virtual environment + qext built in place (idempotent)"
	@echo "make lint       ruff, if installed"

setup: $(SETUP_STAMP) $(EXT_LIB)

$(SETUP_STAMP): pyproject.toml tools/setup_venv.sh
	bash tools/setup_venv.sh "$(PYTHON)" "$(VENV)"
	@touch $@

# ninja makes the build itself incremental; the file date keeps a no-op run instant.
$(EXT_LIB): $(SETUP_STAMP) $(EXT_INPUTS)
	$(PY) ext/qext/build.py --build-dir build/qext --inplace

# the release gate on the best backend present (compute-sanitizer on a GPU host, else
# ASan); exit 0 pass, 1 fail, 3 inconclusive. Bundles, gate.json and report.md in VALIDATE_OUT.
VALIDATE_OUT ?= results/validate-$(shell date +%Y%m%d-%H%M%S)
validate: setup
	$(PY) -m orchestrator gate configs/release-gate.yaml --backend auto --out $(VALIDATE_OUT)

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

# the parsers and config loaders under hypothesis's long profile (>= 100,000 inputs per
# parser, fresh random each time; CI runs the quick profile inside `make test`), then
# the measured check that parse time is linear in input size
fuzz: setup
	$(PY) -m pytest tests/fuzz -p no:cacheprovider --hypothesis-profile fuzz -q $(PYTEST_ARGS)
	$(PY) tools/fuzz_linear.py

bench: setup
	$(PY) bench/bench_qext.py --json results/bench-qext.json
	$(PY) bench/bench_orchestrator.py --json results/bench-orchestrator.json

bench-qext: setup
	$(PY) bench/bench_qext.py --json results/bench-qext.json

bench-orchestrator: setup
	$(PY) bench/bench_orchestrator.py --json results/bench-orchestrator.json

lint: setup
	$(PY) -m ruff check orchestrator ext/qext tests bench

clean:
	rm -rf build results $(EXT_LIB)
