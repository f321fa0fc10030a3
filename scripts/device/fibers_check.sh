#!/bin/bash
# The fiber peak finder on the lent GPU (no ITK/VTK there): build the core, its tests and
# tk-bench with -DTK_WITH_ITK=OFF, run the CPU and CUDA fiber tests, tk-bench fibers on the
# three inputs (real, noise-free phantom, whole-brain; CUDA transfers included, omp on the
# machine's cores), then compute-sanitizer memcheck and racecheck on the CUDA fiber tests.
# Needs .deps/ carried (scripts/device/make_deps.sh).  Logs under $OUT.  BENCH_ARGS adds
# tk-bench flags; SAN_TOOLS=none skips the sanitizers.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. "$(dirname "$0")/build_dev.sh" tk_test_fibers tk_test_fibers_cuda tk-bench || exit 1
build-dev/bin/tk_test_fibers > "$OUT/test_fibers.log" 2>&1; tail -3 "$OUT/test_fibers.log"
build-dev/bin/tk_test_fibers_cuda > "$OUT/test_fibers_cuda.log" 2>&1; grep -E "FAILED|Failure|PASSED" "$OUT/test_fibers_cuda.log" | head -20
build-dev/bin/tk-bench fibers --backends omp,cuda --threads "$(nproc)" --sh2peaks off --tk-fibers off ${BENCH_ARGS:-} \
  > "$OUT/bench_fibers.txt" 2>&1
cat "$OUT/bench_fibers.txt"
[ "${SAN_TOOLS:-}" = none ] && exit 0
for tool in ${SAN_TOOLS:-memcheck racecheck}; do
  ( timeout ${SAN_TIMEOUT:-150} compute-sanitizer --tool $tool --error-exitcode 99 build-dev/bin/tk_test_fibers_cuda \
      > "$OUT/san_$tool.log" 2>&1; echo "$tool rc=$?" ) &
done
wait
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT"/san_*.log
