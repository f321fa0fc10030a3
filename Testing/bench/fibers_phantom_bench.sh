#!/usr/bin/env bash
# tk-fibers against MRtrix3's sh2peaks on the large phantom (Data/fibers/make_phantom.py
# --samples 2500: 80,000 voxels of 1-3 fibers, lmax 8), same cores, one run, file I/O included
# in both.  Usage: fibers_phantom_bench.sh [BUILD_DIR] [SAMPLES]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
samples="${2:-2500}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$root/Data/fibers/make_phantom.py" --samples "$samples" --out "$tmp" >/dev/null
voxels=$((8 * samples * 4))
threads=$(nproc)
t0=$(date +%s.%N); sh2peaks -quiet -force -nthreads "$threads" -num 3 "$tmp/phantom_sh.nii.gz" "$tmp/ref.nii"; t1=$(date +%s.%N)
"$build/bin/tk-fibers" --quiet --num 3 "$tmp/phantom_sh.nii.gz" "$tmp/ours.nii"; t2=$(date +%s.%N)
/usr/bin/python3 - "$t0" "$t1" "$t2" "$voxels" "$threads" <<'PY'
import sys
t0, t1, t2, v, n = map(float, sys.argv[1:])
ref, ours = t1 - t0, t2 - t1
print(f"fibers phantom, {int(v)} voxels lmax 8, 3 peaks, {int(n)} threads (file I/O included in both):")
print(f"  sh2peaks  {ref:8.3f} s  {v / ref:10.0f} voxels/s")
print(f"  tk-fibers {ours:8.3f} s  {v / ours:10.0f} voxels/s   {ref / ours:6.1f}x sh2peaks (goal 20x)")
PY
