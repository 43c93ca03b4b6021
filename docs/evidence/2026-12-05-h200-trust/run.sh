#!/bin/bash
# GPU host, one call, from the repository root: `make validate` from an empty build cache
# after "Trust by construction" (every build and attempt sandboxed, every compile and link
# through csorch's compiler wrappers, one way to a file, hostile strings refused), then
# the reports of one bundle in every format and `doctor --json`.
export PYTHONUNBUFFERED=1
L=/tmp/tr; mkdir -p $L
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > $L/setup.log 2>&1; tail -2 $L/setup.log
PY=.venv/bin/python; [ -x $PY ] || PY=python3
nvidia-smi --query-gpu=name --format=csv,noheader > $L/gpu.txt 2>&1; cat $L/gpu.txt
$PY -m orchestrator doctor --json > $L/doctor.json 2>&1; grep -A1 '"sandbox"' $L/doctor.json | head -3
XDG_CACHE_HOME=/tmp/xdg-tr t make validate VALIDATE_OUT=/tmp/validate-tr > $L/validate.log 2>&1
tail -8 $L/validate.log
cp /tmp/validate-tr/gate.json /tmp/validate-tr/report.md $L/ 2>/dev/null
B=$(ls -d /tmp/validate-tr/*/ | head -1)
for f in github junit sarif; do $PY -m orchestrator report "$B" -f $f -o $L/report.$f > /dev/null 2>&1; echo "report -f $f: rc=$?"; done
$PY -m orchestrator verify "$B" > $L/verify.txt 2>&1; echo "verify rc=$?"; head -2 $L/verify.txt
# the compile units each build recorded (per-unit instrumentation's evidence)
for d in /tmp/validate-tr/*/; do $PY -c "import json,sys; r=json.load(open(sys.argv[1]+'results.json')); print(sys.argv[1], [(b['variant'], len(b.get('units', []))) for b in r['builds']])" "$d"; done > $L/units.txt 2>&1; cat $L/units.txt
grep -rlE "straggler|Read-only file system|sandbox:" /tmp/validate-tr 2>/dev/null | head -20 > $L/ro-hits.txt; wc -l < $L/ro-hits.txt
tar czf $OUT/tr.tgz -C /tmp tr; ls -la $OUT
