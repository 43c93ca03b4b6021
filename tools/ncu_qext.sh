#!/usr/bin/env bash
# Nsight Compute over one quantize call of each qext bench case (bench/profile_qext.py),
# on a GPU host: per kernel, duration, DRAM bytes, instructions, throughputs, occupancy
# and warp stalls. Clocks and caches are left as the application leaves them
# (--clock-control none --cache-control none), so the figures match `make bench-qext`.
# usage: tools/ncu_qext.sh OUTDIR [profile_qext.py args...]
set -euo pipefail
OUTDIR=${1:?usage: ncu_qext.sh OUTDIR [profile_qext.py args]}
shift
mkdir -p "$OUTDIR"
PY=${PY:-.venv/bin/python}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,\
smsp__inst_executed.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,\
smsp__issue_active.avg.pct_of_peak_sustained_active,\
sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,\
lts__t_sector_hit_rate.pct,launch__grid_size,launch__block_size
"$NCU" --profile-from-start off --target-processes all --clock-control none \
  --cache-control none --metrics "$METRICS" --csv --page raw \
  "$PY" bench/profile_qext.py "$@" > "$OUTDIR/ncu-metrics.csv"
"$NCU" --profile-from-start off --target-processes all --clock-control none \
  --cache-control none --kernel-name regex:'tile|mxfp8|amax' \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
  --section WarpStateStats --section InstructionStats --section ComputeWorkloadAnalysis \
  --section MemoryWorkloadAnalysis \
  "$PY" bench/profile_qext.py "$@" > "$OUTDIR/ncu-details.txt"
echo "wrote $OUTDIR/ncu-metrics.csv and $OUTDIR/ncu-details.txt"
