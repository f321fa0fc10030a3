#!/usr/bin/env bash
# Set up, build, then run the whole CTest suite (GPU tests skip without a GPU).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
tk_install_packages
tk_configure_and_build
cd "$TK_BUILD"
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" --timeout 600
