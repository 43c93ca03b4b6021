#!/bin/bash
# H200, one call: set-up, the release gate, a third-party CUDA extension's gate, a scan
export PYTHONUNBUFFERED=1
R=$PWD; PY=$R/.venv/bin/python; L=/tmp/h200a; mkdir -p $L
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > $L/setup.log 2>&1; tail -2 $L/setup.log
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# the defective release wheel of pytorch/extension-cpp, built while the gate runs
( rm -rf /tmp/rel && git clone -q build/extension-cpp /tmp/rel && cd /tmp/rel && git checkout -q 0ec4969 \
  && patch -p1 -s < $R/docs/evidence/2026-12-02-userext-cuda/muladd-cu-temporary-copy.patch \
  && mkdir -p $R/build/release && python3 -m pip wheel -q --no-deps --no-build-isolation -w $R/build/release . ) > $L/release-wheel.log 2>&1 &
t timeout 200 make validate VALIDATE_OUT=/tmp/v > $L/validate.log 2>&1; tail -25 $L/validate.log
t $PY -m orchestrator verify /tmp/v --problems-only > $L/verify.log 2>&1; tail -3 $L/verify.log
wait; ls -la build/release | tail -2
E=docs/evidence/2026-12-02-userext-cuda
t timeout 230 $PY -m orchestrator gate $E/gate.yaml --backend compute-sanitizer --out /tmp/ge > $L/ecpp-gate.log 2>&1; tail -45 $L/ecpp-gate.log
B=$(ls -d /tmp/ge/*/ | head -1)
t $PY -m orchestrator gate $E/gate-ambient-fail.yaml --from $B --out /tmp/gf > $L/ecpp-gate-fail.log 2>&1; tail -12 $L/ecpp-gate-fail.log
t $PY -m orchestrator report /tmp/v/nvfp4-rng-ownership -f sarif -o $L/qext.sarif; grep -o '"uri": "[^"]*"' $L/qext.sarif | sort | uniq -c | head
cp /tmp/v/gate.json $L/validate-gate.json; cp /tmp/v/report.md $L/validate-report.md; cp /tmp/ge/gate.json $L/ecpp-gate.json; cp /tmp/ge/report.md $L/ecpp-report.md 2>/dev/null
cp /tmp/gf/gate.json $L/ecpp-gate-fail.json 2>/dev/null
tar czf $OUT/h200a.tgz -C /tmp h200a $(cd /tmp && ls -d ge/*/logs 2>/dev/null | head -1) 2>/dev/null; ls -la $OUT
