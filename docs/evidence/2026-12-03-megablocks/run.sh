#!/bin/bash
# H200, one call, from the repository root with build/megablocks (a clone at 78eea65) and
# build/wheelhouse (stanford-stk 0.7.1, numpy 2.0.2) carried along: set-up, the
# megablocks gate, the same bundle judged with ambient: fail, its report
export PYTHONUNBUFFERED=1
R=$PWD; PY=$R/.venv/bin/python; L=/tmp/mb; mkdir -p $L
E=docs/evidence/2026-12-03-megablocks
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > $L/setup.log 2>&1; tail -2 $L/setup.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton, pytest; print('torch', torch.__version__, 'triton', triton.__version__, 'pytest', pytest.__version__)"
python3 -c "import numpy; print('numpy', numpy.__version__)" 2>&1 | tail -1
# megablocks' package imports triton: without it, its pytest suite cannot import, and the
# ops are called straight from Python (megablocks-ops.yaml)
G=gate; python3 -c "import triton" 2>/dev/null || G=gate-ops; echo "gate: $G"
t timeout 420 $PY -m orchestrator gate $E/$G.yaml --backend compute-sanitizer --out /tmp/mg > $L/gate.log 2>&1
tail -60 $L/gate.log
B=$(ls -d /tmp/mg/*/ | head -1)
t $PY -m orchestrator gate $E/$G-ambient-fail.yaml --from $B --out /tmp/mf > $L/gate-ambient-fail.log 2>&1; tail -12 $L/gate-ambient-fail.log
t $PY -m orchestrator verify /tmp/mg --problems-only > $L/verify.log 2>&1; tail -3 $L/verify.log
cp /tmp/mg/gate.json $L/gate.json 2>/dev/null; cp /tmp/mg/report.md $L/report.md 2>/dev/null
cp /tmp/mf/gate.json $L/gate-ambient-fail.json 2>/dev/null
for v in fixed iota-temporary; do tail -40 $B/logs/build/$v.log > $L/build-$v.tail 2>/dev/null; done
tar czf $OUT/mb.tgz -C /tmp mb $(cd /tmp && ls -d mg/*/logs mg/*/results.json 2>/dev/null) 2>/dev/null; ls -la $OUT
