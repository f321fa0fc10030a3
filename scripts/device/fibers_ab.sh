#!/bin/bash
# The fiber finder before and after a change, on the lent GPU, in one call: BASE_TAR (a `git
# archive` of the earlier commit, carried as an untracked file) is built beside this tree
# (both -DTK_WITH_ITK=OFF, sm_90 unless TK_CUDA_ARCHITECTURES says otherwise), then this
# tree's CPU and CUDA fiber tests run, then tk-bench fibers (CUDA, transfers included) for
# the two builds in turn, REPEAT times each (default 2).  BENCH_ARGS adds tk-bench flags.
# Needs .deps/ carried (scripts/device/make_deps.sh).  Logs under $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ -n "${BASE_TAR:-}" ]; then
  rm -rf /tmp/base && mkdir -p /tmp/base "$OUT/base" && tar -xf "$BASE_TAR" -C /tmp/base
  ( cd /tmp/base && cp -r "$OLDPWD/.deps" . && OUT=$OUT/base . scripts/device/build_dev.sh tk-bench ) > "$OUT/base_build.txt" 2>&1 &
fi
. "$(dirname "$0")/build_dev.sh" ${TARGETS:-tk_test_fibers tk_test_fibers_cuda tk-bench} || exit 1
wait
tail -3 "$OUT/base_build.txt" 2>/dev/null
timeout ${TEST_TIMEOUT:-120} build-dev/bin/tk_test_fibers_cuda > "$OUT/test_fibers_cuda.log" 2>&1
grep -E "FAILED|Failure|PASSED|OK \]" "$OUT/test_fibers_cuda.log" | head -30
timeout ${TEST_TIMEOUT:-120} build-dev/bin/tk_test_fibers > "$OUT/test_fibers.log" 2>&1; tail -3 "$OUT/test_fibers.log"
for r in $(seq ${REPEAT:-2}); do
  for b in /tmp/base/build-dev build-dev; do
    [ -x $b/bin/tk-bench ] || continue
    echo "== $b run $r"
    timeout 200 $b/bin/tk-bench fibers --backends cuda --sh2peaks off --tk-fibers off ${BENCH_ARGS:-} 2>&1 | grep -E "^(cuda|omp)|^## " | tee -a "$OUT/bench_$(basename $(dirname $b))_$r.txt"
  done
done
# SAN_TOOLS (e.g. "memcheck racecheck"): compute-sanitizer over the CUDA fiber tests, each
# bounded by SAN_TIMEOUT seconds (default 240), in parallel.
for tool in ${SAN_TOOLS:-}; do
  ( timeout ${SAN_TIMEOUT:-240} compute-sanitizer --tool $tool --error-exitcode 99 build-dev/bin/tk_test_fibers_cuda \
      > "$OUT/san_$tool.log" 2>&1; echo "$tool rc=$?" ) &
done
wait
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT"/san_*.log 2>/dev/null
