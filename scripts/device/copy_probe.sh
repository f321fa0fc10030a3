#!/bin/bash
# Device-side: why the first chunks of a host-to-host eig run sometimes copy at half rate.
# Compiles copy_probe.cu, runs it in each MODE (see there), then one `tk-bench eig` at n = 30
# with the pipeline's timeline while nvidia-smi logs clocks, power and throttle reasons every
# 20 ms.  Needs .deps/ for the tk-bench build.  Logs in $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
here=$(dirname "$0")
nvcc -O2 -arch=sm_90 -o /tmp/copy_probe "$here/copy_probe.cu" || exit 1
smi() { nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader; }
for args in "3600 4 0 0" "3600 4 1 0" "3600 4 2 0" "3600 4 3 0" "3600 3 3 300"; do
  echo "== copy_probe $args   (smi: $(smi))"
  /tmp/copy_probe $args
done
. "$here/build_dev.sh" tk-bench || exit 1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 20 > "$OUT/smi.csv" 2>&1 &
smi_pid=$!
build-dev/bin/tk-bench eig --backends cuda --sizes 30 --cuda-timeline > "$OUT/timeline.txt" 2>&1
kill $smi_pid
grep -E "^30 |plan set-up|pipeline" "$OUT/timeline.txt"
awk -F', ' 'NR > 1 {print $2, $3, $4, $6}' "$OUT/smi.csv" | sort | uniq -c | sort -rn | head -12
