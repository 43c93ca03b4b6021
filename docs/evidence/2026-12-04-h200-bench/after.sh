#!/bin/bash
# H200, one call, from the repository root, after the default jobs became the CPU count
# up to 16: `make validate` cold, the plan bench with the defaults (gate and bisect), and
# the gate with --jobs 12 once more (the spread between two cold runs)
export PYTHONUNBUFFERED=1
PY=$PWD/.venv/bin/python; L=/tmp/ba; mkdir -p $L
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > $L/setup.log 2>&1; tail -1 $L/setup.log
export XDG_CACHE_HOME=/tmp/xdg-validate
t make validate VALIDATE_OUT=/tmp/validate > $L/validate.log 2>&1; tail -4 $L/validate.log
t timeout 300 $PY bench/bench_plan.py --work /tmp/bpd --json $L/bench-plan.json > $L/bench-plan.txt 2>&1; cat $L/bench-plan.txt
t timeout 150 $PY bench/bench_plan.py --skip-bisect --gate-jobs 12 --work /tmp/bp12 --json $L/bench-plan-jobs12.json > $L/bench-plan-jobs12.txt 2>&1; cat $L/bench-plan-jobs12.txt
tar czf $OUT/ba.tgz -C /tmp ba; ls -la $OUT
