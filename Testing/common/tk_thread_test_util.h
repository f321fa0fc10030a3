// Test helper: two pieces of work started together on two threads, so that their calls
// overlap (two ITK pipelines, or two callers of one C core, in one process).
#pragma once

#include <atomic>
#include <functional>
#include <thread>

namespace tk_test {

inline void run_concurrently(const std::function<void()> &a, const std::function<void()> &b)
{
    std::atomic<int> ready{0};
    auto start = [&ready](const std::function<void()> &f) {
        ++ready;
        while (ready.load() < 2) std::this_thread::yield();
        f();
    };
    std::thread ta(start, std::cref(a)), tb(start, std::cref(b));
    ta.join();
    tb.join();
}

}  // namespace tk_test
