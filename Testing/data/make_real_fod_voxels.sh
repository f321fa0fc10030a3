#!/usr/bin/env bash
# Real FOD voxels for the peak finder's completeness tests (Testing/data/real_fod_voxels.npy):
# DIPY's small_64D DWI through MRtrix3 as its users run it (dwi2response tournier, dwi2fod csd
# -lmax 8: tournier07 basis, world frame), then 24 voxels: first (4,0,9), which holds a strict
# maximum of amplitude 0.1753 on a ridge that climbs on to a larger lobe (sh2peaks
# -threshold 0 finds it), then 23 more non-zero voxels picked with a fixed seed.
# Needs mrtrix3, python3-dipy, python3-nibabel.  Usage: make_real_fod_voxels.sh [OUT.npy]
set -euo pipefail
out="${1:-$(cd "$(dirname "$0")" && pwd)/real_fod_voxels.npy}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
read -r dwi bval bvec < <(/usr/bin/python3 -c "from dipy.data import get_fnames; print(*get_fnames('small_64D'))")
mrconvert -quiet "$dwi" -fslgrad "$bvec" "$bval" "$tmp/dwi.mif"
dwi2response -quiet tournier "$tmp/dwi.mif" "$tmp/response.txt" -scratch "$tmp"
dwi2fod -quiet csd -lmax 8 "$tmp/dwi.mif" "$tmp/response.txt" "$tmp/fod.mif"
mrconvert -quiet "$tmp/fod.mif" "$tmp/fod.nii"
/usr/bin/python3 - "$tmp/fod.nii" "$out" <<'PY'
import sys
import nibabel as nib
import numpy as np
fod = np.asarray(nib.load(sys.argv[1]).dataobj, dtype=np.float32)
flat = fod.reshape(-1, fod.shape[-1])
nonzero = np.flatnonzero(np.any(flat[:, 1:] != 0, axis=1))
first = np.ravel_multi_index((4, 0, 9), fod.shape[:3])
rest = np.random.default_rng(2026).choice(nonzero[nonzero != first], 23, replace=False)
np.save(sys.argv[2], np.ascontiguousarray(flat[np.concatenate(([first], rest))]))
PY
