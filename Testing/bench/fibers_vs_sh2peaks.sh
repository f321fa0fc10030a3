#!/usr/bin/env bash
# tk-fibers against MRtrix3's sh2peaks in one run, same input, same cores: the real FOD of
# Data/fibers tiled to 64,200 voxels (lmax 8), 3 peaks.  Usage: fibers_vs_sh2peaks.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$root/Data/fibers/small_101D_fod.nii.gz" "$tmp/big.nii" <<'PY'
import sys
import nibabel as nib
import numpy as np
img = nib.load(sys.argv[1])
data = np.tile(img.get_fdata(dtype=np.float32), (107, 1, 1, 1))
nib.save(nib.Nifti1Image(data, img.affine), sys.argv[2])
PY
threads=$(nproc)
voxels=64200
t0=$(date +%s.%N); sh2peaks -quiet -force -nthreads "$threads" -num 3 "$tmp/big.nii" "$tmp/ref.nii"; t1=$(date +%s.%N)
"$build/bin/tk-fibers" --quiet --num 3 "$tmp/big.nii" "$tmp/ours.nii"; t2=$(date +%s.%N)
python3 - "$t0" "$t1" "$t2" "$voxels" "$threads" <<'PY'
import sys
t0, t1, t2, v, n = map(float, sys.argv[1:])
ref, ours = t1 - t0, t2 - t1
print(f"fibers, {int(v)} voxels lmax 8, 3 peaks, {int(n)} threads (file I/O included in both):")
print(f"  sh2peaks  {ref:8.3f} s  {v / ref:10.0f} voxels/s")
print(f"  tk-fibers {ours:8.3f} s  {v / ours:10.0f} voxels/s   {ref / ours:6.1f}x sh2peaks (goal 20x)")
PY
