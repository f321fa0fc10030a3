# Sourced by the device scripts: configure build-dev against the carried .deps/ (googletest
# .deb, LAPACKE/OpenBLAS .so files, ITK's .debs: make_deps.sh; ITK on where its .debs are
# there, unpacked to /tmp/itkroot, else -DTK_WITH_ITK=OFF) and build the targets given
# as arguments (all when none), for the lent GPU's sm_90 only unless TK_CUDA_ARCHITECTURES says
# otherwise (all twelve architectures take far longer than a lent command may run).  Logs in $OUT.
[ -d /tmp/gt/usr ] || { mkdir -p /tmp/gt && dpkg -x .deps/googletest_*.deb /tmp/gt; }
# The device's Debian python3 has no numpy, so the bad-input and backend-auto CTests would skip: use the torch venv's.
pyopt=""; [ -x /opt/torch/.venv/bin/python3 ] && pyopt="-DTK_TEST_PYTHON=/opt/torch/.venv/bin/python3"
itkopt="-DTK_WITH_ITK=OFF"; itklib=""
if ls .deps/itk/*.deb > /dev/null 2>&1; then
  mkdir -p /tmp/itkroot && for d in .deps/itk/*.deb; do dpkg -x "$d" /tmp/itkroot; done
  # Debian's ITKConfig.cmake configures every enabled module before the requested ones, so
  # it looks for GDCM, HDF5, DCMTK, MINC... that this machine has not: keep the requested only
  sed -i 's/^itk_module_config(ITK ${ITK_MODULES_ENABLED})$/# all-module config dropped by build_dev.sh/' \
    /tmp/itkroot/usr/lib/cmake/ITK-5.2/ITKConfig.cmake
  itkopt="-DTK_WITH_ITK=ON -DITK_DIR=/tmp/itkroot/usr/lib/cmake/ITK-5.2"; itklib=":/tmp/itkroot/usr/lib"
fi
# TK_DEV_CMAKE_ARGS: more -D options (python_gpu.sh adds the Python extension's); TK_DEV_BUILD:
# the build folder (default build-dev: a second one builds a variant beside it)
bdir=${TK_DEV_BUILD:-build-dev}
cmake -S . -B $bdir $itkopt -DTK_WITH_VTK=OFF -DCMAKE_BUILD_TYPE=Release -DTK_CUDA_ARCHITECTURES=${TK_CUDA_ARCHITECTURES:-90} $pyopt ${TK_DEV_CMAKE_ARGS:-} \
  -DTK_GTEST_SOURCE_DIR=/tmp/gt/usr/src/googletest -DTK_LAPACKE_INCLUDE_DIR=$PWD/.deps/lapack/include \
  -DTK_LAPACKE_LIBRARY=$PWD/.deps/lapack/lib/liblapacke.so.3 -DTK_LAPACK_LIBRARY=$PWD/.deps/lapack/lib/liblapack.so.3 \
  > "$OUT/configure_$bdir.log" 2>&1 || { tail -30 "$OUT/configure_$bdir.log"; return 1; }
# the libraries at run time, the build's too: gtest discovery runs each test executable
export LD_LIBRARY_PATH=$PWD/.deps/lapack/lib$itklib
targets=""; for t in "$@"; do targets="$targets --target $t"; done
cmake --build $bdir $targets -j16 > "$OUT/build_$bdir.log" 2>&1 || { grep -m20 -B2 -A5 error "$OUT/build_$bdir.log"; return 1; }
