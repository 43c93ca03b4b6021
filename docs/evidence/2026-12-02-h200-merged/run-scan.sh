#!/bin/bash
export PYTHONUNBUFFERED=1
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > /tmp/setup.log 2>&1; tail -1 /tmp/setup.log
t timeout 150 .venv/bin/python -m orchestrator scan --source ext --build jit --out /tmp/s2 -- pytest tests/regression/test_rng_ownership.py -k "not fused" --qext-device cuda > $OUT/scan-qext.txt 2>&1
tail -40 $OUT/scan-qext.txt
ls /tmp/s2/logs/*/*/*/ 2>/dev/null | head
