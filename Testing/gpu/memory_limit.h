// TK_CUDA_MEMORY_LIMIT_MB for one scope (the GPU tests' stand-in for a full GPU).
#pragma once

#include <cstdlib>
#include <string>

#include "tk_cuda_memory.h"

namespace tk_test {

// The limit ("" = none) while it lives, then what the environment held before.
class MemoryLimit {
public:
    explicit MemoryLimit(const std::string &mib)
    {
        const char *old = std::getenv(TK_CUDA_MEMORY_LIMIT_ENV);
        had_ = old != nullptr;
        if (had_) old_ = old;
        setenv(TK_CUDA_MEMORY_LIMIT_ENV, mib.c_str(), 1);
    }
    ~MemoryLimit()
    {
        if (had_) setenv(TK_CUDA_MEMORY_LIMIT_ENV, old_.c_str(), 1);
        else unsetenv(TK_CUDA_MEMORY_LIMIT_ENV);
    }
    MemoryLimit(const MemoryLimit &) = delete;
    MemoryLimit &operator=(const MemoryLimit &) = delete;

private:
    bool had_ = false;
    std::string old_;
};

}  // namespace tk_test
