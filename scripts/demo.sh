#!/usr/bin/env bash
# The main jobs on the bundled data: fiber directions of a real FOD volume (tk-fibers),
# and the eigenpairs of crossing-fiber tensors (tk-teig); then the same two through the Python
# package (python/examples/demo.py, the package built into build/python-package/venv).  The set-up prints a line a step,
# with the whole output of each in build/logs/; then the outputs' paths.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
tk_install_packages
# GPU code for every architecture this CUDA builds (the default; test.sh narrows it), so the
# demo's tools run on the GPU of any machine they are copied to.
tk_configure_and_build "-DTK_CUDA_ARCHITECTURES=${TK_CUDA_ARCHITECTURES:-all}"
out="$TK_BUILD/demo"
mkdir -p "$out"
echo "running the demo: tk-fibers and tk-teig on Data/"

fod="$TK_ROOT/Data/fibers/small_101D_fod.nii.gz"
if [ -x "$TK_BUILD/bin/tk-fibers" ]; then
    fibers=("$TK_BUILD/bin/tk-fibers" "$fod" "$out/small_101D_peaks.nii.gz" --amplitudes "$out/small_101D_amplitudes.nii.gz")
    visual=""
    if "$TK_BUILD/bin/tk-fibers" --help | grep -q -- "--vtp FIBERS.vtp"; then
        # The .vtp needs no display; the .png renders offscreen on X: Xvfb when there is no display.
        if [ -n "${DISPLAY:-}" ]; then
            fibers+=(--vtp "$out/small_101D_fibers.vtp" --png "$out/small_101D_slice.png"); visual=both
        elif command -v xvfb-run >/dev/null 2>&1; then
            fibers=(xvfb-run -a "${fibers[@]}" --vtp "$out/small_101D_fibers.vtp" --png "$out/small_101D_slice.png"); visual=both
        else
            fibers+=(--vtp "$out/small_101D_fibers.vtp"); visual=vtp
            echo "no X display and no xvfb-run (Debian's xvfb): the slice picture is left out" >&2
        fi
    fi
    "${fibers[@]}"
    echo "tk-fibers: fiber directions of $fod (sh2peaks layout: 3 volumes per peak, direction x amplitude)"
    echo "  peaks:      $out/small_101D_peaks.nii.gz"
    echo "  amplitudes: $out/small_101D_amplitudes.nii.gz"
    if [ -n "$visual" ]; then
        echo "  glyphs:     $out/small_101D_fibers.vtp (VTK lines in RAS mm: ParaView, Slicer)"
    fi
    if [ "$visual" = both ]; then
        echo "  picture:    $out/small_101D_slice.png (axial slice, radiological view)"
    fi
    if [ -z "$visual" ]; then
        echo "  (no .vtp/.png: tk-fibers was built without VTK; install libvtk9-dev and rebuild)"
    fi
else
    echo "tk-fibers was not built (it needs ITK: libinsighttoolkit5-dev)" >&2
fi

input="$TK_ROOT/Data/teig/crossing_fibers_4_3.npy"
"$TK_BUILD/bin/tk-teig" --order 4 --dim 3 --input "$input" --output "$out/crossing_fibers_eigenpairs.csv"
echo "tk-teig: $(($(wc -l < "$out/crossing_fibers_eigenpairs.csv") - 1)) distinct eigenpairs (local maxima) of the 16 tensors in $input"
echo "  output: $out/crossing_fibers_eigenpairs.csv"

# The Python package: pip install ./python into a venv in the build tree (python/venv_install.sh;
# the build requirements from build/python-wheels, else PyPI), then its example.
tk_python_wheels
rc=0
tk_logged "python package: pip install ./python into $(tk_rel "$TK_BUILD")/python-package/venv" python-package \
    bash "$TK_ROOT/python/venv_install.sh" "$TK_BUILD" || rc=$?
if [ "$rc" = 0 ]; then
    echo "python: tensorkernels.fibers.peaks and tensorkernels.eigenpairs on the same data (python/examples/demo.py)"
    "$TK_BUILD/python-package/venv/bin/python" "$TK_ROOT/python/examples/demo.py" "$fod" "$input" "$out"
elif [ "$rc" = 77 ]; then
    echo "the Python package was not built: $(grep SKIPPED "$TK_BUILD/logs/python-package.log")" >&2
else
    exit "$rc"
fi
echo "outputs: $out/"
