#!/bin/bash
# The tracker's CUDA backend on the lent GPU (issue 23's speed goals): build the core, the
# tracking tests and tk-bench (-DTK_WITH_ITK=OFF where .deps/ has no ITK); run the CPU and GPU
# tracking tests (CTest -R tracking: the GPU's streamlines against the omp backend's, bit for bit
# at 8, 16 and 32 lanes a seed); tk-bench track on 1M seeds, SD_STREAM with each lane count
# (TK_TRACK_SD_LANES: 32 is the warp-a-seed kernel as before, 8 and 16 the group kernel) and
# iFOD1, in one call so the figures compare; then compute-sanitizer memcheck (and synccheck:
# the group kernel's __syncwarp masks) on a small case.  Needs .deps/ carried
# (scripts/device/make_deps.sh).  Logs under $OUT.  SKIP_BUILD=1 reuses build-dev/; LANES
# picks the lane counts (default "32 16 8"); REPEAT the bench's runs (default 3); BENCH=none skips
# the benchmarks, SAN_TOOLS=none the sanitizers.  AB_SERIAL=1 benchmarks instead the launches'
# serial path (TK_TRACK_CUDA_SERIAL=1) against the pipeline, SD_STREAM (default lanes) and iFOD1,
# each with REPEAT runs (3: the median is a later run, not the first, which allocates).
# BASE_TAR (a `git archive` of an earlier commit, carried as an untracked file): its tk-bench is
# built beside this tree, and the benchmarks are SD_STREAM (default lanes) and iFOD1 for the
# two builds in turn, REPEAT runs each, in place of the lane counts.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ -n "${BASE_TAR:-}" ]; then
  rm -rf /tmp/base && mkdir -p /tmp/base "$OUT/base" && tar -xf "$BASE_TAR" -C /tmp/base
  ( cd /tmp/base && cp -r "$OLDPWD/.deps" . && OUT=$OUT/base . scripts/device/build_dev.sh tk-bench ) > "$OUT/base_build.txt" 2>&1 &
fi
if [ -z "${SKIP_BUILD:-}" ]; then
  . "$(dirname "$0")/build_dev.sh" tk_test_tracking tk_test_tracking_cuda tk-bench || exit 1
else
  export LD_LIBRARY_PATH=$PWD/.deps/lapack/lib
fi
wait
( cd build-dev && ctest -R tracking --output-on-failure > "$OUT/ctest_tracking.log" 2>&1 )
grep -E "tests passed|Failed|\*\*\*|Not Run|Skipped" "$OUT/ctest_tracking.log" | head -20
build-dev/bin/tk_test_tracking_cuda --gtest_filter='*BitForBit*:*SdStream*:*Ifod1*' > "$OUT/test_tracking_cuda_sd.log" 2>&1
grep -E "lanes|iFOD1 at|CPU vs GPU|FAILED|Failure|PASSED|OK \]" "$OUT/test_tracking_cuda_sd.log" | head -40
if [ -n "${BASE_TAR:-}" ] && [ "${BENCH:-}" != none ]; then
  tail -3 "$OUT/base_build.txt"
  for r in $(seq "${REPEAT:-3}"); do
    for b in /tmp/base/build-dev build-dev; do
      [ -x $b/bin/tk-bench ] || continue
      name=new; [ $b = build-dev ] || name=base
      for alg in sd_stream ifod1; do
        echo "== $name $alg run $r"
        $b/bin/tk-bench track --backends cuda --algorithms "$alg" --seeds 1000000 --repeat 3 --tckgen off --write 0 \
          > "$OUT/bench_ab_${name}_${alg}_$r.txt" 2>&1
        grep -E "^cuda|rror" "$OUT/bench_ab_${name}_${alg}_$r.txt"
      done
    done
  done
elif [ -n "${AB_SERIAL:-}" ] && [ "${BENCH:-}" != none ]; then
  for alg in sd_stream ifod1; do
    for serial in 1 0; do
      echo "== $alg, TK_TRACK_CUDA_SERIAL=$serial"
      TK_TRACK_CUDA_SERIAL=$serial build-dev/bin/tk-bench track --backends cuda --algorithms "$alg" --seeds 1000000 \
        --repeat "${REPEAT:-3}" --tckgen off --write 0 > "$OUT/bench_ab_${alg}_$serial.txt" 2>&1
      grep -E "^cuda|kernel|rror" "$OUT/bench_ab_${alg}_$serial.txt"
    done
  done
elif [ "${BENCH:-}" != none ]; then
for lanes in ${LANES:-32 16 8}; do
  echo "== SD_STREAM, TK_TRACK_SD_LANES=$lanes"
  TK_TRACK_SD_LANES=$lanes build-dev/bin/tk-bench track --backends cuda --algorithms sd_stream --seeds 1000000 \
    --repeat "${REPEAT:-3}" --tckgen off --write 0 > "$OUT/bench_sd_$lanes.txt" 2>&1
  grep -E "^cuda|kernel|rror" "$OUT/bench_sd_$lanes.txt"
done
echo "== iFOD1"
build-dev/bin/tk-bench track --backends cuda --algorithms ifod1 --seeds 1000000 --repeat "${REPEAT:-3}" --tckgen off \
  --write 0 > "$OUT/bench_ifod1.txt" 2>&1
grep -E "^cuda|kernel|rror" "$OUT/bench_ifod1.txt"
fi
if [ "${SAN_TOOLS:-}" != none ]; then
  for tool in ${SAN_TOOLS:-memcheck synccheck}; do
    ( timeout "${SAN_TIMEOUT:-240}" compute-sanitizer --tool "$tool" --error-exitcode 99 build-dev/bin/tk_test_tracking_cuda \
        --gtest_filter='*SdStreamMatchesTheCpuWithRegionsAndMaskSeeds:*Ifod1IsTheCpusBitForBit:*APlanExecutesTwice*:*MidPipeline*:*NonFinite*' > "$OUT/san_$tool.log" 2>&1
      echo "$tool rc=$?" ) &
  done
  wait
  grep -h "ERROR SUMMARY\|PASSED\|FAILED" "$OUT"/san_*.log
fi
