#!/usr/bin/env bash
# Builds and installs the package (this folder) into a virtual environment under a build tree:
#   venv_install.sh BUILD_DIR [--offline]
# The environment is BUILD_DIR/python-package/venv, made from Debian's Python with its site
# packages (numpy, scipy, nibabel, DIPY, pytest from Debian's packages); the extension's CMake
# tree is kept in BUILD_DIR/python-package/build, so a rerun recompiles only what changed.  The
# pinned build requirements (pyproject.toml) come from BUILD_DIR/python-wheels, which
# scripts/setup.sh (tk_python_wheels) fills while PyPI is reachable; --offline takes them from
# there alone (the CTest), else PyPI makes up what is missing (the demo).
# Exit 77 with the reason where it cannot be done (no Python, no venv, --offline and no wheels);
# 1 when the build fails, with the end of its log.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build=$(mkdir -p "$1" && cd "$1" && pwd) offline=${2:-}  # absolute: pip runs the build from python/
py=${TK_PYTHON:-/usr/bin/python3}
root=$build/python-package wheels=$build/python-wheels
venv=$root/venv
skip() { echo "SKIPPED: $*"; exit 77; }

[ -x "$py" ] || skip "no $py"
"$py" -c "import numpy" 2>/dev/null || skip "numpy missing for $py (python3-numpy)"
mkdir -p "$root"
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv --system-site-packages "$venv" >"$root/venv.log" 2>&1 ||
        skip "$py -m venv failed (python3-venv): $(tail -n 1 "$root/venv.log")"
fi
index=()
if [ "$offline" = --offline ]; then
    mapfile -t reqs < <(grep -o '"[A-Za-z0-9_.-]*==[0-9.]*"' "$here/pyproject.toml" | tr -d '"')
    for r in "${reqs[@]}"; do
        compgen -G "$wheels/$(echo "${r%%==*}" | tr - _)-${r##*==}-*.whl" >/dev/null ||
            skip "$r is not in $wheels: the build is offline here; scripts/setup.sh (tk_python_wheels) downloads it while PyPI is reachable"
    done
    index=(--no-index)
fi
[ -d "$wheels" ] && index+=(--find-links "$wheels")
# --no-deps: numpy is Debian's (seen through --system-site-packages); --config-settings, not -C:
# Debian 12's pip 23.0 has only the long form.
if ! "$venv/bin/python" -m pip install "${index[@]}" --no-deps --force-reinstall \
        --config-settings build-dir="$root/build" "$here" >"$root/pip.log" 2>&1; then
    tail -n 40 "$root/pip.log"
    echo "pip install ./python failed; the whole log: $root/pip.log"
    exit 1
fi
echo "tensorkernels installed in $venv ($("$venv/bin/python" -m tensorkernels --version))"
