#!/usr/bin/python3
"""Writes fixels_sphere_1281.h (order 4) or fixels_sphere_5121.h (order 5): a direction set of
the FMLS segmentation, its adjacency and its integration weights, the 1281 as MRtrix3 3.0.3's
fod2fixel defines them (src/dwi/directions/, src/dwi/fmls.cpp), computed here from their
definitions, and the 5121 the next tessellation of the same kind (--directions 5121):

* the directions: the 4th-order tessellation of an icosahedron (every triangle split in four
  by its edges' midpoints, pushed out to the sphere, four times: 2562 vertices), one of each
  antipodal pair (1281); the icosahedron's vertices are the cyclic permutations of
  (+-phi, +-1, 0), the orientation of MRtrix3's table, each direction's azimuth and elevation
  rounded to 5 decimals as that table holds them (checked against it: every direction within
  4e-4 degree before the rounding; after it the only differences left are which of each
  antipodal pair the table keeps, whose rounding differs by up to 1e-5 rad, and the order);
  order 5 splits once more (10242 vertices, 5121 directions), its vertices exact (no table of
  MRtrix3's to match);
* the adjacency: the edges of the convex hull of the directions and their antipodes (checked
  equal to the tessellation's edges);
* the weights: the least-squares solution w of sum_i w_i Y(d_i) = (sqrt(4 pi), 0, ...) over
  the even real orthonormal SH up to lmax LforN(N) + 2 (50 for 1281, 100 for 5121), so that sum_i w_i f(d_i)
  integrates f over the sphere (the integral that is each lobe's AFD); an orthonormal basis
  gives the same solution whatever its sign and real-form conventions.

Run: /usr/bin/python3 gen_sphere.py 4 > fixels_sphere_1281.h and
     /usr/bin/python3 gen_sphere.py 5 > fixels_sphere_5121.h (numpy, scipy; the second takes a
     minute: its least squares has 5151 x 5121 terms)."""
import sys

import numpy as np
from scipy.spatial import ConvexHull
from scipy.special import sph_harm


def icosphere(order):
    phi = (1 + 5 ** 0.5) / 2
    v = []
    for a in (-1.0, 1.0):
        for b in (-phi, phi):
            v += [(b, a, 0.0), (a, 0.0, b), (0.0, b, a)]
    v = np.array(v) / np.linalg.norm(v[0])
    d = v @ v.T
    faces = [(i, j, k) for i in range(12) for j in range(i + 1, 12) for k in range(j + 1, 12)
             if d[i, j] > 0.4 and d[j, k] > 0.4 and d[i, k] > 0.4]
    verts = [np.array(x) for x in v]
    for _ in range(order):
        mids, new = {}, []

        def mid(a, b):
            key = (min(a, b), max(a, b))
            if key not in mids:
                m = verts[a] + verts[b]
                verts.append(m / np.linalg.norm(m))
                mids[key] = len(verts) - 1
            return mids[key]
        for a, b, c in faces:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            new += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        faces = new
    return np.array(verts), faces


def even_sh_rows(lmax, az, pol):
    """The even real orthonormal SH up to lmax at (az, pol), a row per function: scipy's sph_harm
    up to lmax 50 (the 1281 set's table was made so), past it (whose Legendre functions overflow
    there) the stable recurrence of the normalised associated Legendre functions."""
    rows = []
    if lmax <= 50:
        for l in range(0, lmax + 1, 2):
            for m in range(0, l + 1):
                y = sph_harm(m, l, az, pol)
                if m == 0:
                    rows.append(y.real)
                else:
                    rows.append(np.sqrt(2) * y.real)
                    rows.append(np.sqrt(2) * y.imag)
        return rows
    x, s = np.cos(pol), np.sin(pol)
    p = {}  # p[l, m]: the normalised associated Legendre function (no Condon-Shortley phase)
    pmm = np.full_like(x, np.sqrt(1 / (4 * np.pi)))
    for m in range(0, lmax + 1):
        if m > 0:
            pmm = np.sqrt((2 * m + 1) / (2 * m)) * s * pmm
        p[m, m] = pmm
        if m + 1 <= lmax:
            p[m + 1, m] = np.sqrt(2 * m + 3) * x * pmm
        for l in range(m + 2, lmax + 1):
            a = np.sqrt((4 * l * l - 1) / (l * l - m * m))
            b = np.sqrt(((l - 1) ** 2 - m * m) / (4 * (l - 1) ** 2 - 1))
            p[l, m] = a * (x * p[l - 1, m] - b * p[l - 2, m])
    for l in range(0, lmax + 1, 2):
        for m in range(0, l + 1):
            if m == 0:
                rows.append(p[l, 0])
            else:
                rows.append(np.sqrt(2) * p[l, m] * np.cos(m * az))
                rows.append(np.sqrt(2) * p[l, m] * np.sin(m * az))
    return rows


def main():
    order = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    V, faces = icosphere(order)
    # one of each antipodal pair, the first made; rep[i]: the kept index of vertex i
    rep, kept = -np.ones(len(V), int), []
    for i, x in enumerate(V):
        if rep[i] >= 0:
            continue
        j = int(np.argmin(np.linalg.norm(V + x, axis=1)))
        rep[i] = rep[j] = len(kept)
        kept.append(i)
    D = V[kept]
    if order == 4:
        # MRtrix3's table holds (az, el) to 5 decimals: the same rounding puts the samples where
        # fod2fixel takes them (its AFDs then agree ~5x closer than with the exact vertices)
        az = np.round(np.arctan2(D[:, 1], D[:, 0]), 5)
        el = np.round(np.arccos(np.clip(D[:, 2], -1, 1)), 5)
        D = np.stack([np.cos(az) * np.sin(el), np.sin(az) * np.sin(el), np.cos(el)], 1)
    n = len(D)
    what = "MRtrix3's 1281-direction FMLS set" if order == 4 else "the %d-direction FMLS set (one tessellation past MRtrix3's)" % n
    edges = set()
    for f in faces:
        for a, b in ((f[0], f[1]), (f[1], f[2]), (f[2], f[0])):
            edges.add((min(rep[a], rep[b]), max(rep[a], rep[b])))
    full = np.vstack([D, -D])
    hull = ConvexHull(full)
    hull_edges = set()
    for s in hull.simplices:
        for a, b in ((s[0], s[1]), (s[1], s[2]), (s[2], s[0])):
            a, b = a % n, b % n
            hull_edges.add((min(a, b), max(a, b)))
    assert hull_edges == edges, "the hull's edges are not the tessellation's"
    adj = [[] for _ in range(n)]
    for a, b in sorted(edges):
        adj[a].append(b)
        adj[b].append(a)
    assert all(len(a) in (5, 6) for a in adj)
    # weights
    lmax = 2 * int((np.sqrt(1 + 8 * n) - 3) / 4) + 2
    az, pol = np.arctan2(D[:, 1], D[:, 0]), np.arccos(np.clip(D[:, 2], -1, 1))
    A = np.array(even_sh_rows(lmax, az, pol))
    b = np.zeros(len(A))
    b[0] = 2 * np.sqrt(np.pi)
    w = np.linalg.lstsq(A, b, rcond=None)[0]
    out = sys.stdout
    out.write("/* Generated by gen_sphere.py%s (do not edit): %s, its\n"
              " * adjacency and integration weights (calibrated to lmax %d). */\n"
              % ("" if order == 4 else " %d" % order, what, lmax))
    out.write("#ifndef TK_FIXELS_SPHERE_%d_H\n#define TK_FIXELS_SPHERE_%d_H\n\n" % (n, n))
    out.write("#define TK_FIXELS_SPHERE_%d_N %d\n\n" % (n, n))
    out.write("static const double tk_fixels_sphere_%d_dirs[%d][3] = {\n" % (n, n))
    for x in D:
        out.write("    {%.17g, %.17g, %.17g},\n" % tuple(x))
    out.write("};\n\n/* the integration weights (sum 4 pi) */\n")
    out.write("static const double tk_fixels_sphere_%d_weights[%d] = {\n" % (n, n))
    for i in range(0, n, 4):
        out.write("    " + " ".join("%.17g," % x for x in w[i:i + 4]) + "\n")
    out.write("};\n\n/* neighbours, ascending; a 5-neighbour direction repeats its first (no test for a pad\n"
              " * in the hot loop: a repeated neighbour changes nothing) */\n")
    out.write("static const short tk_fixels_sphere_%d_adj[%d][6] = {\n" % (n, n))
    for a in adj:
        a = sorted(a)
        a = a + [a[0]] * (6 - len(a))
        out.write("    {%s},\n" % ", ".join(str(x) for x in a))
    out.write("};\n\n#endif\n")


if __name__ == "__main__":
    main()
