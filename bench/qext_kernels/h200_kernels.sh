#!/usr/bin/env bash
# One GPU-machine call for a qext kernel change: before/after timings of the kernels
# alone, the exhaustive E2M1 check, qext built, the CUDA-vs-CPU tests (test_cuda.py, test_cuda_inputs.py),
# `bench_qext.py`, and Nsight Compute metrics of one call per bench case.
#
# Run from the root of a checkout of the BEFORE tree, with the AFTER tree's ext/ and
# bench/ in $CARRY (default .carry/kern): the "before" binaries are built from the tree
# as it is, then the carried files are copied over it.
#   bash .carry/kern/bench/qext_kernels/h200_kernels.sh "$OUT"
# Writes machine.txt, log.txt, micro.txt, test-cuda.txt, extra.txt, bench.txt,
# bench.json and ncu.csv into OUT (the GPU tool returns at most 8 files).
set -uo pipefail
OUT=${1:?usage: h200_kernels.sh OUTDIR}
CARRY=${CARRY:-.carry/kern}
B=$(mktemp -d)
NVCC="nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 --fmad=false"
Q=$CARRY/bench/qext_kernels
LOG=$OUT/log.txt
stamp() { echo "[$(date +%T)] $*" | tee -a "$LOG"; }

{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1; python3 -c 'import torch; print("torch", torch.__version__)'
  git log --oneline -1; echo "carried: $(cat "$CARRY/COMMIT" 2>/dev/null)"; } > "$OUT/machine.txt" 2>&1

stamp "before: build the kernels of the tree as sent"
$NVCC -I ext/csrc -DVARIANT=0 $Q/tile_ceiling.cu ext/csrc/cuda/amax.cu ext/csrc/common/tensor.cpp \
  -o "$B/tile_before" >> "$LOG" 2>&1 &
$NVCC -I ext/csrc $Q/mxfp8_time.cu ext/csrc/cuda/mxfp8.cu ext/csrc/common/tensor.cpp \
  -o "$B/mxfp8_before" >> "$LOG" 2>&1 &
wait
cp -r "$CARRY/ext/." ext/ && cp -r "$CARRY/bench/." bench/
stamp "after: make setup in the background, the kernels alone meanwhile"
( make setup > "$B/setup.txt" 2>&1; echo "make setup rc=$?" >> "$B/setup.txt" ) &
SETUP=$!
pids=()
$NVCC -I ext/csrc $Q/exhaustive.cu -o "$B/exhaustive" >> "$LOG" 2>&1 & pids+=($!)
for v in 0 1; do
  $NVCC -I ext/csrc -DVARIANT=$v $Q/tile_ceiling.cu ext/csrc/cuda/amax.cu ext/csrc/common/tensor.cpp \
    -o "$B/tile_after$v" >> "$LOG" 2>&1 & pids+=($!)
done
# MXFP8 with kRows (rows per lane) 16 and 8: the kernel's setting, and the other one
for r in 16 8; do
  sed "s/^constexpr int kRows = [0-9]*;/constexpr int kRows = $r;/" ext/csrc/cuda/mxfp8.cu > "$B/mxfp8_r$r.cu"
  $NVCC -I ext/csrc -I ext/csrc/cuda $Q/mxfp8_time.cu "$B/mxfp8_r$r.cu" ext/csrc/common/tensor.cpp \
    -o "$B/mxfp8_r$r" >> "$LOG" 2>&1 & pids+=($!)
done
wait "${pids[@]}"
stamp "kernels built"
{
  "$B/exhaustive"; echo "exhaustive rc=$?"
  for b in tile_before tile_after0 tile_after1; do echo "== $b"; "$B/$b"; done
  "$B/mxfp8_before" "MXFP8 before"
  "$B/mxfp8_r16" "MXFP8 kRows=16"
  "$B/mxfp8_r8" "MXFP8 kRows=8"
} > "$OUT/micro.txt" 2>&1
stamp "micro done"; cat "$OUT/micro.txt"
wait $SETUP
cat "$B/setup.txt" >> "$LOG"; tail -1 "$B/setup.txt"
stamp "test_cuda"
XDIST=$(.venv/bin/python -c 'import xdist' 2>/dev/null && echo "-n 8")
.venv/bin/python -m pytest -q -p no:cacheprovider $XDIST tests/ext/test_cuda.py > "$OUT/test-cuda.txt" 2>&1
echo "test_cuda rc=$?"; tail -3 "$OUT/test-cuda.txt"
stamp "CUDA == CPU on stranger inputs (tests/ext/test_cuda_inputs.py)"
.venv/bin/python -m pytest -q -p no:cacheprovider $XDIST tests/ext/test_cuda_inputs.py > "$OUT/extra.txt" 2>&1
echo "extra rc=$?"; tail -3 "$OUT/extra.txt"
stamp "bench_qext"
.venv/bin/python bench/bench_qext.py --no-reference --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
cat "$OUT/bench.txt"
stamp "ncu (one call per case, clocks and caches as the application leaves them)"
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,\
smsp__inst_executed.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,\
smsp__issue_active.avg.pct_of_peak_sustained_active,\
sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,\
l1tex__throughput.avg.pct_of_peak_sustained_active
timeout 120 ncu --profile-from-start off --target-processes all --clock-control none \
  --cache-control none --metrics "$METRICS" --csv --page raw \
  .venv/bin/python bench/profile_qext.py > "$OUT/ncu.csv" 2>> "$LOG"
echo "ncu rc=$?"
stamp "done"
