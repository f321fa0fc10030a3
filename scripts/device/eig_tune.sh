#!/bin/bash
# Device-side eig tuning run: build tk-bench (and the test binaries named in TESTS, which
# run first), then time every lanes-per-matrix scheme of LANES at each n of SIZES.
# Profiles: scripts/device/eig_profile.sh.  Outputs under $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. "$(dirname "$0")/build_dev.sh" tk-bench ${TESTS:-} || exit 1
for t in ${TESTS:-}; do
  echo "== $t"; build-dev/bin/$t --gtest_brief=1 > "$OUT/$t.log" 2>&1; echo "rc=$?"; tail -25 "$OUT/$t.log"
done
B=build-dev/bin/tk-bench
for lanes in ${LANES-0 1 2 4 8 16 32 64}; do
  echo "== lanes $lanes"
  $B eig --backends cuda --sizes ${SIZES:-5,10,15,20,25,30} --cuda-lanes $lanes 2>&1 | grep -v '^ *$' | tail -12
done
