// Writes the sample streamlines (streamlines_sample.h) in every format, for the field's own
// readers to check (check_readers.py): OUT/{ident,oblique}.{tck,trk,trx,vtp,vtk},
// OUT/oblique_ras.{vtp,vtk} (the RAS frame), and the reference: OUT/reference.f32 (the points,
// xyz world RAS mm), OUT/reference.counts (uint64 per streamline) and OUT/<grid>.affine
// (16 doubles, row-major) with OUT/<grid>.dims (3 uint64).
#include <cstdio>
#include <string>

#include "streamlines_sample.h"
#include "tk_streamlines.h"

static int write_one(const std::string &path, const tk_tracking_grid &grid, tk_streamlines_vtk_space space)
{
    tk_streamlines_options o;
    tk_streamlines_options_init(&o);
    o.vtk_space = space;
    tk_streamlines_writer *w = nullptr;
    if (tk_streamlines_writer_open(path.c_str(), &grid, &o, &w) != TK_OK) {
        std::fprintf(stderr, "open: %s\n", tk_last_error());
        return 1;
    }
    for (const SampleChunk &c : sample_chunks()) {
        tk_tracking_chunk v = c.view();
        if (tk_streamlines_sink(&v, w) != TK_OK) {
            std::fprintf(stderr, "append: %s\n", tk_last_error());
            tk_streamlines_writer_abort(w);
            return 1;
        }
    }
    if (tk_streamlines_writer_close(w) != TK_OK) {
        std::fprintf(stderr, "close: %s\n", tk_last_error());
        return 1;
    }
    return 0;
}

static int write_raw(const std::string &path, const void *data, size_t bytes)
{
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) return 1;
    size_t k = std::fwrite(data, 1, bytes, f);
    return (std::fclose(f) != 0 || k != bytes) ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUTPUT_FOLDER\n", argv[0]);
        return 2;
    }
    std::string out = argv[1];
    int bad = 0;
    for (int oblique = 0; oblique < 2; ++oblique) {
        tk_tracking_grid g = sample_grid(oblique != 0);
        std::string base = out + (oblique ? "/oblique" : "/ident");
        for (const char *ext : {".tck", ".trk", ".trx", ".vtp", ".vtk"})
            bad |= write_one(base + ext, g, TK_STREAMLINES_VTK_LPS);
        uint64_t dims[3] = {g.dims[0], g.dims[1], g.dims[2]};
        bad |= write_raw(base + ".affine", g.vox2world, sizeof g.vox2world);
        bad |= write_raw(base + ".dims", dims, sizeof dims);
    }
    for (const char *ext : {".vtp", ".vtk"})
        bad |= write_one(out + "/oblique_ras" + ext, sample_grid(true), TK_STREAMLINES_VTK_RAS);
    std::vector<float> points;
    std::vector<uint64_t> counts;
    for (const SampleChunk &c : sample_chunks()) {
        points.insert(points.end(), c.points.begin(), c.points.end());
        counts.insert(counts.end(), c.counts.begin(), c.counts.end());
    }
    bad |= write_raw(out + "/reference.f32", points.data(), points.size() * sizeof(float));
    bad |= write_raw(out + "/reference.counts", counts.data(), counts.size() * sizeof(uint64_t));
    return bad;
}
