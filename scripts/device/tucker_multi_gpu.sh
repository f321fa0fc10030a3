#!/bin/bash
# FastTucker on the GPUs of one lent host (issue 27): build, the tucker GPU tests (one GPU and
# all of them), then tk-bench tucker's scaling rows on the Netflix shape (strong 1 -> N GPUs,
# weak, NCCL all-reduce bandwidth) and on a 4x larger tensor (strong).  Logs under $OUT.
# NVLink multicast stays off (the lent machines' rule): NCCL_NVLS_ENABLE=0.
# SCALE_4X=0 skips the 4x tensor (about 3 minutes of set-up).
set -u
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. "$(dirname "$0")/build_dev.sh" tk_test_tucker_cuda tk_test_tucker_multi_gpu tk_test_tucker tk-bench || exit 1
gpus=$(nvidia-smi -L | wc -l); list=1; g=2; while [ $g -le $gpus ]; do list="$list,$g"; g=$((g * 2)); done
echo "GPUs: $gpus; counts $list"
build-dev/bin/tk_test_tucker_multi_gpu > "$OUT/test_tucker_multi_gpu.log" 2>&1; echo "multi-GPU tests rc=$?"
grep -E "OK|FAILED|SKIPPED|Failure|error|differs|Expected|Which is" "$OUT/test_tucker_multi_gpu.log" | head -40
build-dev/bin/tk_test_tucker_cuda > "$OUT/test_tucker_cuda.log" 2>&1; echo "one-GPU tucker tests rc=$?"; tail -3 "$OUT/test_tucker_cuda.log"
build-dev/bin/tk_test_tucker --gtest_filter='*Several*' 2>&1 | tail -3
timeout 400 build-dev/bin/tk-bench tucker --backends cuda --table-only --gpus $list --weak --allreduce --json "$OUT/tucker_scaling.json" \
  > "$OUT/bench_tucker_scaling.txt" 2>&1; echo "bench rc=$?"; cat "$OUT/bench_tucker_scaling.txt"
if [ "${SCALE_4X:-1}" = 1 ]; then
  timeout 420 build-dev/bin/tk-bench tucker --backends none --table-only --nnz 396288448 --gpus $list \
    --json "$OUT/tucker_scaling_4x.json" > "$OUT/bench_tucker_scaling_4x.txt" 2>&1; echo "bench 4x rc=$?"
  cat "$OUT/bench_tucker_scaling_4x.txt"
fi
