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

.PHONY: help setup slurm-deps validate test fuzz bench bench-qext bench-orchestrator \
	bench-parser bench-plan bench-builds bench-flood lint clean test-fast html-check

help:
	@echo "make validate   the main job: the release gate (builds everything it needs)"
	@echo "make test       set up and run the test suite"
	@echo "make test-fast  the pure-logic tests only: no build, no child process (under a minute)"
	@echo "make fuzz       long fuzzing of the log parsers, config loaders and hostile subjects (about an hour on 2 cores)"
	@echo "make bench      qext kernels, csorch's overhead, baseline and warm-rerun ratios, the gate and bisect plans, the compile cache"
	@echo "make bench-qext / bench-orchestrator / bench-parser / bench-plan / bench-builds   one of the five"
	@echo "make bench-flood  ASan report floods, printed vs folded (CPU machine; ~10 minutes)"
	@echo "make setup      virtual environment + qext built in place (idempotent)"
	@echo "make html-check the HTML report checked in headless chromium at 1280 and 390 px, with screenshots"
	@echo "make lint       ruff, if installed"
	@echo "make slurm-deps Debian's Slurm and munge for the real-Slurm tests (as root; quick when present)"

setup: $(SETUP_STAMP) $(EXT_LIB)

$(SETUP_STAMP): pyproject.toml tools/setup_venv.sh
	bash tools/setup_venv.sh "$(PYTHON)" "$(VENV)"
	@touch $@

# ninja makes the build itself incremental; the file date keeps a no-op run instant.
$(EXT_LIB): $(SETUP_STAMP) $(EXT_INPUTS)
	$(PY) ext/qext/build.py --build-dir build/qext --inplace

# the release gate on the best backend present (compute-sanitizer on a GPU host, else
# ASan); exit 0 pass, 1 fail, 3 inconclusive. Bundles, gate.json and report.md in VALIDATE_OUT.
# The attempts are sharded over every GPU of the host (VALIDATE_DEVICES=0 keeps one).
# VALIDATE_RESUME=DIR continues a gate that was killed or interrupted in DIR instead.
# VALIDATE_CARRY=DIR carries the verdicts of the gate in DIR where nothing executable
# changed since (csorch gate --carry-from; docs/your-extension.md).
VALIDATE_CARRY ?=
VALIDATE_OUT ?= results/validate-$(shell date +%Y%m%d-%H%M%S)
VALIDATE_DEVICES ?= all
VALIDATE_RESUME ?=
validate: setup
ifeq ($(strip $(VALIDATE_RESUME)),)
	$(PY) -m orchestrator gate configs/release-gate.yaml --backend auto \
		--devices $(VALIDATE_DEVICES) --out $(VALIDATE_OUT) \
		$(if $(strip $(VALIDATE_CARRY)),--carry-from $(VALIDATE_CARRY))
else
	$(PY) -m orchestrator gate --resume $(VALIDATE_RESUME)
endif

# the real-Slurm tests (tests/e2e/test_run_slurm.py) start their own slurmctld/slurmd/munged;
# this only installs the packages (root + apt), else says why those tests will skip
slurm-deps:
	bash tools/slurm_deps.sh

# the slowest tests are listed at the end: CI has a 15-minute budget to keep. With
# pytest-xdist present (the CPU set-up installs it; the offline GPU host may lack it), the
# suite runs on TEST_JOBS workers, each test file on one worker (its module fixtures, the
# real builds, are made once); without it, in one process. TEST_JOBS=1: one process.
TEST_JOBS ?= 2
test: setup slurm-deps
	@xdist=""; \
	if [ "$(TEST_JOBS)" -gt 1 ] && $(PY) -c "import xdist" 2>/dev/null; then \
		xdist="-n $(TEST_JOBS) --dist loadfile"; \
	fi; \
	echo "$(PY) -m pytest $$xdist --durations=25 $(PYTEST_ARGS)"; \
	$(PY) -m pytest $$xdist --durations=25 $(PYTEST_ARGS)

# the pure-logic tier: tests/unit without the `process` mark (tests/unit/conftest.py fails
# any unmarked test that starts a child, so the tier stays pure), then the pipelines' fast
# tier (run and gate over a recorded backend: `sh` children, no compiler, seconds)
FAST_PIPELINES := tests/unit/run/test_runner_fast.py tests/unit/gate/test_pipeline_fast.py
test-fast: setup
	$(PY) -m pytest tests/unit -m "not process" -q -p no:cacheprovider $(PYTEST_ARGS)
	$(PY) -m pytest $(FAST_PIPELINES) -q -p no:cacheprovider $(PYTEST_ARGS)

# the parsers and config loaders under hypothesis's long profile (>= 100,000 inputs per
# parser, fresh random each time; CI runs the quick profile inside `make test`), then
# the measured check that parse time is linear in input size, then the generative hostile
# suite's long profile (hostile-fuzz: 100 fresh subjects, trees and bundles per test, each
# a real run; about 15 minutes on 2 cores)
fuzz: setup
	$(PY) -m pytest tests/fuzz -p no:cacheprovider --hypothesis-profile fuzz -q $(PYTEST_ARGS)
	$(PY) tools/fuzz_linear.py
	$(PY) -m pytest tests/hostile/generative -p no:cacheprovider --hypothesis-profile hostile-fuzz -q \
		$(PYTEST_ARGS)

bench: setup
	$(PY) bench/bench_qext.py --json results/bench-qext.json
	$(PY) bench/bench_orchestrator.py --json results/bench-orchestrator.json
	$(PY) bench/bench_parser.py --json results/bench-parser.json
	$(PY) bench/bench_plan.py --json results/bench-plan.json
	$(PY) bench/bench_builds.py --json results/bench-builds.json

bench-qext: setup
	$(PY) bench/bench_qext.py --json results/bench-qext.json

bench-orchestrator: setup
	$(PY) bench/bench_orchestrator.py --json results/bench-orchestrator.json

bench-parser: setup
	$(PY) bench/bench_parser.py --json results/bench-parser.json

# the gate as one plan against its longest experiment, and bisect with --probes 3 vs 1
bench-plan: setup
	$(PY) bench/bench_plan.py --json results/bench-plan.json

# the compile cache's ratios (a cold build, one file changed, a test-only edit, bisect
# probes); BENCH_BUILDS_ARGS=--gate adds the gate before / after (minutes on a CPU host)
bench-builds: setup
	$(PY) bench/bench_builds.py --json results/bench-builds.json $(BENCH_BUILDS_ARGS)

# not part of `bench`: the ASan qext builds and the printed flood take minutes on a CPU
bench-flood: setup
	$(PY) bench/bench_flood.py --json results/bench-flood.json

# the HTML report (csorch report -f html) opened in a real headless browser (Debian's
# chromium, no network), its DOM checked, laid out at 1280 and 390 px (no wider than
# either window) and a trimmed screenshot taken at each; skips with a message where
# chromium is absent. HTML_BUNDLE: the bundle or gate directory to show (default: the C
# subject's no-fix experiment under ASan, made in seconds). Run after `make setup`.
HTML_BUNDLE ?=
HTML_OUT ?= results/html-check
html-check:
	@mkdir -p $(HTML_OUT)
	@if [ -z "$(HTML_BUNDLE)" ]; then \
		rm -rf $(HTML_OUT)/bundle; \
		$(PY) -m orchestrator run tests/fixtures/e2e/c-oob-nofix.yaml --backend asan \
			--out $(HTML_OUT)/bundle > $(HTML_OUT)/run.log 2>&1; \
		test $$? -le 1 || { cat $(HTML_OUT)/run.log; exit 1; }; \
	fi
	$(PY) -m orchestrator report $(or $(HTML_BUNDLE),$(HTML_OUT)/bundle) -f html \
		-o $(HTML_OUT)/report.html
	$(PY) tools/html_check.py $(HTML_OUT)/report.html $(HTML_OUT)/report.png

lint: setup
	$(PY) -m ruff check orchestrator ext/qext tests bench

clean:
	rm -rf build results $(EXT_LIB)
