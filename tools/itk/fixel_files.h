// The files of MRtrix3's fixel directory as tk-fixels writes them: the voxel-to-scanner
// geometry MRtrix3 keeps (and the realigned one its fixel data files carry), and one image
// file (.mif, or .nii: NIfTI-1, or NIfTI-2 where an axis exceeds NIfTI-1's 32,767, as
// MRtrix3's own writer chooses) written through an output set with every byte checked.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

struct tk_outset;

namespace tk {

// The voxel-to-scanner (RAS) transform MRtrix3 keeps: unit axes, voxel sizes and the origin.
struct FixelGeometry {
    size_t dim[3];
    double vox[3], rot[3][3], origin[3];
};

// The geometry MRtrix3 gives an image when it opens it (Header::realign_transform): axes
// permuted and flipped so that each runs along the scanner axis it is closest to.
FixelGeometry realigned(const FixelGeometry &in);

enum class FixelType { UInt8, UInt32, Float32 };

// One image of dims dim[0..ndim-1] (3 or 4 axes; the first fastest) into output idx's file
// k of set; path_for_messages names it in errors (FIXEL_DIR/NAME).  extra_key: header lines
// (.mif only; e.g. "nfixels: N\n") or nullptr.  Throws FixelWriteError after the output set
// printed why it could not create the file, or std::runtime_error naming the file and what
// to do (a full disk) where a write failed.
void write_fixel_image(tk_outset *set, int idx, int k, const std::string &name, const std::string &path_for_messages,
                       const FixelGeometry &g, const size_t *dim, int ndim, FixelType type, const void *data,
                       const char *extra_key);

// head then bytes of data into output idx's file k of set, every byte checked; errors as
// write_fixel_image's.
void write_fixel_file(tk_outset *set, int idx, int k, const std::string &path_for_messages, const std::string &head,
                      const void *data, size_t bytes);

// Thrown where the message is printed already (by the output set).
struct FixelWriteError : std::runtime_error {
    FixelWriteError() : std::runtime_error("already reported") {}
};

// NIfTI-1 holds at most this many voxels along an axis; MRtrix3 writes NIfTI-2 beyond it.
constexpr size_t kNifti1MaxDim = 32767;

}  // namespace tk
