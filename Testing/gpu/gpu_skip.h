// One rule for every GPU test: skip, saying why, in a build without CUDA or on a machine whose
// CUDA GPU is not usable (no driver, no device); fail on every other error.
//
// The cores word these two cases fixedly: "no CUDA backend" (tk_status TK_ERR_UNSUPPORTED) and
// "no usable CUDA GPU (REASON)" (TK_ERR_CUDA, from the device probe in device_cuda.cu).  Matching
// the words, not only the status, keeps a real CUDA failure on a GPU machine a failure.
#pragma once

#include <gtest/gtest.h>

#include <cstring>

#include "tk_status.h"

#define TK_SKIP_IF_NO_GPU(status)                                                                        \
    do {                                                                                                 \
        if ((status) == TK_ERR_UNSUPPORTED && std::strstr(tk_last_error(), "no CUDA backend"))           \
            GTEST_SKIP() << "SKIPPED: built without CUDA: " << tk_last_error();                          \
        if ((status) == TK_ERR_CUDA && std::strstr(tk_last_error(), "no usable CUDA GPU"))               \
            GTEST_SKIP() << "SKIPPED: no usable GPU here: " << tk_last_error();                          \
    } while (0)
