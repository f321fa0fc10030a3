// One batch over several GPUs, the part that needs none: the split into ranges (against a
// brute-force check of its promises), the host threads that run the ranges and carry a
// failure's message back, and the cores' check of cuda_device_count.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tk_bench_hooks.h"
#include "tk_eig.h"
#include "tk_fibers.h"
#include "tk_fixels.h"
#include "tk_sshopm.h"

TEST(MultiDevice, RangesCoverEveryItemOnceInOrderWithSharesOneApart)
{
    for (size_t count = 0; count <= 200; ++count)
        for (int parts = 1; parts <= 9; ++parts) {
            size_t expected_first = 0, smallest = (size_t)-1, largest = 0;
            for (int i = 0; i < parts; ++i) {
                size_t first = 12345;
                const size_t len = tk_device_range(count, parts, i, &first);
                EXPECT_EQ(first, expected_first) << count << " items, " << parts << " parts, range " << i;
                expected_first = first + len;
                smallest = std::min(smallest, len), largest = std::max(largest, len);
                // the larger shares come first
                if (i > 0) {
                    size_t prev_first;
                    EXPECT_LE(len, tk_device_range(count, parts, i - 1, &prev_first));
                }
            }
            EXPECT_EQ(expected_first, count) << count << " items, " << parts << " parts";
            EXPECT_LE(largest - smallest, 1u) << count << " items, " << parts << " parts";
        }
    // large counts: no overflow in the arithmetic
    size_t first = 0;
    const size_t huge = (size_t)1 << 62;
    EXPECT_EQ(tk_device_range(huge + 3, 4, 3, &first), huge / 4);
    EXPECT_EQ(first, 3 * (huge / 4) + 3);
}

namespace {

struct Marks {
    std::vector<int> owner;  // which range wrote each item (-1: none)
    std::mutex lock;
    std::set<std::thread::id> threads;
    std::vector<int> calls;
};

tk_status mark(void *ctx, int index, size_t first, size_t count)
{
    Marks *m = static_cast<Marks *>(ctx);
    for (size_t i = first; i < first + count; ++i) m->owner[i] = m->owner[i] == -1 ? index : -2;  // -2: twice
    std::lock_guard<std::mutex> hold(m->lock);
    m->threads.insert(std::this_thread::get_id());
    m->calls.push_back(index);
    return TK_OK;
}

}  // namespace

TEST(MultiDevice, EveryRangeRunsOnceEachInAThreadOfItsOwn)
{
    for (int devices : {1, 2, 3, 8}) {
        Marks m;
        const size_t count = 1001;
        m.owner.assign(count, -1);
        ASSERT_EQ(tk_run_on_devices(0, devices, count, mark, &m), TK_OK) << tk_last_error();
        for (size_t i = 0; i < count; ++i) {
            size_t first;
            int expected = -1;
            for (int d = 0; d < devices; ++d) {
                const size_t len = tk_device_range(count, devices, d, &first);
                if (i >= first && i < first + len) expected = d;
            }
            ASSERT_EQ(m.owner[i], expected) << devices << " devices, item " << i;
        }
        EXPECT_EQ(m.calls.size(), (size_t)devices);
        if (devices == 1) {
            // one device: the caller's thread, no thread made
            ASSERT_EQ(m.threads.size(), 1u);
            EXPECT_EQ(*m.threads.begin(), std::this_thread::get_id());
        } else {
            EXPECT_EQ(m.threads.size(), (size_t)devices) << "each range in a thread of its own";
            EXPECT_EQ(m.threads.count(std::this_thread::get_id()), 0u);
        }
    }
}

TEST(MultiDevice, FewerItemsThanDevicesLeavesTheRestIdle)
{
    Marks m;
    m.owner.assign(2, -1);
    ASSERT_EQ(tk_run_on_devices(0, 5, 2, mark, &m), TK_OK);
    EXPECT_EQ(m.calls.size(), 2u);
    EXPECT_EQ(m.owner, (std::vector<int>{0, 1}));
    Marks none;
    ASSERT_EQ(tk_run_on_devices(0, 3, 0, mark, &none), TK_OK);
    EXPECT_TRUE(none.calls.empty());
}

namespace {

// Ranges 1 and 2 fail, each with its own message (set in the worker's thread).
tk_status fail_some(void *ctx, int index, size_t first, size_t count)
{
    (void)ctx, (void)first, (void)count;
    if (index == 1) return tk_set_error(TK_ERR_DATA, "range %d is bad", index);
    if (index == 2) return tk_set_error(TK_ERR_MEMORY, "range %d is out of memory", index);
    return TK_OK;
}

}  // namespace

TEST(MultiDevice, TheLowestFailureAndItsMessageReachTheCallersThread)
{
    tk_clear_error();
    EXPECT_EQ(tk_run_on_devices(4, 4, 100, fail_some, nullptr), TK_ERR_DATA);
    EXPECT_STREQ(tk_last_error(), "CUDA device 5: range 1 is bad");
    // one device: the work's own status and message, unprefixed
    tk_clear_error();
    EXPECT_EQ(tk_run_on_devices(0, 1, 100, [](void *, int, size_t, size_t) {
                  return tk_set_error(TK_ERR_CUDA, "the only device failed");
              }, nullptr),
              TK_ERR_CUDA);
    EXPECT_STREQ(tk_last_error(), "the only device failed");
}

// A count out of range is refused by every core's options check, on every backend.
TEST(MultiDevice, CoresRefuseADeviceCountOutOfRange)
{
    for (int bad : {-1, 65}) {
        tk_fibers_options f;
        tk_fibers_options_init(&f, 4);
        f.cuda_device_count = bad;
        tk_fibers_plan *fp = nullptr;
        EXPECT_EQ(tk_fibers_plan_create(&f, 0, &fp), TK_ERR_ARGUMENT);
        EXPECT_NE(std::string(tk_last_error()).find("cuda_device_count"), std::string::npos) << tk_last_error();
        EXPECT_EQ(fp, nullptr);

        tk_sshopm_options s;
        tk_sshopm_options_init(&s, 4, 3);
        s.cuda_device_count = bad;
        tk_sshopm_plan *sp = nullptr;
        EXPECT_EQ(tk_sshopm_plan_create(&s, 0, &sp), TK_ERR_ARGUMENT);
        EXPECT_NE(std::string(tk_last_error()).find("cuda_device_count"), std::string::npos) << tk_last_error();

        tk_eig_options e;
        tk_eig_options_init(&e, 3);
        e.cuda_device_count = bad;
        tk_eig_plan *ep = nullptr;
        EXPECT_EQ(tk_eig_plan_create(&e, 0, &ep), TK_ERR_ARGUMENT);
        EXPECT_NE(std::string(tk_last_error()).find("cuda_device_count"), std::string::npos) << tk_last_error();

        tk_fixels_options x;
        tk_fixels_options_init(&x, 8);
        x.cuda_device_count = bad;
        tk_fixels_plan *xp = nullptr;
        EXPECT_EQ(tk_fixels_plan_create(&x, &xp), TK_ERR_ARGUMENT);
        EXPECT_NE(std::string(tk_last_error()).find("cuda_device_count"), std::string::npos) << tk_last_error();
    }
}

// On the CPU the count is ignored: the same results as without it.
TEST(MultiDevice, CpuBackendsIgnoreTheDeviceCount)
{
    tk_eig_options e;
    tk_eig_options_init(&e, 3);
    const double a[2][9] = {{2, 1, 0, 1, 3, 1, 0, 1, 4}, {0, -1, 0, 1, 0, 0, 0, 0, 5}};
    double w1[12], w2[12];
    tk_eig_result r1 = {w1, nullptr, nullptr}, r2 = {w2, nullptr, nullptr};
    ASSERT_EQ(tk_eig_solve(&e, 2, a, &r1, nullptr, nullptr), TK_OK) << tk_last_error();
    e.cuda_device_count = 4;
    ASSERT_EQ(tk_eig_solve(&e, 2, a, &r2, nullptr, nullptr), TK_OK) << tk_last_error();
    EXPECT_EQ(std::memcmp(w1, w2, sizeof w1), 0);
}
