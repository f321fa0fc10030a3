#!/bin/bash
# Device-side eig tuning run: build tk-bench, time every lanes-per-matrix scheme at each n,
# profile the n=10 and n=30 kernels with Nsight Compute.  Outputs under $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
mkdir -p /tmp/gt && dpkg -x .deps/googletest_*.deb /tmp/gt
cmake -S . -B build-dev -DTK_WITH_ITK=OFF -DTK_WITH_VTK=OFF -DCMAKE_BUILD_TYPE=Release \
  -DTK_GTEST_SOURCE_DIR=/tmp/gt/usr/src/googletest -DTK_LAPACKE_INCLUDE_DIR=$PWD/.deps/lapack/include \
  -DTK_LAPACKE_LIBRARY=$PWD/.deps/lapack/lib/liblapacke.so.3 -DTK_LAPACK_LIBRARY=$PWD/.deps/lapack/lib/liblapack.so.3 \
  > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build build-dev --target ${TK_TARGETS:-tk-bench} -j16 > "$OUT/build.log" 2>&1 || { grep -m20 -B2 -A5 error "$OUT/build.log"; exit 1; }
export LD_LIBRARY_PATH=$PWD/.deps/lapack/lib
B=build-dev/bin/tk-bench
for lanes in ${LANES-0 1 2 4 8 16 32 64}; do
  echo "== lanes $lanes"
  $B eig --backends cuda --sizes ${SIZES:-5,10,15,20,25,30} --cuda-lanes $lanes 2>&1 | grep -v '^ *$' | tail -12
done
if [ -n "${PROFILE:-}" ]; then
  for n in $PROFILE; do
    ncu --launch-skip 1 --launch-count 1 -k regex:eig_kernel --set full --import-source yes -f -o "$OUT/eig$n" \
      $B eig --backends cuda --sizes $n --matrices 50000 > "$OUT/ncu$n.log" 2>&1 || tail -5 "$OUT/ncu$n.log"
    ncu -i "$OUT/eig$n.ncu-rep" --page details > "$OUT/eig$n.txt" 2>&1
    ncu -i "$OUT/eig$n.ncu-rep" --page source --csv --print-source cuda > "$OUT/eig${n}_src.csv" 2>"$OUT/eig${n}_src.err"
    grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Compute \(SM\) Throughput|Memory Throughput|Block Limit" "$OUT/eig$n.txt" | head -12
  done
fi
