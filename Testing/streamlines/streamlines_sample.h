/* The streamlines the writer tests write: helices of several lengths, a one-point streamline,
 * and an empty chunk, handed over in several chunks; and the two grids (an axis-aligned one,
 * and an oblique one whose first axis is flipped). */
#ifndef TK_STREAMLINES_SAMPLE_H
#define TK_STREAMLINES_SAMPLE_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tk_tracking.h"

struct SampleChunk {
    std::vector<size_t> counts;
    std::vector<uint64_t> seeds;
    std::vector<float> points;
    tk_tracking_chunk view() const
    {
        tk_tracking_chunk c{};
        c.num_streamlines = counts.size();
        c.num_points = counts.empty() ? nullptr : counts.data();
        c.seed_index = seeds.empty() ? nullptr : seeds.data();
        c.points = points.empty() ? nullptr : points.data();
        c.total_points = points.size() / 3;
        return c;
    }
};

inline void add_helix(SampleChunk &c, size_t n, double radius, double pitch, double phase, const double *centre)
{
    for (size_t i = 0; i < n; ++i) {
        double t = phase + 0.3 * (double)i;
        c.points.push_back((float)(centre[0] + radius * std::cos(t)));
        c.points.push_back((float)(centre[1] + radius * std::sin(t)));
        c.points.push_back((float)(centre[2] + pitch * t));
    }
    c.counts.push_back(n);
    c.seeds.push_back(c.seeds.size());
}

/* Four chunks: 3 helices; none; a one-point streamline and a helix; 5 helices. */
inline std::vector<SampleChunk> sample_chunks()
{
    std::vector<SampleChunk> chunks(4);
    const double centre[3] = {-12.5, 20.25, 7.0};
    add_helix(chunks[0], 40, 10, 1.5, 0.0, centre);
    add_helix(chunks[0], 2, 3, 0.5, 1.0, centre);
    add_helix(chunks[0], 75, 6, -2.0, 0.5, centre);
    add_helix(chunks[2], 1, 0, 0, 0, centre);
    add_helix(chunks[2], 13, 8, 3.0, 2.0, centre);
    for (int k = 0; k < 5; ++k) add_helix(chunks[3], 20 + 7 * (size_t)k, 4 + k, 0.7 * (k + 1), 0.4 * k, centre);
    return chunks;
}

/* "ident": 2 mm axis-aligned voxels; "oblique": 20 degrees about z and 10 about x, the first
 * voxel axis flipped, voxels 1.5 x 2 x 2.5 mm. */
inline tk_tracking_grid sample_grid(bool oblique)
{
    tk_tracking_grid g{};
    g.dims[0] = 40;
    g.dims[1] = 50;
    g.dims[2] = 30;
    double a[16] = {2, 0, 0, -40, 0, 2, 0, -30, 0, 0, 2, -20, 0, 0, 0, 1};
    if (oblique) {
        const double pi = 3.14159265358979323846, z = 20 * pi / 180, x = 10 * pi / 180, vs[3] = {-1.5, 2.0, 2.5};
        const double rz[9] = {std::cos(z), -std::sin(z), 0, std::sin(z), std::cos(z), 0, 0, 0, 1};
        const double rx[9] = {1, 0, 0, 0, std::cos(x), -std::sin(x), 0, std::sin(x), std::cos(x)};
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) {
                double v = 0;
                for (int k = 0; k < 3; ++k) v += rz[3 * r + k] * rx[3 * k + c];
                a[4 * r + c] = v * vs[c];
            }
        a[3] = 35.5;
        a[7] = -41.25;
        a[11] = -17.0;
    }
    for (int i = 0; i < 16; ++i) g.vox2world[i] = a[i];
    return g;
}

#endif
