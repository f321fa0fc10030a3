#!/bin/bash
# Where the CUDA fiber finder's time goes, input by input, on the lent GPU in one call: the
# bench's chunk timeline (kernel times and climb counts, --cuda-timeline 1), then Nsight
# Compute's per-kernel duration, instructions, occupancy and issue activity over one bench run
# of CUDA_VOXELS voxels (default 131072; printed a line per kernel, ncu_kernel_table.py), then
# (SOURCE_KERNEL, a regex) one kernel's SASS with
# instruction counts and stall samples on SOURCE_INPUT.  INPUTS: the bench's inputs (default
# real phantom wholebrain).  Needs .deps/ carried (scripts/device/make_deps.sh).  Logs in $OUT
# (more files than a device call brings back, 8: what matters is also printed).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. "$(dirname "$0")/build_dev.sh" tk-bench || exit 1
bench=(build-dev/bin/tk-bench fibers --backends cuda --sh2peaks off --tk-fibers off)
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size
for inp in ${INPUTS:-real phantom wholebrain}; do
  echo "== $inp"
  "${bench[@]}" --inputs $inp --accuracy-voxels 50 --repeat 1 --cuda-timeline 1 > "$OUT/timeline_$inp.out" 2> "$OUT/timeline_$inp.err"
  grep "^cuda" "$OUT/timeline_$inp.out"; grep "fibers chunk" "$OUT/timeline_$inp.err" | tail -3
  timeout 150 ncu --kernel-name regex:fibers_ --launch-count ${LAUNCHES:-40} --metrics $metrics --csv \
    "${bench[@]}" --inputs $inp --accuracy-voxels 10 --repeat 1 \
    --cuda-voxels ${CUDA_VOXELS:-131072} > "$OUT/ncu_$inp.csv" 2> "$OUT/ncu_$inp.err" || tail -3 "$OUT/ncu_$inp.err"
  python3 "$(dirname "$0")/ncu_kernel_table.py" "$OUT/ncu_$inp.csv"
done
if [ -n "${SOURCE_KERNEL:-}" ]; then
  timeout 200 ncu --kernel-name regex:"$SOURCE_KERNEL" --launch-skip ${SOURCE_SKIP:-2} --launch-count 1 --set full \
    --import-source yes -f -o "$OUT/source" "${bench[@]}" --inputs ${SOURCE_INPUT:-phantom} --accuracy-voxels 10 \
    --repeat 1 --cuda-voxels ${CUDA_VOXELS:-131072} \
    > "$OUT/source.log" 2>&1 || tail -5 "$OUT/source.log"
  ncu -i "$OUT/source.ncu-rep" --page details > "$OUT/source_details.txt" 2>&1
  ncu -i "$OUT/source.ncu-rep" --page source --csv --print-source sass > "$OUT/source_sass.csv" 2> "$OUT/source_sass.err"
  rm -f "$OUT/source.ncu-rep"
fi
