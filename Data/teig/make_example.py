#!/usr/bin/env python3
"""Make Data/teig/crossing_fibers_4_3.npy: 16 packed order-4, 3-D symmetric tensors.

Each tensor is a weighted sum of rank-one terms w * v^4 (a "fiber" along unit v), one to
three per tensor with crossing angles from 30 to 90 degrees, the shape a fourth-order
diffusion model takes in a voxel with crossing fibers.  Stdlib only, reproducible
(fixed seed).  The local maxima of A x^4 on the sphere lie near the fibers.

Usage: make_example.py [OUT.npy]
"""
import itertools
import math
import random
import struct
import sys


def packed_rank_one(v, order):
    """Packed entries of v^order in lexicographic order of non-decreasing index tuples."""
    out = []
    for idx in itertools.combinations_with_replacement(range(len(v)), order):
        out.append(math.prod(v[i] for i in idx))
    return out


def unit(theta, phi):
    return (math.sin(theta) * math.cos(phi), math.sin(theta) * math.sin(phi), math.cos(theta))


def write_npy(path, rows):
    cols = len(rows[0])
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }" % (len(rows), cols)
    pad = 64 - (10 + len(header) + 1) % 64
    header += " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        for r in rows:
            f.write(struct.pack("<%dd" % cols, *r))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "crossing_fibers_4_3.npy"
    rng = random.Random(20261123)
    rows = []
    for t in range(16):
        fibers = 1 + t % 3
        theta, phi = math.acos(rng.uniform(-1, 1)), rng.uniform(0, 2 * math.pi)
        first = unit(theta, phi)
        tensor = [0.0] * 15
        for f in range(fibers):
            if f == 0:
                v = first
            else:
                # rotate the first fiber by a crossing angle about a random perpendicular axis
                angle = math.radians(rng.uniform(30, 90))
                axis = unit(math.acos(rng.uniform(-1, 1)), rng.uniform(0, 2 * math.pi))
                dot = sum(a * b for a, b in zip(axis, first))
                axis = [a - dot * b for a, b in zip(axis, first)]
                n = math.sqrt(sum(a * a for a in axis))
                axis = [a / n for a in axis]
                v = [math.cos(angle) * a + math.sin(angle) * b for a, b in zip(first, axis)]
            w = rng.uniform(0.5, 1.0)
            tensor = [a + w * b for a, b in zip(tensor, packed_rank_one(v, 4))]
        rows.append(tensor)
    write_npy(out, rows)


if __name__ == "__main__":
    main()
