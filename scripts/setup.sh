#!/usr/bin/env bash
# Shared set-up of demo.sh and test.sh: install what is missing (Debian), configure
# and build in build/.  Sourced, not run.
set -euo pipefail

TK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TK_BUILD="${TK_BUILD:-$TK_ROOT/build}"

# Debian packages the build and the tests need.  The ITK and VTK parts add theirs
# to TK_OPTIONAL_PACKAGES as they land; the C core needs none of them.
# libfftw3-dev and uuid-dev are only recommended by libinsighttoolkit5-dev, but its exported
# CMake targets link FFTW, so a --no-install-recommends install needs them named.  The Python
# packages run the phantom generator and its validation (Testing/validation).  VTK: tk-fibers
# --vtp/--png; its render windows are X ones, so libx11-dev, and Xvfb (xvfb, xauth: xvfb-run)
# to render without a display.
TK_PACKAGES=(build-essential cmake libgtest-dev python3 libinsighttoolkit5-dev libfftw3-dev uuid-dev mrtrix3 liblapacke-dev libopenblas-dev
             python3-numpy python3-scipy python3-nibabel python3-dipy libvtk9-dev libx11-dev xvfb xauth)
TK_OPTIONAL_PACKAGES=()
# xmllint checks the tools' Slicer descriptions; doxygen builds the API reference (target doc);
# matplotlib draws the benchmark plots.
TK_PACKAGES+=(libxml2-utils doxygen python3-matplotlib)
# clang with libFuzzer (libclang-rt-14-dev holds libclang_rt.fuzzer): the fuzz targets (TK_FUZZ).
TK_PACKAGES+=(clang libclang-rt-14-dev)
# The Slicer round-trip test: VTK's Python (reads the .vtp), venv and pip for ctk_cli (tk_python_env).
TK_PACKAGES+=(python3-vtk9 python3-venv python3-pip)
# zlib: .mif.gz and .nii.gz in the tools' own image-format code (tools/io/mif_io.c, nifti_header.c).
TK_PACKAGES+=(zlib1g-dev)
# libbz2: NRRD files of encoding bzip2 (tools/io/image_nrrd.c; ITK 5.2's NrrdIO does not read them).
TK_PACKAGES+=(libbz2-dev)

tk_missing_packages() {
    local pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
    done
}

tk_install_packages() {
    command -v dpkg-query >/dev/null 2>&1 || { echo "setup: not a Debian system; install the packages by hand: ${TK_PACKAGES[*]}" >&2; return 0; }
    local missing
    missing=$(tk_missing_packages "${TK_PACKAGES[@]}" "${TK_OPTIONAL_PACKAGES[@]+"${TK_OPTIONAL_PACKAGES[@]}"}")
    [ -z "$missing" ] && return 0
    local sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    echo "setup: installing $(echo $missing | tr '\n' ' ')" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    # shellcheck disable=SC2086
    $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# ctk_cli (PyPI ctk-cli), CommonTK's parser of Slicer module descriptions, for the Slicer
# round-trip test: in a virtual environment in the build tree (Debian's Python is externally
# managed) that also sees Debian's numpy, nibabel and VTK (--system-site-packages).
tk_python_env() {
    local env="$TK_BUILD/python"
    if [ ! -x "$env/bin/python3" ]; then /usr/bin/python3 -m venv --system-site-packages "$env"; fi
    "$env/bin/python3" -c "import ctk_cli" 2>/dev/null || "$env/bin/python3" -m pip install -q "ctk-cli==1.5"
}

tk_configure_and_build() {
    local jobs
    jobs=$(nproc 2>/dev/null || echo 2)
    cmake -S "$TK_ROOT" -B "$TK_BUILD" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
    cmake --build "$TK_BUILD" -j "$jobs"
}
