#include "cli_failure.h"

#include <itkMacro.h>

#include <new>
#include <stdexcept>

#include "cli.h"
#include "sh_image_io.h"

namespace tk {

int report_failure(const char *prog, const std::string &input, const std::string &out_of_memory)
{
    try {
        throw;
    } catch (const itk::ExceptionObject &e) {  // before std::exception, which it derives from
        tk_cli_error(prog, "%s: %s", input.c_str(), itk_message(e).c_str());
    } catch (const std::bad_alloc &) {
        tk_cli_error(prog, "%s: %s", input.c_str(), out_of_memory.c_str());
    } catch (const std::length_error &e) {  // e.g. "basic_string::_M_create": a size no string or buffer can hold
        tk_cli_error(prog, "%s: a size in the file is too large to hold (%s): the file is damaged or not the format its "
                           "name says; check the file", input.c_str(), e.what());
    } catch (const std::exception &e) {
        tk_cli_error(prog, "%s", e.what());
    }
    return TK_EXIT_FAILURE;
}

std::string volume_out_of_memory(bool with_mask_hint)
{
    return std::string("out of memory: the volume and its results need more than this machine can give; use a "
                       "smaller volume") +
           (with_mask_hint ? " or a --mask" : "");
}

}  // namespace tk
