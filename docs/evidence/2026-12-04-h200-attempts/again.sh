#!/bin/bash
# H200, one call, from the repository root: the spread of the new figures (`make validate`
# cold once more) and the gate with 8 jobs (two OpenMP threads a child) beside the
# default 16 (one each)
export PYTHONUNBUFFERED=1
PY=$PWD/.venv/bin/python; L=/tmp/ag; mkdir -p $L
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > $L/setup.log 2>&1; tail -1 $L/setup.log
export XDG_CACHE_HOME=/tmp/xdg-validate2
t make validate VALIDATE_OUT=/tmp/validate2 > $L/validate-again.log 2>&1; tail -3 $L/validate-again.log
t timeout 150 $PY bench/bench_plan.py --skip-bisect --gate-jobs 8 --work /tmp/bp8 --json $L/bench-plan-jobs8.json > $L/bench-plan-jobs8.txt 2>&1; cat $L/bench-plan-jobs8.txt
t timeout 150 $PY bench/bench_plan.py --skip-bisect --work /tmp/bp16 --json $L/bench-plan-jobs16.json > $L/bench-plan-jobs16.txt 2>&1; cat $L/bench-plan-jobs16.txt
tar czf $OUT/ag.tgz -C /tmp ag; ls -la $OUT
