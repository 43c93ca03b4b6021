#!/bin/bash
# H200, one call, from the repository root: where a gate's attempts spend their wall and
# CPU seconds (per build and per launch, with the launches' phases), with the host's
# thread defaults and with one OpenMP thread per launch; the fixed cost of one process
# (import torch, a CUDA context) plainly and under memcheck
export PYTHONUNBUFFERED=1
PY=$PWD/.venv/bin/python; L=/tmp/at; mkdir -p $L; D=docs/evidence/2026-12-04-h200-attempts
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > $L/setup.log 2>&1; tail -1 $L/setup.log
nproc; nvidia-smi --query-gpu=name,persistence_mode --format=csv
t $PY -m orchestrator gate configs/release-gate.yaml --out /tmp/g1 --cache-dir /tmp/c1 > $L/gate-default.log 2>&1; tail -2 $L/gate-default.log
$PY $D/dump.py /tmp/g1 > $L/attempts-default.txt; cat $L/attempts-default.txt
t env OMP_NUM_THREADS=1 $PY -m orchestrator gate configs/release-gate.yaml --out /tmp/g2 --cache-dir /tmp/c2 > $L/gate-omp1.log 2>&1; tail -2 $L/gate-omp1.log
$PY $D/dump.py /tmp/g2 > $L/attempts-omp1.txt; cat $L/attempts-omp1.txt
CS=/usr/local/cuda/bin/compute-sanitizer
for i in 1 2; do
  /usr/bin/time -f "%e s wall %U user %S sys: python -c pass" $PY -c pass
  /usr/bin/time -f "%e s wall %U user %S sys: import torch" $PY -c "import torch"
  /usr/bin/time -f "%e s wall %U user %S sys: import torch, cuda context" $PY -c "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"
  /usr/bin/time -f "%e s wall %U user %S sys: memcheck python -c pass" $CS --tool memcheck $PY -c pass >/dev/null
  /usr/bin/time -f "%e s wall %U user %S sys: memcheck import torch" $CS --tool memcheck $PY -c "import torch" > /dev/null
  /usr/bin/time -f "%e s wall %U user %S sys: memcheck import torch, cuda context" $CS --tool memcheck $PY -c "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()" > /dev/null
  /usr/bin/time -f "%e s wall %U user %S sys: memcheck cuda context, os._exit" $CS --tool memcheck $PY -c "import torch, os; torch.zeros(1, device='cuda'); torch.cuda.synchronize(); os._exit(0)" > /dev/null
done 2>&1 | tee $L/fixed.txt
cp -r /tmp/g1 $L/g1-bundles; rm -rf $L/g1-bundles/*/builds
tar czf $OUT/at.tgz -C /tmp at; ls -la $OUT
