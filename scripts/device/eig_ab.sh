#!/bin/bash
# Device-side A/B run of the eig CUDA backend: build tk-bench from the working tree (build-dev)
# and, where BASE names a copy of an older tree (carried, e.g. `git archive HEAD | tar -x -C .base`),
# from that copy too (build-base); run the test binaries named in TESTS; then time both builds
# alternately, ROUNDS times each, at SIZES (`tk-bench eig --backends cuda`: kernel, host-to-host,
# copies).  EXTRA (below) names more runs of the new build (a lanes override, say).  TIMELINE=n prints the new build's pipeline timeline at order n.
# SWEEP="S:M ..." times the new build's host-to-host run with S pipeline slots
# (--cuda-slots) and chunks of M matrices (--cuda-chunk; 0: the default), ROUNDS times.
# Needs .deps/ (scripts/device/make_deps.sh).  A summary on stdout; the logs as one file,
# $OUT/eig_ab.tgz (the device tool brings back few files).
set -u
RESULT=${OUT:-/tmp/out}; OUT=$(mktemp -d); trap 'tar czf "$RESULT/eig_ab.tgz" -C "$OUT" .' EXIT
SIZES=${SIZES:-25,30}; ROUNDS=${ROUNDS:-2}
. "$(dirname "$0")/build_dev.sh" tk-bench ${TESTS:-} || exit 1
if [ -n "${BASE:-}" ]; then
  cmake -S "$BASE" -B build-base -DTK_WITH_ITK=OFF -DTK_WITH_VTK=OFF -DCMAKE_BUILD_TYPE=Release \
    -DTK_LAPACKE_INCLUDE_DIR=$PWD/.deps/lapack/include -DTK_LAPACKE_LIBRARY=$PWD/.deps/lapack/lib/liblapacke.so.3 \
    -DTK_LAPACK_LIBRARY=$PWD/.deps/lapack/lib/liblapack.so.3 -DTK_BUILD_TESTING=OFF > "$OUT/configure_base.log" 2>&1 &&
    cmake --build build-base --target tk-bench -j16 > "$OUT/build_base.log" 2>&1 || { tail -20 "$OUT/build_base.log"; exit 1; }
fi
for t in ${TESTS:-}; do
  echo "== $t"; build-dev/bin/$t --gtest_brief=1 > "$OUT/$t.log" 2>&1; echo "rc=$?"; tail -5 "$OUT/$t.log"
done
summary() { grep -E "^[0-9]+ +cuda (kernel|host-to-host)" "$1" | sed "s/^/$2 /"; }
for r in $(seq 1 "$ROUNDS"); do
  for b in ${BASE:+base} dev; do
    build-$b/bin/tk-bench eig --backends cuda --sizes "$SIZES" > "$OUT/ab_${b}_$r.txt" 2>&1
    summary "$OUT/ab_${b}_$r.txt" "$b#$r"
  done
done
# EXTRA: ';'-separated runs of the new build, each words of VAR=value (environment) and
# tk-bench arguments, e.g. "--cuda-lanes 8;--cuda-reduce-lanes 16"
if [ -n "${EXTRA:-}" ]; then
  IFS=';' read -ra runs <<< "$EXTRA"
  i=0
  for run in "${runs[@]}"; do
    envs=(); args=()
    for w in $run; do case "$w" in --*) args+=("$w") ;; *=*) envs+=("$w") ;; *) args+=("$w") ;; esac; done
    i=$((i + 1))
    env "${envs[@]}" build-dev/bin/tk-bench eig --backends cuda --sizes "$SIZES" "${args[@]}" > "$OUT/ab_extra_$i.txt" 2>&1
    summary "$OUT/ab_extra_$i.txt" "dev[$run]"
  done
fi
for r in $(seq 1 "$ROUNDS"); do
  for sm in ${SWEEP:-}; do
    build-dev/bin/tk-bench eig --backends cuda --sizes "$SIZES" --cuda-slots ${sm%%:*} --cuda-chunk ${sm##*:} \
      > "$OUT/sweep_${sm%%:*}_${sm##*:}_$r.txt" 2>&1
    grep -E "^[0-9]+ +cuda host-to-host" "$OUT/sweep_${sm%%:*}_${sm##*:}_$r.txt" | sed "s/^/slots ${sm%%:*} chunk ${sm##*:} #$r: /"
  done
done
if [ -n "${TIMELINE:-}" ]; then
  build-dev/bin/tk-bench eig --backends cuda --sizes "$TIMELINE" --cuda-timeline ${TIMELINE_ARGS:-} > "$OUT/timeline.txt" 2>&1
  grep -c "eig timeline: chunk" "$OUT/timeline.txt"; grep -E "plan set-up|pipeline" "$OUT/timeline.txt"
fi
