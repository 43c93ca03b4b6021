#!/usr/bin/env bash
# Multi-GPU fan-out evidence on a host with two or more GPUs (issue #13): the RNG
# experiment replicated on GPUs 0 and 1, then on GPU 0 alone and sharded over 0,1 with a
# warm build cache, so that the one-GPU vs shard wall times are a ratio from one run.
# Writes the outputs, each bundle's report and a tarball of the bundles to OUT.
#   bash tools/fanout_evidence.sh OUT [CONFIG]
set -uo pipefail
OUT=${1:?usage: fanout_evidence.sh OUT [CONFIG]}
CONFIG=${2:-configs/nvfp4-rng-ownership.yaml}
mkdir -p "$OUT"
PY=${PY:-.venv/bin/python}
RES=${RES:-results/fanout-$(date +%Y%m%d-%H%M%S)}
export COLUMNS=200 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,driver_version --format=csv >"$OUT/gpus.csv"

run() {  # NAME ARGS...: one csorch run, its output, exit status and wall time
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$PY" -m orchestrator run "$CONFIG" --out "$RES/$name" "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  local wall; wall=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
  echo -e "$name\t$rc\t$wall\t$*" | tee -a "$OUT/walls.tsv"
  "$PY" -m orchestrator report "$RES/$name" --format markdown --output "$OUT/$name.md" >/dev/null 2>&1
}

echo -e "run\texit\twall_s\targs" >"$OUT/walls.tsv"
run replicate --devices 0,1 --fanout replicate  # cold: builds the three variants
run one-gpu --devices 0
run shard --devices 0,1 --fanout shard
python3 - "$OUT/walls.tsv" <<'PY'
import csv, sys
rows = {r["run"]: float(r["wall_s"]) for r in csv.DictReader(open(sys.argv[1]), delimiter="\t")}
print(f"one GPU / shard over two: {rows['one-gpu'] / rows['shard']:.2f}x")
PY
tar czf "$OUT/bundles.tgz" "$RES"
