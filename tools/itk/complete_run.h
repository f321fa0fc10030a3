// The run both image-completion commands (tk-tucker complete, tk-pltf complete) make once
// their command line is parsed: OUT_IMAGE checked, IN_IMAGE read in its layout with its
// --mask, the command's model fitted, the result written back in the input's layout.
// Only the model differs, so each command gives it as callables.
#pragma once

#include <stdexcept>
#include <string>

#include "cli.h"
#include "cli_failure.h"
#include "complete_args.h"
#include "image_layout.h"
#include "sh_image_io.h"
#include "tk_output_set.h"

namespace tk {

// A bad command line found only once the image is known (exit 2, not 1).
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// OUT_IMAGE prepared (prepare_complete_output), then ready(kind) with the layout IN_IMAGE
// has, before anything is read (false: it said why, exit 1); then IN_IMAGE read (a 3-D
// scalar volume; a 4-D image, its whole 4-D geometry kept; a vector volume, e.g. a DWI
// series in NRRD, made 4-D with its components on the 4th axis) and --mask on its grid;
// complete(image, mask) (mask null: every voxel observed) returns the completed image, or
// null after saying why (exit 1); the result is written in the input's layout and committed.
// A UsageError is a bad command line (exit 2); any other exception goes to report_failure,
// out_of_memory being the command's advice for std::bad_alloc.  Returns the exit code.
template <typename Ready, typename Complete>
int run_completion(const char *prog, const CompleteShared &a, const std::string &out_of_memory, Ready ready,
                   Complete complete)
{
    VolumeOutput out;
    if (int bad = prepare_complete_output(prog, a, out)) return bad;
    try {
        const CompletionInput kind = completion_input(a.input);
        if (!ready(kind)) return TK_EXIT_FAILURE;
        if (kind == CompletionInput::Scalar3) {
            auto image = read_scalar_volume(a.input);
            MaskImage3::Pointer mask;
            if (!a.mask.empty()) {
                mask = read_mask(a.mask);
                same_grid(image, a.input, mask, a.mask);
            }
            const ScalarImage3::Pointer completed = complete(image.GetPointer(), mask.GetPointer());
            if (!completed) return TK_EXIT_FAILURE;
            write_scalar_volume(completed, out.set.get(), out.idx);
        } else {
            VectorImage3::Pointer vectors;  // Vector3: the input, to take the completed values back
            ScalarImage4::Pointer image;
            if (kind == CompletionInput::Scalar4) image = read_scalar_image4(a.input);
            else image = to_4d(vectors = read_vector_volume(a.input));
            MaskImage4::Pointer mask;
            if (!a.mask.empty()) mask = mask_4d(image, a.input, a.mask);
            const ScalarImage4::Pointer completed = complete(image.GetPointer(), mask.GetPointer());
            if (!completed) return TK_EXIT_FAILURE;
            if (vectors) {
                copy_back(completed, vectors);  // the input's grid and layout, the completed values
                write_vector_volume(vectors, out.set.get(), out.idx);
            } else {
                write_scalar_image4(completed, out.set.get(), out.idx);
            }
        }
        if (tk_outset_commit(out.set.get()) != 0) return TK_EXIT_FAILURE;  // it said why
    } catch (const UsageError &e) {
        tk_cli_error(prog, "%s", e.what());
        return TK_EXIT_USAGE;
    } catch (...) {
        // what() of std::bad_alloc is just "std::bad_alloc": say which work, and what to do
        return report_failure(prog, a.input, out_of_memory);
    }
    return 0;
}

}  // namespace tk
