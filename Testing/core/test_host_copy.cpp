// tk_host_copy, the CUDA cores' staging copy: byte for byte memcpy's result at sizes around
// its split (below, at and past 1 MiB; parts not on page boundaries, a last part shorter than
// the others), and nothing written outside the destination.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tk_bench_hooks.h"

TEST(HostCopy, EqualsMemcpyAtEverySizeAroundItsSplit)
{
    const size_t MiB = (size_t)1 << 20;
    for (size_t bytes : {(size_t)0, (size_t)1, (size_t)4095, MiB - 1, MiB, MiB + 1, 3 * MiB + 12345, 4 * MiB + 4,
                         (size_t)4 * 4096 + 3}) {
        std::vector<uint8_t> src(bytes + 64), dst(bytes + 64, 0xAB), want(bytes + 64, 0xAB);
        for (size_t i = 0; i < src.size(); ++i) src[i] = (uint8_t)(i * 2654435761u >> 13);
        // 7 bytes in: neither array aligned, as a chunk's start in a caller's volume need not be
        tk_host_copy(dst.data() + 7, src.data() + 5, bytes);
        if (bytes) std::memcpy(want.data() + 7, src.data() + 5, bytes);
        EXPECT_EQ(std::memcmp(dst.data(), want.data(), dst.size()), 0) << bytes << " bytes";
    }
}
