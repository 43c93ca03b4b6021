#!/bin/bash
# H200, one call, from the repository root, after each child gets its share of the CPUs
# as OMP_NUM_THREADS: `make validate` cold, the plan bench (gate and bisect) with the
# gate's attempts listed, and the orchestrator bench's phases of an attempt (no baseline)
export PYTHONUNBUFFERED=1
PY=$PWD/.venv/bin/python; L=/tmp/af; mkdir -p $L; D=docs/evidence/2026-12-04-h200-attempts
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > $L/setup.log 2>&1; tail -1 $L/setup.log
git log -1 --format=%h 2>/dev/null; env | grep -c OMP_NUM_THREADS
export XDG_CACHE_HOME=/tmp/xdg-validate
t make validate VALIDATE_OUT=/tmp/validate > $L/validate.log 2>&1; tail -3 $L/validate.log
$PY $D/dump.py /tmp/validate > $L/validate-attempts.txt; grep -c OMP_NUM_THREADS /tmp/validate/*/results.json
t timeout 260 $PY bench/bench_plan.py --work /tmp/bp --json $L/bench-plan.json > $L/bench-plan.txt 2>&1; cat $L/bench-plan.txt
$PY $D/dump.py /tmp/bp/gate > $L/bench-gate-attempts.txt; cat $L/bench-gate-attempts.txt
t timeout 170 $PY bench/bench_orchestrator.py --skip-baseline --work /tmp/bo --json $L/bench-orchestrator.json > $L/bench-orchestrator.txt 2>&1; tail -30 $L/bench-orchestrator.txt
tar czf $OUT/af.tgz -C /tmp af; ls -la $OUT
