// The warning tk-fibers gives when an SH volume looks like another basis than its flags say
// (tk_sh_guess_basis): the peaks of a volume read in the wrong basis are wrong without any
// other sign (DIPY's default read as MRtrix3's: off by a median 73 degrees).
#pragma once

#include <cstdio>
#include <string>

#include "sh_image_io.h"

namespace tk {

// Guesses the basis of sh from a sample of its voxels and, where the data contradict the
// given basis, writes one line to err naming what the data look like and the flags that would
// read them right.  Returns true when it warned.
bool warn_if_other_basis(std::FILE *err, const char *prog, const std::string &path, const VectorImage3 *sh,
                         bool descoteaux, bool legacy);

}  // namespace tk
