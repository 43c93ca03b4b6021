#!/bin/bash
# H200, one call, from the repository root: the release gate cold (bench_plan.py's gate
# step, an empty cache each time) with --jobs 16 and 12, beside run.sh's default (8)
export PYTHONUNBUFFERED=1
PY=$PWD/.venv/bin/python; L=/tmp/bj; mkdir -p $L
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > $L/setup.log 2>&1; tail -1 $L/setup.log
for j in 16 12; do
  rm -rf /tmp/bp$j
  t timeout 250 $PY bench/bench_plan.py --skip-bisect --gate-jobs $j --work /tmp/bp$j --json $L/bench-plan-jobs$j.json > $L/bench-plan-jobs$j.txt 2>&1
  cat $L/bench-plan-jobs$j.txt; cp /tmp/bp$j/gate.log $L/gate-jobs$j.log
done
tar czf $OUT/bj.tgz -C /tmp bj; ls -la $OUT
