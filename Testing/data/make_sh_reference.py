#!/usr/bin/python3
"""Reference SH values from DIPY (Debian's python3-dipy 1.6) for the tests of tk_sh_eval.

Writes sh_reference_dirs.npy (60, 3) unit directions and sh_reference_values.npy
(4, 60, 45): lmax 8 bases evaluated by DIPY in the order
tournier07 (legacy=False), tournier07 (legacy=True), descoteaux07 (legacy=False),
descoteaux07 (legacy=True).  Run once; the outputs are committed so the tests need no DIPY.
"""
import warnings

import numpy as np
from dipy.reconst.shm import real_sh_descoteaux, real_sh_tournier

warnings.simplefilter("ignore")
rng = np.random.default_rng(20261123)
dirs = rng.normal(size=(60, 3))
dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
dirs[0] = [0, 0, 1]          # the pole, where the azimuth is undefined
dirs[1] = [1, 0, 0]
theta = np.arccos(np.clip(dirs[:, 2], -1, 1))
phi = np.arctan2(dirs[:, 1], dirs[:, 0])
out = []
for fn, legacy in [(real_sh_tournier, False), (real_sh_tournier, True),
                   (real_sh_descoteaux, False), (real_sh_descoteaux, True)]:
    values, _, _ = fn(8, theta, phi, legacy=legacy)
    out.append(values)
np.save("sh_reference_dirs.npy", dirs)
np.save("sh_reference_values.npy", np.array(out))
