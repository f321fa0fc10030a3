"""Exact local maxima of lmax-8 SH functions on the sphere, independent of our C code.

A dense search (a Fibonacci sphere of 20,000 directions, neighbours from its convex hull:
a vertex not below any neighbour is a candidate), then Newton's method in the tangent plane
with central finite differences (h = 1e-4 rad: gradient error ~1e-8, far below the 0.01
degree scale we check), all candidates at once.  Basis: DIPY's tournier07 (non-legacy),
MRtrix3's convention, evaluated through scipy's spherical harmonics.
"""
import numpy as np
from dipy.reconst.shm import real_sh_tournier
from scipy.spatial import ConvexHull


def sh_basis(dirs, lmax=8):
    dirs = np.asarray(dirs, dtype=np.float64).reshape(-1, 3)
    theta = np.arccos(np.clip(dirs[:, 2], -1, 1))
    phi = np.arctan2(dirs[:, 1], dirs[:, 0])
    return real_sh_tournier(lmax, theta, phi, legacy=False)[0]


def fibonacci_sphere(n):
    i = np.arange(n) + 0.5
    z = 1 - 2 * i / n
    r = np.sqrt(1 - z * z)
    phi = np.pi * (1 + 5 ** 0.5) * i
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def _neighbours(points):
    edges = set()
    for a, b, c in ConvexHull(points).simplices:
        edges.update({(a, b), (b, a), (a, c), (c, a), (b, c), (c, b)})
    nbr = [[] for _ in range(len(points))]
    for a, b in edges:
        nbr[a].append(b)
    width = max(len(x) for x in nbr)
    out = np.empty((len(points), width), dtype=np.int64)
    for i, x in enumerate(nbr):
        out[i] = x + [x[0]] * (width - len(x))
    return out


_GRID = {}


def _grid(n):
    if n not in _GRID:
        pts = fibonacci_sphere(n)
        _GRID[n] = (pts, _neighbours(pts), sh_basis(pts))
    return _GRID[n]


def _tangent_basis(x):
    helper = np.where(np.abs(x[:, 0:1]) < 0.9, [[1.0, 0, 0]], [[0, 1.0, 0]])
    e1 = np.cross(x, helper)
    e1 /= np.linalg.norm(e1, axis=1)[:, None]
    return e1, np.cross(x, e1)


def _values(coeffs, x):
    return np.einsum("ij,ij->i", sh_basis(x), coeffs)


def _normalize(x):
    return x / np.linalg.norm(x, axis=1)[:, None]


def _derivatives(coeffs, x, h):
    e1, e2 = _tangent_basis(x)
    f0 = _values(coeffs, x)
    fv = {}
    for a in (-1, 0, 1):
        for b in (-1, 0, 1):
            if a or b:
                fv[a, b] = _values(coeffs, _normalize(x + h * (a * e1 + b * e2)))
    g = np.stack([(fv[1, 0] - fv[-1, 0]) / (2 * h), (fv[0, 1] - fv[0, -1]) / (2 * h)], axis=1)
    h11 = (fv[1, 0] - 2 * f0 + fv[-1, 0]) / h ** 2
    h22 = (fv[0, 1] - 2 * f0 + fv[0, -1]) / h ** 2
    h12 = (fv[1, 1] - fv[1, -1] - fv[-1, 1] + fv[-1, -1]) / (4 * h * h)
    return e1, e2, f0, g, h11, h12, h22


def refine(coeffs, x, iterations=25, h=1e-4):
    """Newton ascent on the sphere from x (N, 3), coefficients (N, 45) per start.
    Returns the directions, their values and whether each is a strict local maximum."""
    x = _normalize(np.array(x, dtype=np.float64))
    for _ in range(iterations):
        e1, e2, f0, g, h11, h12, h22 = _derivatives(coeffs, x, h)
        det = h11 * h22 - h12 * h12
        concave = (h11 < 0) & (det > 0)
        safe = np.where(concave, det, 1.0)
        newton = -np.stack([(h22 * g[:, 0] - h12 * g[:, 1]) / safe, (-h12 * g[:, 0] + h11 * g[:, 1]) / safe], axis=1)
        scale = np.maximum(np.abs(f0), 1e-12)[:, None]
        step = np.where(concave[:, None], newton, 0.01 * g / scale)  # gradient step off the concave basin
        norm = np.linalg.norm(step, axis=1)[:, None]
        step *= np.minimum(1.0, np.radians(1.0) / np.maximum(norm, 1e-300))  # at most 1 degree per step
        x = _normalize(x + step[:, 0:1] * e1 + step[:, 1:2] * e2)
        if np.all(norm < 1e-12):  # converged (Newton: quadratically)
            break
    e1, e2, f0, g, h11, h12, h22 = _derivatives(coeffs, x, h)
    curvature = np.maximum(np.abs(h11) + np.abs(h22), 1e-300)
    strict = (h11 < 0) & (h11 * h22 - h12 * h12 > 0) & (np.linalg.norm(g, axis=1) / curvature < 1e-6)
    return x, f0, strict


def canonical(d):
    """x and -x are one fiber: the sign that makes the largest-magnitude component positive."""
    d = np.asarray(d, dtype=np.float64)
    idx = np.argmax(np.abs(d), axis=-1)
    s = np.sign(np.take_along_axis(d, idx[..., None], axis=-1))
    return d * np.where(s == 0, 1, s)


def all_maxima(coeffs, grid_size=20000, merge_deg=0.5, floor=0.05):
    """Per voxel (coeffs (V, 45)): list of (directions (k, 3), amplitudes (k,)) sorted by amplitude,
    the maxima of at least `floor` times the voxel's largest (smaller bumps are not refined)."""
    coeffs = np.asarray(coeffs, dtype=np.float64)
    pts, nbr, basis = _grid(grid_size)
    values = coeffs @ basis.T  # (V, P)
    is_max = np.all(values[:, :, None] >= values[:, nbr], axis=2)
    is_max &= values >= floor * values.max(axis=1, keepdims=True)
    voxel, point = np.nonzero(is_max)
    x, amp, strict = refine(coeffs[voxel], pts[point])
    x = canonical(x)
    voxel = np.where(strict, voxel, -1)  # starts that ended off a strict maximum
    result = []
    cos_merge = np.cos(np.radians(merge_deg))
    for v in range(len(coeffs)):
        sel = np.nonzero(voxel == v)[0]
        order = sel[np.argsort(-amp[sel])]
        dirs, amps = [], []
        for i in order:
            if all(abs(np.dot(x[i], d)) < cos_merge for d in dirs):
                dirs.append(x[i])
                amps.append(amp[i])
        result.append((np.array(dirs).reshape(-1, 3), np.array(amps)))
    return result


def angle_deg(a, b):
    """Angle between axes (sign ignored), a (..., 3), b (..., 3); atan2 form, exact near 0."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    cross = np.linalg.norm(np.cross(a, b), axis=-1)
    dot = np.abs(np.sum(a * b, axis=-1))
    return np.degrees(np.arctan2(cross, dot))
