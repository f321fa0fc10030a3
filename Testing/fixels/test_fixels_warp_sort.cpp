// The CUDA warp kernels' sorts of a voxel's positive samples (fixels_warp_sort.cuh) run on the
// host: the device text compiled here, each of a warp's 32 lanes a thread, the warp's collectives
// (ballots, shuffles, matches, __syncwarp) as barriers at which the lanes exchange their values.
// Both sorts (the fused kernel's float keys, the pull kernel's 16-bit linear keys) against
// std::sort's total order (sample descending, direction ascending), on samples that tie in every
// way the keys can: exact ties, constant, one float's neighbours, tiny and huge ranges.  The
// lanes synchronise only where the device's do, so a lane reading what another writes without
// a collective between them is a race here too (a ThreadSanitizer build reports it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace {

// A reusable barrier of the warp's 32 lanes (C++17 has no std::barrier).
class WarpBarrier {
public:
    void wait()
    {
        std::unique_lock<std::mutex> lock(m_);
        const unsigned long gen = gen_;
        if (++count_ == 32) {
            count_ = 0, ++gen_;
            cv_.notify_all();
        } else {
            cv_.wait(lock, [&] { return gen_ != gen; });
        }
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    int count_ = 0;
    unsigned long gen_ = 0;
};

WarpBarrier *warp_barrier;
thread_local int this_lane;
unsigned long long exchange[32];

template <class T> unsigned long long to_bits(T v)
{
    unsigned long long b = 0;
    std::memcpy(&b, &v, sizeof v);
    return b;
}
template <class T> T from_bits(unsigned long long b)
{
    T v;
    std::memcpy(&v, &b, sizeof v);
    return v;
}

// Each lane's value in, every lane's out (the second wait: no lane writes the next exchange
// before all have read this one).
template <class R, class F> R collective(unsigned long long mine, F f)
{
    exchange[this_lane] = mine;
    warp_barrier->wait();
    const R r = f();
    warp_barrier->wait();
    return r;
}

}  // namespace

#define __device__
#define __host__
static inline void __syncwarp(unsigned = 0xffffffffu) { warp_barrier->wait(); }
static inline unsigned __ballot_sync(unsigned, int p)
{
    return collective<unsigned>(p != 0, [] {
        unsigned r = 0;
        for (int i = 0; i < 32; ++i) r |= (unsigned)exchange[i] << i;
        return r;
    });
}
static inline int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
template <class T> static inline T __shfl_up_sync(unsigned, T v, int off)
{
    return collective<T>(to_bits(v), [&] { return this_lane >= off ? from_bits<T>(exchange[this_lane - off]) : v; });
}
template <class T> static inline T __shfl_sync(unsigned, T v, int src)
{
    return collective<T>(to_bits(v), [&] { return from_bits<T>(exchange[src]); });
}
static inline unsigned __match_any_sync(unsigned, unsigned v)
{
    return collective<unsigned>(v, [&] {
        unsigned r = 0;
        for (int i = 0; i < 32; ++i) r |= (unsigned)(exchange[i] == v) << i;
        return r;
    });
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline int atomicAdd(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned __float_as_uint(float f)
{
    unsigned u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

#include "fixels/fixels_warp_sort.cuh"

namespace {

// f(lane) on 32 threads, one a lane.
void run_warp(const std::function<void(int)> &f)
{
    WarpBarrier b;
    warp_barrier = &b;
    std::vector<std::thread> lanes;
    for (int l = 0; l < 32; ++l) lanes.emplace_back([&f, l] { this_lane = l, f(l); });
    for (auto &t : lanes) t.join();
    warp_barrier = nullptr;
}

// The walk's order of the positive samples: sample descending, direction ascending.
std::vector<int> reference_order(const std::vector<double> &values, int n)
{
    std::vector<int> order;
    for (int d = 0; d < n; ++d)
        if (values[d] > 0.0) order.push_back(d);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return values[a] != values[b] ? values[a] > values[b] : a < b; });
    return order;
}

// n samples of kind `kind` (see the cases below).
std::vector<double> make_samples(std::mt19937_64 &rng, int n, int kind)
{
    std::vector<double> v(n);
    std::normal_distribution<double> normal(0.1, 0.5);
    for (int d = 0; d < n; ++d) {
        double x = normal(rng);
        switch (kind) {
        case 1: x = std::floor(x * 4.0) / 4.0; break;                              // exact ties
        case 2: x = std::ldexp(1.0, -(int)(rng() % 40)) * (double)(rng() % 3); break; // powers of two, 0
        case 3: x = 1.0; break;                                                     // constant
        case 4: x = std::nextafter(0.5, (double)(rng() % 2)); break;               // one float's neighbours
        case 5: x = d % 3 ? x : 1e-300; break;                                      // below the key's step
        case 6: x = std::ldexp(std::fabs(x), (int)(rng() % 200) - 100); break;     // a huge range
        default: break;
        }
        v[d] = x;
    }
    return v;
}

}  // namespace

TEST(FixelsWarpSort, BothSortsGiveTheWalksTotalOrder)
{
    std::mt19937_64 rng(2026);
    int cases = 0;
    for (int trial = 0; trial < 42; ++trial) {
        const int kind = trial % 7;
        const int n = trial % 3 == 2 ? 1 + (int)(rng() % 80) : 1281;
        const std::vector<double> values = make_samples(rng, n, kind);
        double most = 0.0;
        int largest = 0;
        for (int d = 0; d < n; ++d)
            if (std::fabs(values[d]) > most) most = std::fabs(values[d]), largest = d;
        if (!(values[largest] > 0.0)) continue;  // no lobes: the kernels sort nothing
        ++cases;
        const std::vector<int> want = reference_order(values, n);
        // fx_warp_sort16's memory as the pull kernel lays it out: the keys over the order's
        // memory (the label piece, then the order piece), the run keys in the label piece, the
        // middle buffer and histogram apart
        const size_t label_bytes = (2 * (size_t)n + 15) / 16 * 16;
        std::vector<unsigned char> mem(std::max(4 * (size_t)n, label_bytes + 2 * (size_t)n) + 16, 0xcd);
        std::vector<unsigned short> mid(n, 0xcdcd);
        std::vector<unsigned> hist(256, 0xcdcdcdcdu);
        unsigned short *order = (unsigned short *)(mem.data() + label_bytes);
        int npos = -1;
        run_warp([&](int lane) {
            const int got = fx_warp_sort16(values.data(), most, n, (unsigned *)mem.data(), mid.data(), hist.data(),
                                           order, (unsigned short *)mem.data(), lane);
            if (lane == 0) npos = got;
        });
        ASSERT_EQ(npos, (int)want.size()) << "trial " << trial;
        EXPECT_TRUE(std::equal(want.begin(), want.end(), order)) << "fx_warp_sort16, trial " << trial << " kind " << kind;
        // as the slim kernel lays it out: the keys from the order's first byte, the run keys in the
        // label piece after it (fx_warp_slim_layout_for)
        std::vector<unsigned char> slim(label_bytes + 2 * (size_t)n + 4 * (size_t)n + 16, 0xcd);
        std::fill(mid.begin(), mid.end(), 0xcdcd);
        std::fill(hist.begin(), hist.end(), 0xcdcdcdcdu);
        unsigned short *slim_order = (unsigned short *)slim.data();
        run_warp([&](int lane) {
            const int got = fx_warp_sort16(values.data(), most, n, (unsigned *)slim.data(), mid.data(), hist.data(),
                                           slim_order, (unsigned short *)(slim.data() + label_bytes), lane);
            if (lane == 0) npos = got;
        });
        ASSERT_EQ(npos, (int)want.size()) << "trial " << trial;
        EXPECT_TRUE(std::equal(want.begin(), want.end(), slim_order))
            << "fx_warp_sort16 (slim layout), trial " << trial << " kind " << kind;
        // fx_warp_sort from the positives in direction order
        std::vector<unsigned short> sorted, other(n);
        for (int d = 0; d < n; ++d)
            if (values[d] > 0.0) sorted.push_back((unsigned short)d);
        std::vector<int> counts(256);
        run_warp([&](int lane) {
            fx_warp_sort(values.data(), sorted.data(), other.data(), counts.data(), (int)sorted.size(), lane);
        });
        EXPECT_TRUE(std::equal(want.begin(), want.end(), sorted.begin())) << "fx_warp_sort, trial " << trial << " kind " << kind;
    }
    EXPECT_GE(cases, 30);
}
