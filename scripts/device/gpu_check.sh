#!/bin/bash
# The whole GPU check on the lent H100 (no ITK/VTK there: ITK comes from the carried .debs,
# VTK stays off): every `gpu` CTest plus the tests that change behaviour with a GPU present
# (the ITK module's CUDA cases among them), the eig
# benchmark, then compute-sanitizer memcheck / racecheck / initcheck over every GPU test
# binary (in parallel, each bounded by SAN_TIMEOUT seconds).  Logs under $OUT.
# Needs .deps/ (googletest .deb, LAPACKE/OpenBLAS .so files; scripts/device/make_deps.sh) carried along.  SAN_TOOLS, SAN_BINS
# and SAN_FILTER (a gtest filter) narrow the sanitizer runs; SAN_TOOLS=none skips them.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. "$(dirname "$0")/build_dev.sh" || exit 1
(cd build-dev && ctest -L gpu --output-on-failure > "$OUT/ctest_gpu.log" 2>&1; tail -4 "$OUT/ctest_gpu.log")
(cd build-dev && ctest -LE gpu -R "CudaDevice|tk_backend_auto|tk_bad_input|Cuda|AutoBackend" --output-on-failure > "$OUT/ctest_auto.log" 2>&1; tail -4 "$OUT/ctest_auto.log")
if [ -z "${NO_BENCH:-}" ]; then
  build-dev/bin/tk-bench eig --threads 16 > "$OUT/bench_eig.txt" 2>&1
  grep -E "kernel|host|lapack|omp  " "$OUT/bench_eig.txt" | tail -40
fi
[ "${SAN_TOOLS:-}" = none ] && exit 0
SAN_TIMEOUT=${SAN_TIMEOUT:-200}
bins=${SAN_BINS:-"tk_test_sshopm_cuda tk_test_fibers_cuda tk_test_eig_cuda tk_test_tucker_cuda tk_test_pltf_cuda tk_test_cuda_memory tk_test_concurrency_cuda tk_test_device tk_test_tracking_cuda tk_test_multi_gpu"}
for tool in ${SAN_TOOLS:-memcheck racecheck initcheck}; do
  for b in $bins; do
    extra=""; [ "$tool" = memcheck ] && extra="--leak-check full"
    ( timeout $SAN_TIMEOUT compute-sanitizer --tool $tool $extra --error-exitcode 99 build-dev/bin/$b ${SAN_FILTER:+--gtest_filter=$SAN_FILTER} \
        > "$OUT/san_${tool}_$b.log" 2>&1; echo "$tool $b rc=$?" > "$OUT/san_${tool}_$b.rc" ) &
  done
done
wait
for f in "$OUT"/san_*.rc; do cat "$f"; done | sort
grep -h "ERROR SUMMARY\|LEAK SUMMARY\|RACECHECK SUMMARY" "$OUT"/san_*.log | sort | uniq -c
