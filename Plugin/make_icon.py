#!/usr/bin/python3
"""Draws Plugin/TensorKernels.png, the extension's 128 x 128 icon: crossing fiber glyphs
coloured by direction (red x, green y, blue z), as Slicer shows peaks."""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

fig = plt.figure(figsize=(1.28, 1.28), dpi=100)
ax = fig.add_axes([0, 0, 1, 1])
ax.set_xlim(-0.5, 3.5)
ax.set_ylim(-0.5, 3.5)
ax.set_facecolor("#1d2433")
ax.axis("off")
fig.patch.set_facecolor("#1d2433")
for i in range(4):
    for j in range(4):
        # two bundles crossing: one bends from x to y across the grid, one runs diagonally
        t = (i + j) / 6 * np.pi / 2
        for d, w in (((np.cos(t), np.sin(t), 0.2), 1.0), ((0.5, -0.6, 0.6), 0.6 if (i + j) % 2 else 0.0)):
            d = np.array(d) / np.linalg.norm(d)
            if w == 0:
                continue
            colour = np.abs(d)
            ax.plot([i - 0.42 * w * d[0], i + 0.42 * w * d[0]], [j - 0.42 * w * d[1], j + 0.42 * w * d[1]],
                    color=colour, lw=3, solid_capstyle="round")
fig.savefig(os.path.join(os.path.dirname(os.path.abspath(__file__)), "TensorKernels.png"),
            facecolor=fig.get_facecolor())
