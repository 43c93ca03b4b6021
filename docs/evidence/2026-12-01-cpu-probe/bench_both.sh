#!/bin/bash
# bench_orchestrator.py before/after, interleaved, on c-oob and the slow-build copy
PY=/work/main/.venv/bin/python
for rep in 1 2; do
for cfg in /work/wt-probe/tests/fixtures/e2e/c-oob.yaml /tmp/probe-bench/slow/c-oob-slowbuild.yaml; do
for tree in /tmp/probe-bench/before /work/wt-probe; do
  name=$(basename $tree)-$(basename $cfg .yaml)-$rep
  echo "=== $name load $(cut -d' ' -f1-3 /proc/loadavg)"
  PYTHONDONTWRITEBYTECODE=1 $PY $tree/bench/bench_orchestrator.py --config $cfg --backend asan --skip-baseline --json /tmp/probe-bench/$name.json 2>&1 | grep -E "csorch cold|critical|overhead|warm wall|bench:" 
  echo "    load after $(cut -d' ' -f1-3 /proc/loadavg)"
done; done; done
