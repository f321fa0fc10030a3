#!/usr/bin/env bash
# ASan + UBSan build of the CPU code in build-asan/, then every CPU test under it
# (logs in build-asan/logs/).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
if [ "${TK_SKIP_INSTALL:-0}" != 1 ]; then tk_install_packages; fi
TK_BUILD="$TK_ROOT/build-asan"
tk_configure_and_build -DCMAKE_BUILD_TYPE=Debug -DTK_SANITIZE=ON -DTK_WITH_CUDA=OFF -DTK_WITH_ITK=OFF -DTK_WITH_VTK=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    tk_ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" -L cpu --timeout 900
