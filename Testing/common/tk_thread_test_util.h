// Test helper: pieces of work started together, one thread each, so that their calls
// overlap (two ITK pipelines, or several callers of one C core, in one process).
#pragma once

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

namespace tk_test {

// Every thread waits until all have started, then runs its piece; returns when all are done.
inline void run_all_concurrently(const std::vector<std::function<void()>> &work)
{
    std::atomic<size_t> ready{0};
    const size_t count = work.size();
    std::vector<std::thread> threads;
    for (const auto &f : work)
        threads.emplace_back([&ready, count, &f] {
            ++ready;
            while (ready.load() < count) std::this_thread::yield();
            f();
        });
    for (auto &t : threads) t.join();
}

inline void run_concurrently(const std::function<void()> &a, const std::function<void()> &b)
{
    run_all_concurrently({a, b});
}

}  // namespace tk_test
