#!/bin/bash
# H200, one call, from the repository root: the plan bench (the release gate cold against
# its longest experiment, with the gate's child CPU split into builds and attempts and the
# CPU floor of any schedule; bisect of a 24-commit synthetic history, 1 and 3 probes a round)
export PYTHONUNBUFFERED=1
PY=$PWD/.venv/bin/python; L=/tmp/bn; mkdir -p $L
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > $L/setup.log 2>&1; tail -1 $L/setup.log
nproc; git log -1 --format=%h 2>/dev/null
t timeout 480 $PY bench/bench_plan.py --work /tmp/bp --json $L/bench-plan.json > $L/bench-plan.txt 2>&1; cat $L/bench-plan.txt
cp /tmp/bp/*.log $L/ 2>/dev/null
for r in /tmp/bp/gate/*/results.json; do $PY - "$r" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for b in r["builds"]:
    print(f"{r['experiment']['name'] if isinstance(r.get('experiment'), dict) else sys.argv[1].split('/')[-2]}: build {b['variant']} {b['kind']} cached={b['cached']} {b['duration']:.1f} s cpu {b['cpu']:.1f} s")
PY
done
tar czf $OUT/bn.tgz -C /tmp bn; ls -la $OUT
