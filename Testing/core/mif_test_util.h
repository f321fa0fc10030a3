// MRtrix3 .mif files made byte by byte, as the format is documented (MRtrix3's
// image_data.rst), for the tests of the readers that take them.
#pragma once

#include <cstddef>
#include <string>

namespace tk_test {

// "mrtrix image", the header lines given, "file: . OFFSET", "END", then data at OFFSET: the
// header padded with NUL bytes to a multiple of 4, as MRtrix3 pads it.
inline std::string mif_file(const std::string &lines, const std::string &data)
{
    std::string head = "mrtrix image\n" + lines;
    size_t offset = head.size() + 24;
    offset += (4 - offset % 4) % 4;
    head += "file: . " + std::to_string(offset) + "\nEND\n";
    head.resize(offset, '\0');
    return head + data;
}

}  // namespace tk_test
