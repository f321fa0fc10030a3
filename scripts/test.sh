#!/usr/bin/env bash
# Set up, build, then run the whole CTest suite (GPU tests skip without a GPU),
# then the CPU tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
# Each step prints a line; the whole output of each is in build/logs/ (build-asan/logs/),
# shown from its end when the step fails.  Ends with CTest's summary; fails when a step does.
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/setup.sh"
tk_install_packages
tk_python_env
tk_python_wheels
# CUDA code for two architectures instead of all twelve of CUDA 13 (TK_CUDA_ARCHITECTURES=all,
# the default everywhere else): sm_75, the oldest, compiles every path for GPUs without sm_80's
# instructions, and 121, the newest, with its PTX, every path for the others; no source path
# depends on the architectures between.  Each architecture costs eig_cuda.cu about 2.5 and
# pltf_cuda_fused.cu about 5 minutes of a core (sm_90: 142 s and 279 s on a 2-core machine);
# all twelve, about an hour and a half of compiling, more than the CI's time.  The CTest
# tk_cuda_architectures still checks that the default is every architecture nvcc knows, and
# that this build holds what it was configured for.  TK_CUDA_ARCHITECTURES=all ./scripts/test.sh
# builds them all.
tk_configure_and_build "-DTK_CUDA_ARCHITECTURES=${TK_CUDA_ARCHITECTURES:-75-real;121}"
tk_ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" --timeout 900
echo "== sanitizer build (ASan + UBSan), CPU tests =="
TK_SKIP_INSTALL=1 "$here/sanitize.sh"
