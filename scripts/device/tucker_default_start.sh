#!/bin/bash
# FastTucker's time to accuracy with the defaults (issue 26: "without tuning flags"): build, the
# tucker GPU and CLI tests, then tk-bench tucker --to-accuracy at Netflix's full shape with no
# --init (the default start, --init auto: the spectral start with a deflation round there) on
# the cuda backend, 16 host threads, for each of RANKS (default "4 8").  Logs under $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. "$(dirname "$0")/build_dev.sh" tk-bench tk-tucker tk_test_tucker_cuda tk_test_tucker_cli || exit 1
for t in tk_test_tucker_cuda tk_test_tucker_cli; do
  build-dev/bin/$t > "$OUT/$t.log" 2>&1; echo "$t rc=$?"
  grep -E "FAILED|Failure|SKIPPED \]" "$OUT/$t.log" | head -20; tail -1 "$OUT/$t.log"
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for J in ${RANKS:-4 8}; do
  TK_TUCKER_SPECTRAL_TIMES=1 build-dev/bin/tk-bench tucker --to-accuracy --backends cuda --rank $J --updates als \
    --max-iters 100 --threads 16 --table-only 2>&1 | tee "$OUT/to_accuracy_J$J.txt" | grep -v "^tk_tucker_spectral"
done
