#!/bin/bash
# Device-side eig profile: build tk-bench, then Nsight Compute on the eig kernel at each n of
# PROFILE (default "5 10 30") with the sections that say where the issue slots go; a SASS
# listing with per-instruction stall samples for the last n.  Summaries on stdout, reports under $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. "$(dirname "$0")/build_dev.sh" tk-bench || exit 1
B=build-dev/bin/tk-bench
for n in ${PROFILE:-5 10 30}; do
  echo "== n=$n ${LANES_ARG:-}"
  ncu --launch-skip 1 --launch-count 1 -k regex:${KERNEL:-eig_} --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section LaunchStats --section InstructionStats --section SourceCounters \
    --metrics smsp__thread_inst_executed_per_inst_executed.ratio,smsp__inst_executed.sum,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,gpu__time_duration.sum,smsp__sass_thread_inst_executed_op_dfma_pred_on.sum \
    -f -o "$OUT/eig$n" $B eig --backends cuda --sizes $n --matrices ${MATRICES:-50000} ${LANES_ARG:-} > "$OUT/ncu$n.log" 2>&1 || tail -5 "$OUT/ncu$n.log"
  ncu -i "$OUT/eig$n.ncu-rep" --page details > "$OUT/eig$n.txt" 2>&1
  grep -E "eig_|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|No Eligible|Issued Warp|Warp Cycles Per Issued|thread_inst_executed_per|inst_executed.sum|shared_ld|shared_st|dfma|Branch Efficiency|Divergent|Executed Ipc A|Stall" "$OUT/eig$n.txt" | head -40
done
n=${PROFILE:-5 10 30}; n=${n##* }
ncu -i "$OUT/eig$n.ncu-rep" --page source --csv --print-source sass > "$OUT/eig${n}_sass.csv" 2>"$OUT/eig${n}_sass.err"
wc -c "$OUT/eig${n}_sass.csv"; head -c 600 "$OUT/eig${n}_sass.csv"; echo; cat "$OUT/eig${n}_sass.err" | head -5
