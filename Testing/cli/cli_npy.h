// The .npy inputs the command-line tests write.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tk_npy.h"

namespace tk_test {

inline void write_npy(const std::string &path, tk_npy_dtype d, std::vector<size_t> shape, const void *data)
{
    ASSERT_EQ(tk_npy_write(path.c_str(), d, (int)shape.size(), shape.data(), data), TK_OK) << tk_last_error();
}

}  // namespace tk_test
