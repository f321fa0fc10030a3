#!/usr/bin/env bash
# The main jobs on the bundled data: fiber directions of a real FOD volume (tk-fibers),
# and the eigenpairs of crossing-fiber tensors (tk-teig).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
tk_install_packages
tk_configure_and_build
out="$TK_BUILD/demo"
mkdir -p "$out"

fod="$TK_ROOT/Data/fibers/small_101D_fod.nii.gz"
if [ -x "$TK_BUILD/bin/tk-fibers" ]; then
    "$TK_BUILD/bin/tk-fibers" "$fod" "$out/small_101D_peaks.nii.gz" --amplitudes "$out/small_101D_amplitudes.nii.gz"
    echo "tk-fibers: fiber directions of $fod (sh2peaks layout: 3 volumes per peak, direction x amplitude)"
    echo "  peaks:      $out/small_101D_peaks.nii.gz"
    echo "  amplitudes: $out/small_101D_amplitudes.nii.gz"
else
    echo "tk-fibers was not built (it needs ITK: libinsighttoolkit5-dev)" >&2
fi

input="$TK_ROOT/Data/teig/crossing_fibers_4_3.npy"
"$TK_BUILD/bin/tk-teig" --order 4 --dim 3 --input "$input" --output "$out/crossing_fibers_eigenpairs.csv"
echo "tk-teig: $(($(wc -l < "$out/crossing_fibers_eigenpairs.csv") - 1)) distinct eigenpairs (local maxima) of the 16 tensors in $input"
echo "  output: $out/crossing_fibers_eigenpairs.csv"
