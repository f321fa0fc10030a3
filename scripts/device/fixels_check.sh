#!/bin/bash
# The fixels' CUDA backend on the lent GPU (no ITK/VTK there): build the core, the fixels tests
# and tk-bench with -DTK_WITH_ITK=OFF; run the CPU fixels tests (the batched walk's and the warp
# sorts' host tests too), the CUDA ones (the warp kernels, slim, its split form, pull and fused, against the
# one-thread kernel bit for bit, against omp, the many-lobe voxels), tk-bench fixels (cuda transfers included beside the 10M voxels/s goal, omp on the
# machine's cores) on 600k voxels and on the 5121 set (slim and pull); the A/B runs asked for; last
# compute-sanitizer memcheck and racecheck on the small CUDA case.  Needs .deps/
# carried (scripts/device/make_deps.sh).  Logs under $OUT.  BENCH_ARGS adds tk-bench flags;
# SAN_TOOLS=none skips the sanitizers; AB_FUSED, AB_SLIM, AB_REGISTERS and PHASES (below) add
# measurements.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
# SAN_ONLY=1: tk_test_fixels_cuda built and the sanitizers run on it, nothing else of the main part
# (a call of its own where one call does not hold the tests, the measurements and the sanitizers)
if [ -n "${SAN_ONLY:-}" ]; then
  . "$(dirname "$0")/build_dev.sh" tk_test_fixels_cuda || exit 1
fi
if [ -z "${SKIP_MAIN:-}${SAN_ONLY:-}" ]; then
. "$(dirname "$0")/build_dev.sh" tk_test_fixels tk_test_fixels_batch_walk tk_test_fixels_warp_sort tk_test_fixels_cuda tk-bench || exit 1
build-dev/bin/tk_test_fixels > "$OUT/test_fixels.log" 2>&1; tail -3 "$OUT/test_fixels.log"
build-dev/bin/tk_test_fixels_batch_walk > "$OUT/test_fixels_batch_walk.log" 2>&1; tail -3 "$OUT/test_fixels_batch_walk.log"
build-dev/bin/tk_test_fixels_warp_sort > "$OUT/test_fixels_warp_sort.log" 2>&1; tail -1 "$OUT/test_fixels_warp_sort.log"
build-dev/bin/tk_test_fixels_cuda > "$OUT/test_fixels_cuda.log" 2>&1
grep -E "voxels|FAILED|Failure|Expected|Which is|PASSED|OK \]" "$OUT/test_fixels_cuda.log" | head -60
build-dev/bin/tk-bench fixels --backends omp,cuda --threads "$(nproc)" --voxels 600000 --repeat 3 --fod2fixel off \
  --tk-fixels off ${BENCH_ARGS:-} > "$OUT/bench_fixels.txt" 2>&1
cat "$OUT/bench_fixels.txt"
build-dev/bin/tk-bench fixels --backends cuda --voxels 200000 --repeat 3 --fod2fixel off --tk-fixels off \
  --directions 5121 > "$OUT/bench_fixels_5121.txt" 2>&1
cat "$OUT/bench_fixels_5121.txt"
# the 5121 set's by the pull kernel too (the slim kernel's reference)
echo "# 5121 directions, TK_FIXELS_CUDA_SLIM=0"
TK_FIXELS_CUDA_SLIM=0 build-dev/bin/tk-bench fixels --backends cuda --voxels 200000 --repeat 3 --fod2fixel off \
  --tk-fixels off --directions 5121 2>&1 | grep -E "^cuda"
fi
# AB_FUSED=1: the cuda bench (600k voxels) with the fused warp kernel (TK_FIXELS_CUDA_FUSED=1: a
# block's voxels sampled together) and the default (the samples kernel, then the slim kernel),
# alternating, three runs of each on the same card.
if [ -n "${AB_FUSED:-}" ]; then
  for r in 1 2 3; do
    for f in 1 0; do
      echo "# TK_FIXELS_CUDA_FUSED=$f (run $r)"
      TK_FIXELS_CUDA_FUSED=$f build-dev/bin/tk-bench fixels --backends cuda --voxels 600000 --repeat 3 --fod2fixel off \
        --tk-fixels off 2>&1 | grep -E "^cuda"
    done
  done | tee "$OUT/bench_fixels_ab_fused.txt"
fi
# AB_SLIM=1: the cuda bench (600k voxels) by the pull kernel (TK_FIXELS_CUDA_SLIM=0: the samples
# copied into shared memory), the slim kernel (the default), and the slim kernel with the whole
# shared-memory carveout (TK_FIXELS_SLIM_CARVEOUT=max), alternating, three runs of each on the
# same card.  (Its register caps 112 and 96 were measured no faster and slower, session 18.)
# Then the slim kernel's split form (the default since session 18; slim128 and slim128max are the
# slim kernel whole, TK_FIXELS_CUDA_SPLIT=0: the climbs a thread a lobe in a kernel of their own,
# at 168 registers; split255: TK_FIXELS_SPLIT_WIDE=1, at 255).
if [ -n "${AB_SLIM:-}" ]; then
  for r in 1 2 3; do
    for variant in pull slim128 slim128max split split255; do
      echo "# $variant (run $r)"
      case $variant in
        pull) vars=TK_FIXELS_CUDA_SLIM=0 ;;
        slim128) vars=TK_FIXELS_CUDA_SPLIT=0 ;;
        slim128max) vars="TK_FIXELS_CUDA_SPLIT=0 TK_FIXELS_SLIM_CARVEOUT=max" ;;
        split) vars=TK_FIXELS_CUDA_SPLIT=1 ;;
        split255) vars="TK_FIXELS_CUDA_SPLIT=1 TK_FIXELS_SPLIT_WIDE=1" ;;
      esac
      env $vars build-dev/bin/tk-bench fixels --backends cuda --voxels 600000 --repeat 3 --fod2fixel off \
        --tk-fixels off 2>&1 | grep -E "^cuda"
    done
  done | tee "$OUT/bench_fixels_ab_slim.txt"
fi
# AB_REGISTERS=200 (say): the pull and fused kernels' register cap A/B on the same card,
# fixels_cuda.cu rebuilt with it (TK_FIXELS_WARP_REGISTERS), the cuda bench by the pull kernel
# (TK_FIXELS_CUDA_SLIM=0; the slim kernel's cap is fixels_slim_r128.cu's) and the bit-for-bit tests again, then
# the default put back in build-dev's cache.  PHASES=1: the fixels units rebuilt with the kernels'
# phase timing (TK_FIXELS_WARP_PHASES), the cuda bench once by the slim kernel and once by the pull
# kernel (their stderr: the cycles by phase), then put back.  SKIP_MAIN=1: those alone (after a
# run without it, build-dev in place).
if [ -n "${AB_REGISTERS:-}" ]; then
  TK_DEV_CMAKE_ARGS="-DTK_FIXELS_WARP_REGISTERS=$AB_REGISTERS" . "$(dirname "$0")/build_dev.sh" tk_test_fixels_cuda tk-bench || exit 1
  echo "# warp kernel at $AB_REGISTERS registers a thread"
  TK_FIXELS_CUDA_SLIM=0 build-dev/bin/tk-bench fixels --backends cuda --voxels 600000 --repeat 3 --fod2fixel off \
    --tk-fixels off > "$OUT/bench_fixels_r$AB_REGISTERS.txt" 2>&1
  cat "$OUT/bench_fixels_r$AB_REGISTERS.txt"
  build-dev/bin/tk_test_fixels_cuda --gtest_filter='*BitForBit*:*MoreLobes*' > "$OUT/test_fixels_cuda_r$AB_REGISTERS.log" 2>&1
  grep -E "voxels|FAILED|Failure|PASSED|OK \]" "$OUT/test_fixels_cuda_r$AB_REGISTERS.log" | head -30
  cmake -S . -B build-dev -DTK_FIXELS_WARP_REGISTERS= > /dev/null
fi
if [ -n "${PHASES:-}" ]; then
  TK_DEV_CMAKE_ARGS="-DTK_FIXELS_WARP_PHASES=ON" . "$(dirname "$0")/build_dev.sh" tk-bench || exit 1
  for slim in 1 0; do
    TK_FIXELS_CUDA_SLIM=$slim build-dev/bin/tk-bench fixels --backends cuda --voxels 600000 --repeat 1 --fod2fixel off \
      --tk-fixels off 2>&1 | grep -E "^cuda|phases"
  done > "$OUT/bench_fixels_phases.txt" 2>&1
  cat "$OUT/bench_fixels_phases.txt"
  cmake -S . -B build-dev -DTK_FIXELS_WARP_PHASES=OFF > /dev/null
fi
# the sanitizers last (after the measurements: a run cut short by its time limit keeps those)
if { [ -z "${SKIP_MAIN:-}" ] || [ -n "${SAN_ONLY:-}" ]; } && [ "${SAN_TOOLS:-}" != none ]; then
  for tool in ${SAN_TOOLS:-memcheck racecheck}; do
    ( timeout ${SAN_TIMEOUT:-300} compute-sanitizer --tool $tool --error-exitcode 99 build-dev/bin/tk_test_fixels_cuda \
        --gtest_filter='*BitForBitSmall' > "$OUT/san_$tool.log" 2>&1; echo "$tool rc=$?" ) &
  done
  wait
  grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|PASSED\|FAILED" "$OUT"/san_*.log
fi
