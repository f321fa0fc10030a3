#!/usr/bin/env bash
# CTest tk_python_package: builds the package offline into a virtual environment under the build
# tree (python/venv_install.sh) and runs its pytest suite there.  Usage: run_ctest.sh SOURCE_DIR
# BUILD_DIR.  Exit 77 (CTest: skipped) with the reason where that cannot be done offline.
set -uo pipefail
src=$1 build=$2
py=${TK_PYTHON:-/usr/bin/python3}
"$py" -c "import pytest, scipy" 2>/dev/null ||
    { echo "SKIPPED: pytest or scipy missing for $py (python3-pytest, python3-scipy; scripts/setup.sh installs them)"; exit 77; }
bash "$src/python/venv_install.sh" "$build" --offline || exit
# From the build tree, so that python/ itself (the sources, no extension) is not on sys.path.
# TK_BUILD_DIR: the tests that compare with a tool (tk-tucker, tk-pltf) find it in its bin/.
export TK_BUILD_DIR=$build
cd "$build/python-package" && exec venv/bin/python -m pytest -q -p no:cacheprovider "$src/python/tests"
