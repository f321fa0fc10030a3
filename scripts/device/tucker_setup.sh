#!/bin/bash
# FastTucker's set-up on the GPU (issue 26) on a lent machine: build, the set-up's GPU tests
# (the GPU-built B-CSF against the host's, the solver's device arrays, bit-for-bit training,
# the fallback under a memory limit) and the tucker GPU tests that go through it, then
# tk-bench tucker on the Netflix shape (set-up with its phases and peak GPU memory beside the
# 2 s goal, factor and core passes).  With 2 or more GPUs also the multi-GPU tests (the
# shares of the row split built on the GPU).  Logs under $OUT.
set -u
export NCCL_NVLS_ENABLE=0 # the lent machines' rule: no NVLink multicast
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. "$(dirname "$0")/build_dev.sh" tk_test_tucker_setup_cuda tk_test_tucker_cuda tk_test_tucker_multi_gpu \
  tk_test_cuda_memory tk_test_tucker tk-bench || exit 1
gpus=$(nvidia-smi -L | wc -l)
tests="tk_test_tucker_setup_cuda tk_test_tucker_cuda tk_test_cuda_memory tk_test_tucker"
[ "$gpus" -ge 2 ] && tests="$tests tk_test_tucker_multi_gpu"
for t in $tests; do
  filter=""; [ "$t" = tk_test_cuda_memory ] && filter="--gtest_filter=*Tucker*"
  build-dev/bin/$t $filter > "$OUT/$t.log" 2>&1; echo "$t rc=$?"
  grep -E "FAILED|Failure|Expected|Which is|differs|instead of|SKIPPED \]" "$OUT/$t.log" | head -30
  tail -2 "$OUT/$t.log"
done
timeout 300 build-dev/bin/tk-bench tucker --backends cuda --table-only --json "$OUT/tucker.json" \
  > "$OUT/bench_tucker.txt" 2>&1; echo "bench rc=$?"; cat "$OUT/bench_tucker.txt"
