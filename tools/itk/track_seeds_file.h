// tk-track --seeds-file: seed points in world RAS mm from a text file, either plain "x y z"
// lines or the file MRtrix3's tckgen -output_seeds writes, so that tk-track can replay
// tckgen's seeds exactly.
//
// tckgen -output_seeds (MRtrix3 3.0, src/dwi/tractography/tracking/write_kernel.h and .cpp) writes
// a "# <command line>" line, then the header "#Track_index,Seed_index,Pos_x,Pos_y,Pos_z,",
// then one row per streamline written: its index in the .tck, the index of the seed among
// the streamline's points, and the seed's scanner (RAS) position in mm, each followed by a
// comma.  Only the seeds of written streamlines are listed, so a replay tracks those.
#pragma once

#include <string>
#include <vector>

namespace tk {

// The points, xyz one after another.  Lines that are empty or start with '#' are skipped;
// numbers are separated by commas and/or blanks; a line holds 3 numbers (x y z) or, in
// tckgen's layout, 5 (index, seed index, x, y, z), the same count on every line.  Throws
// std::runtime_error "PATH:LINE: ..." on anything else (a non-finite number included) and on
// a file without points.
std::vector<double> read_seed_points(const std::string &path);

}  // namespace tk
