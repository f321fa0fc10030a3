#!/usr/bin/env bash
# The main job on the bundled data: eigenpairs of the crossing-fiber tensors.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
tk_install_packages
tk_configure_and_build
out="$TK_BUILD/demo"
mkdir -p "$out"
input="$TK_ROOT/Data/teig/crossing_fibers_4_3.npy"
"$TK_BUILD/bin/tk-teig" --order 4 --dim 3 --input "$input" --output "$out/crossing_fibers_eigenpairs.csv"
echo
echo "tk-teig found $(($(wc -l < "$out/crossing_fibers_eigenpairs.csv") - 1)) distinct eigenpairs (local maxima) of the 16 tensors in"
echo "  $input"
echo "Output: $out/crossing_fibers_eigenpairs.csv"
head -n 6 "$out/crossing_fibers_eigenpairs.csv"
