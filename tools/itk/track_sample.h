// A bounded, uniform subsample of a run's streamlines for tk-track --png: the run streams
// its streamlines to disk in chunks and may keep millions, so the picture is drawn from every
// k-th kept streamline, k doubling whenever the sample outgrows its limits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tk_tracking.h"

namespace tk {

class StreamlineSample {
public:
    // At most max_streamlines streamlines and max_points points are held (one streamline
    // over max_points alone is still taken: the limit then is that streamline).
    StreamlineSample(size_t max_streamlines, size_t max_points);
    // Takes the chunk's streamlines whose index among all added so far is a multiple of the
    // stride, with their tangent colours (the .vtp's), then halves the sample until it fits.
    void add(const tk_tracking_chunk &chunk);

    uint64_t seen() const { return seen_; }
    uint64_t stride() const { return stride_; }
    size_t size() const { return num_points_.size(); }
    const std::vector<float> &points() const { return points_; }
    const std::vector<unsigned char> &rgb() const { return rgb_; }
    const std::vector<size_t> &num_points() const { return num_points_; }

private:
    void halve();  // keeps the streamlines whose index is a multiple of twice the stride

    size_t max_streamlines_, max_points_;
    uint64_t seen_ = 0, stride_ = 1;
    std::vector<float> points_;
    std::vector<unsigned char> rgb_;
    std::vector<size_t> num_points_;
    std::vector<uint64_t> index_;  // each held streamline's index among all added
};

}  // namespace tk
