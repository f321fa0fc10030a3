#!/bin/bash
# On the lent GPU machine: the Python package with its CUDA backends (sm_90 only) on the
# interpreter that has CuPy and PyTorch (/opt/torch/.venv: numpy, cupy, torch, nanobind, pytest;
# no nibabel, dask or DIPY, no network), and its `gpu`-marked pytest tests (test_gpu.py: the
# CUDA backends on NumPy arrays; test_gpu_arrays.py: CuPy arrays and torch CUDA tensors staying
# on the GPU).  Run from the checkout's root with .deps/ carried:
#   OUT=... bash scripts/device/python_gpu.sh [PYTEST ARGS...]
# No pip: build_dev.sh's build-dev gets the extension (TK_WITH_PYTHON=ON; the cores' objects are
# those of the GPU tests' build, so after build_dev.sh only the bindings compile), and the package
# is assembled in build-dev/python-package (the extension from the build tree, which keeps its
# run path to the CUDA runtime, beside python/tensorkernels/*.py) on PYTHONPATH.  Then the GPU
# timings of python/benchmarks/gpu_arrays_timing.py.
# Exit: pytest's; 77 where the interpreter lacks what the build or the tests need; 1 on a build failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/python_gpu}; mkdir -p "$OUT"
py=${TK_PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$py" ] || { echo "SKIPPED: no $py"; exit 77; }
"$py" - <<'PY' || exit 77
import importlib.util, os, sys, sysconfig
missing = [m for m in ("numpy", "nanobind", "pytest") if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"SKIPPED: {sys.executable} lacks {', '.join(missing)}")
if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
    sys.exit(f"SKIPPED: no Python.h for {sys.executable} in {sysconfig.get_paths()['include']}")
print("python", sys.version.split()[0], "with", ", ".join(
    f"{m} {__import__(m).__version__}" for m in ("numpy", "nanobind", "pytest", "cupy", "torch")
    if importlib.util.find_spec(m)))
PY
start=$(date +%s)
TK_DEV_CMAKE_ARGS="-DTK_WITH_PYTHON=ON -DPython_EXECUTABLE=$py" source scripts/device/build_dev.sh _tensorkernels || exit 1
echo "built the extension in $(( $(date +%s) - start )) s"
pkg=$PWD/build-dev/python-package
rm -rf "$pkg" && mkdir -p "$pkg/tensorkernels"
cp python/tensorkernels/*.py python/tensorkernels/*.pyi python/tensorkernels/py.typed "$pkg/tensorkernels/"
so=$(find build-dev/lib build-dev/python -maxdepth 1 -name '_tensorkernels*.so' 2>/dev/null | head -n 1)
[ -n "$so" ] || { echo "no _tensorkernels*.so in build-dev/lib or build-dev/python"; exit 1; }
cp "$so" "$pkg/tensorkernels/"
export PYTHONPATH=$pkg
"$py" -m tensorkernels --version
cd python/tests
"$py" -m pytest -q -rs -p no:cacheprovider -m gpu test_gpu.py test_gpu_arrays.py "$@" 2>&1 | tee "$OUT/pytest_gpu.log"
rc=${PIPESTATUS[0]}
# The GPU figures of python.md: NumPy on the cuda backend (copies included) against CuPy and torch
# arrays (no copy), about a minute (TK_PYTHON_GPU_BENCH=0 skips it)
if [ "${TK_PYTHON_GPU_BENCH:-1}" != 0 ]; then
    nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1
    "$py" ../benchmarks/gpu_arrays_timing.py 2>&1 | tee "$OUT/gpu_arrays_timing.log"
fi
echo "python_gpu.sh: $(( $(date +%s) - start )) s in all, pytest exit $rc"
exit "$rc"
