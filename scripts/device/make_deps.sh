#!/bin/bash
# Here (Debian, not on the GPU machine): fill .deps/ (ignored by git) with what the device
# scripts carry -- the googletest .deb, LAPACKE with the reference LAPACK and BLAS (Debian's
# liblapack3/libblas3: the tests use LAPACK as an oracle, not for speed, and OpenBLAS's 36 MB
# would push the carried tree past the device's 64 MiB), ITK's .debs -- then pass carry
# [".deps"] to the device run.  About 23 MB.  Needs liblapacke-dev installed
# (scripts/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/../.."
L=/usr/lib/x86_64-linux-gnu
rm -rf .deps && mkdir -p .deps/lapack/include .deps/lapack/lib
cp /usr/include/lapacke*.h .deps/lapack/include/
cp "$L"/openblas-pthread/*.h .deps/lapack/include/ 2>/dev/null || true
for f in liblapacke.so.3 libtmglib.so.3 libgfortran.so.5 libquadmath.so.0; do cp -L "$L/$f" .deps/lapack/lib/; done
ref=$(mktemp -d) && (cd "$ref" && apt-get download liblapack3 libblas3 >/dev/null && for d in *.deb; do dpkg -x "$d" x; done)
cp -L "$ref/x$L/lapack/liblapack.so.3" "$ref/x$L/blas/libblas.so.3" .deps/lapack/lib/ && rm -rf "$ref"
(cd .deps && apt-get download googletest >/dev/null)
# ITK 5.2 (Debian's runtime and development packages, about 9 MB): build_dev.sh unpacks them
# on the device so that the ITK module's tests (their CUDA cases) run on a GPU.  Its config
# files locate everything relative to themselves, and the libraries need only zlib beyond them.
mkdir -p .deps/itk && (cd .deps/itk && apt-get download libinsighttoolkit5-dev libinsighttoolkit5.2 >/dev/null)
du -sh .deps
