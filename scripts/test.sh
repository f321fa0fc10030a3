#!/usr/bin/env bash
# Set up, build, then run the whole CTest suite (GPU tests skip without a GPU),
# then the CPU tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/setup.sh"
tk_install_packages
tk_python_env
tk_configure_and_build
(cd "$TK_BUILD" && ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" --timeout 900)
echo "== sanitizer build (ASan + UBSan), CPU tests =="
TK_SKIP_INSTALL=1 "$here/sanitize.sh"
