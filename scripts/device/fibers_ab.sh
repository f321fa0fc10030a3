#!/bin/bash
# The fiber finder before and after a change, on the lent GPU, in one call: BASE_TAR (a `git
# archive` of the earlier commit, carried as an untracked file) is built beside this tree
# (sm_90 unless TK_CUDA_ARCHITECTURES says otherwise; ITK on where .deps/itk is carried, for
# tk-fibers), then this tree's CPU and CUDA fiber tests run (TESTS adds test binaries), then
# tk-bench fibers (CUDA, transfers included) for the two builds in turn, REPEAT times each
# (default 2).  BENCH_ARGS adds tk-bench flags; OTHER_BENCH ("suite args;suite args") runs more
# suites for both builds in turn (other kernels that share the changed code).  SAME_BITS=1:
# both builds' tk-fibers --backend cuda on Data/fibers' inputs under several option sets,
# their outputs compared byte for byte.  JSON=1: this tree's last bench run also as
# $OUT/0_fibers_bench.json (named to sort first among the files that come back; the plots'
# input).  Needs .deps/ carried (scripts/device/make_deps.sh).  Back from the call: $OUT/summary.txt
# (tests, same bits, sanitizers), $OUT/0_bench.txt (every bench line), the JSON, and the logs in
# $OUT/logs.tar.gz.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
[ -d .deps/itk ] && fibers_cli=tk-fibers || fibers_cli=""
if [ -n "${BASE_TAR:-}" ]; then
  rm -rf /tmp/base && mkdir -p /tmp/base "$OUT/base" && tar -xf "$BASE_TAR" -C /tmp/base
  ( cd /tmp/base && cp -r "$OLDPWD/.deps" . && OUT=$OUT/base . scripts/device/build_dev.sh tk-bench $fibers_cli ) > "$OUT/base_build.txt" 2>&1 &
fi
. "$(dirname "$0")/build_dev.sh" ${TARGETS:-tk_test_fibers tk_test_fibers_cuda tk-bench $fibers_cli ${TESTS:-}} || exit 1
wait
tail -3 "$OUT/base_build.txt" 2>/dev/null
# the verdicts also go to $OUT/summary.txt, printed again at the end: a call returns only the
# last 12,000 characters of its output, which the benches fill
summary="$OUT/summary.txt"; : > "$summary"
for t in tk_test_fibers_cuda ${TESTS:-}; do
  timeout ${TEST_TIMEOUT:-120} build-dev/bin/$t > "$OUT/test_$t.log" 2>&1
  echo "$t rc=$?: $(grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/test_$t.log" | tr '\n' ' ')" | tee -a "$summary"
  grep -E "^\[  FAILED  \]|differ" "$OUT/test_$t.log" | head -10
done
timeout ${TEST_TIMEOUT:-120} build-dev/bin/tk_test_fibers > "$OUT/test_fibers.log" 2>&1
echo "tk_test_fibers: $(tail -1 "$OUT/test_fibers.log")" | tee -a "$summary"
if [ "${SAME_BITS:-0}" = 1 ] && [ -n "$fibers_cli" ] && [ -x /tmp/base/build-dev/bin/tk-fibers ]; then
  same=0 all=0
  for f in Data/fibers/phantom_sh.nii.gz Data/fibers/small_101D_fod.nii.gz Data/fibers/small_64D_fod_mrtrix.nii.gz; do
    for opts in "" "--num 5 --threshold none" "--relative-threshold 0.3 --min-separation 20"; do
      all=$((all + 1))
      for b in base:/tmp/base/build-dev main:build-dev; do
        rm -f /tmp/p_${b%%:*}.nii /tmp/a_${b%%:*}.nii
        ${b#*:}/bin/tk-fibers $f /tmp/p_${b%%:*}.nii --amplitudes /tmp/a_${b%%:*}.nii $opts --backend cuda --quiet \
          2>> "$OUT/same_bits.err"
      done
      cmp -s /tmp/p_base.nii /tmp/p_main.nii 2>/dev/null && cmp -s /tmp/a_base.nii /tmp/a_main.nii && same=$((same + 1)) ||
        echo "differs: $f $opts"
    done
  done
  echo "tk-fibers --backend cuda: $same of $all outputs the same bits as the base's" | tee -a "$summary"
fi
for r in $(seq ${REPEAT:-2}); do
  for b in base:/tmp/base/build-dev main:build-dev; do
    [ -x ${b#*:}/bin/tk-bench ] || continue
    echo "== ${b%%:*} run $r" | tee -a "$OUT/0_bench.txt"
    json=""; [ "${JSON:-0}" = 1 ] && [ $r = ${REPEAT:-2} ] && [ ${b%%:*} = main ] && json="--json $OUT/0_fibers_bench.json"
    timeout 200 ${b#*:}/bin/tk-bench fibers --backends cuda --sh2peaks off --tk-fibers off ${BENCH_ARGS:-} $json 2>&1 |
      grep -E "^(cuda|omp)|^## " | tee -a "$OUT/0_bench.txt"
  done
done
IFS=';' read -ra other <<< "${OTHER_BENCH:-}"
for o in "${other[@]}"; do
  for b in base:/tmp/base/build-dev main:build-dev; do
    [ -x ${b#*:}/bin/tk-bench ] || continue
    echo "== ${b%%:*}: tk-bench $o"
    timeout 200 ${b#*:}/bin/tk-bench $o > "$OUT/other.txt" 2>&1; grep -E "^(cuda|gpu)|^## " "$OUT/other.txt" | head -12
  done
done
# SAN_TOOLS (e.g. "memcheck racecheck"): compute-sanitizer over the CUDA fiber tests (SAN_FILTER:
# a gtest filter), each bounded by SAN_TIMEOUT seconds (default 240), in parallel.
for tool in ${SAN_TOOLS:-}; do
  ( timeout ${SAN_TIMEOUT:-240} compute-sanitizer --tool $tool --error-exitcode 99 build-dev/bin/tk_test_fibers_cuda \
      ${SAN_FILTER:+--gtest_filter=$SAN_FILTER} \
      > "$OUT/san_$tool.log" 2>&1; echo "$tool rc=$?" ) &
done
wait
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT"/san_*.log 2>/dev/null | tee -a "$summary"
# A call brings back at most 8 files from $OUT (nested ones count): the logs go into one
# archive, beside the summary, the bench lines (0_bench.txt) and the JSON.
( cd "$OUT" && find . -mindepth 1 -maxdepth 1 ! -name summary.txt ! -name '0_*' ! -name logs.tar.gz -printf '%P\0' |
    tar --null -czf logs.tar.gz --remove-files -T - ) 2>/dev/null
echo "== summary"; cat "$summary"
