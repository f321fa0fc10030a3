#include "track_sample.h"

#include <algorithm>

#include "tk_streamlines.h"

namespace tk {

StreamlineSample::StreamlineSample(size_t max_streamlines, size_t max_points)
    : max_streamlines_(max_streamlines ? max_streamlines : 1), max_points_(max_points ? max_points : 1)
{
}

void StreamlineSample::add(const tk_tracking_chunk &chunk)
{
    size_t at = 0;  // the chunk's first point of streamline s
    for (size_t s = 0; s < chunk.num_streamlines; ++s) {
        const size_t n = chunk.num_points[s];
        if (seen_ % stride_ == 0) {
            const float *p = chunk.points + 3 * at;
            points_.insert(points_.end(), p, p + 3 * n);
            rgb_.resize(rgb_.size() + 3 * n);
            tk_streamlines_tangent_colours(p, n, rgb_.data() + rgb_.size() - 3 * n);
            num_points_.push_back(n);
            index_.push_back(seen_);
            while (num_points_.size() > 1 && (num_points_.size() > max_streamlines_ || points_.size() / 3 > max_points_))
                halve();
        }
        ++seen_;
        at += n;
    }
}

void StreamlineSample::halve()
{
    stride_ *= 2;
    size_t from = 0, to = 0, kept = 0;  // point offsets (floats / 3) read and written
    for (size_t s = 0; s < num_points_.size(); ++s) {
        const size_t n = num_points_[s];
        if (index_[s] % stride_ == 0) {
            if (to != from) {
                std::copy(points_.begin() + 3 * from, points_.begin() + 3 * (from + n), points_.begin() + 3 * to);
                std::copy(rgb_.begin() + 3 * from, rgb_.begin() + 3 * (from + n), rgb_.begin() + 3 * to);
            }
            num_points_[kept] = n;
            index_[kept] = index_[s];
            ++kept;
            to += n;
        }
        from += n;
    }
    num_points_.resize(kept);
    index_.resize(kept);
    points_.resize(3 * to);
    rgb_.resize(3 * to);
}

}  // namespace tk
