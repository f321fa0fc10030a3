#!/bin/bash
# Issue 27 on a lent multi-GPU machine: the per-voxel cores over several GPUs
# (Documentation/multi_gpu.md) and FastTucker's tests (scripts/device/tucker_multi_gpu.sh runs
# its scaling benchmark):
# the multi-GPU tests (every visible GPU against one, bit for bit; the tools' --gpus), the
# one-GPU tests of the same cores (the one-device path goes through the same split), the
# scaling lines of tk-bench fibers|teig|eig on 1 GPU and on all, then compute-sanitizer
# memcheck and racecheck over the multi-GPU test.  Logs under $OUT.  Needs .deps/ as
# build_dev.sh does.  NO_BENCH=1 skips the benchmarks, SAN_TOOLS=none the sanitizer.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. "$(dirname "$0")/build_dev.sh" tk_test_multi_gpu tk_test_multi_gpu_cli tk_test_multi_device tk_test_fibers_cuda \
  tk_test_sshopm_cuda tk_test_eig_cuda tk_test_fixels_cuda tk_test_concurrency_cuda tk_test_cuda_memory tk-bench \
  tk-teig tk-eig tk-tucker tk_test_tucker_multi_gpu tk_test_tucker_cuda ${ITK_TARGETS:-} || exit 1
export NCCL_NVLS_ENABLE=0  # the lent machines' rule: no NVLink multicast
nvidia-smi -L | tee "$OUT/gpus.txt"
(cd build-dev && ctest -R "MultiGpu|MultiDevice|FibersCuda|SshopmCuda|EigCuda|FixelsCuda|Concurrency|CudaMemory|TuckerCuda" \
  --output-on-failure > "$OUT/ctest_multi_gpu.log" 2>&1; grep -E "Skipped|Failed|tests passed|\*\*\*" "$OUT/ctest_multi_gpu.log")
# the ITK filters' CUDA cases (ITK_TARGETS="tk_test_fiber_directions_filter ...": built with ITK)
for t in ${ITK_TARGETS:-}; do build-dev/bin/$t > "$OUT/$t.log" 2>&1; echo "$t rc=$?"; grep -E "FAILED|Failure" "$OUT/$t.log" | head; done
if [ -z "${NO_BENCH:-}" ]; then
  gpus=$(nvidia-smi -L | wc -l)
  t=${BENCH_TIMEOUT:-120}
  timeout $t build-dev/bin/tk-bench teig --dmri-only --gpus "$gpus" > "$OUT/bench_teig.txt" 2>&1
  timeout $t build-dev/bin/tk-bench eig --backends cuda --sizes 5,10,20 --gpus "$gpus" > "$OUT/bench_eig.txt" 2>&1
  timeout $t build-dev/bin/tk-bench fibers --backends cuda --inputs real --sh2peaks off --tk-fibers off --gpus "$gpus" \
    > "$OUT/bench_fibers.txt" 2>&1
  timeout $t build-dev/bin/tk-bench fixels --backends cuda --voxels 200000 --fod2fixel off --tk-fixels off --gpus "$gpus" \
    > "$OUT/bench_fixels.txt" 2>&1
  grep -A3 "Scaling" "$OUT/bench_teig.txt"; grep "h2h\|host-to-host" "$OUT/bench_eig.txt"
  grep "^cuda" "$OUT/bench_fibers.txt" "$OUT/bench_fixels.txt"
fi
[ "${SAN_TOOLS:-}" = none ] && exit 0
for tool in ${SAN_TOOLS:-memcheck racecheck}; do
  for b in tk_test_multi_gpu tk_test_tucker_multi_gpu; do
    timeout ${SAN_TIMEOUT:-400} compute-sanitizer --tool $tool --error-exitcode 99 build-dev/bin/$b \
      > "$OUT/san_${tool}_$b.log" 2>&1
    echo "$tool $b rc=$?"
  done
done
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT"/san_*.log
