#!/bin/bash
# H200, one call, from the repository root: the plan bench (the release gate cold against
# its longest experiment; bisect of a 24-commit synthetic history with 1 and 3 probes a
# round), then the orchestrator bench without its baseline (where an attempt's time goes)
export PYTHONUNBUFFERED=1
PY=$PWD/.venv/bin/python; L=/tmp/bn; mkdir -p $L
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > $L/setup.log 2>&1; tail -1 $L/setup.log
t timeout 400 $PY bench/bench_plan.py --work /tmp/bp --json $L/bench-plan.json > $L/bench-plan.txt 2>&1; cat $L/bench-plan.txt
cp /tmp/bp/*.log $L/ 2>/dev/null
t timeout 170 $PY bench/bench_orchestrator.py --skip-baseline --work /tmp/bo --json $L/bench-orchestrator.json > $L/bench-orchestrator.txt 2>&1; tail -30 $L/bench-orchestrator.txt
tar czf $OUT/bn.tgz -C /tmp bn; ls -la $OUT
