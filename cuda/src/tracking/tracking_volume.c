/* The CPU backends' pass over the SH volume before a run: the non-finite check, and where it
 * pays, a copy of the volume on 2 MiB pages that the streamlines then read (the same floats,
 * in the same order: the output is the same to the bit).
 *
 * Why the copy: the interpolation reads 8 corners of 45 floats a step at addresses that are a
 * row (y) and a slice (z) apart, all over a volume far larger than the data TLB reaches with
 * 4 KiB pages (tk-bench track's: 108 MB, 26,000 pages; the TLB holds a few thousand), so a
 * corner can cost a page walk on top of its cache miss (not counted: this machine's perf has no
 * hardware counters).  On 2 MiB pages (transparent huge pages,
 * madvise) the same volume is 52 pages.  Session 19's profiles (cpu-clock samples, SD_STREAM,
 * one thread, 20,000 seeds): the interpolation's time against the step's arithmetic fell from
 * 0.45 to 0.37 with the copy alone, and from 0.24 to 0.20 on top of the corners' prefetch and
 * the spatial seed order (Documentation/benchmarks.md, "CPU, session 19").  The copy rides on
 * the check's read of the whole volume, so it costs the writes and the kernel's zeroing of the
 * new pages: about 30 ms for 108 MB on the 2-core machine, against 13 for the check alone. */
#define _GNU_SOURCE /* madvise, MADV_HUGEPAGE */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif
#include "tracking_internal.h"

#if defined(__linux__) && defined(MADV_HUGEPAGE)
#define TK_TRACK_HUGE_COPY 1
#endif

/* Volumes smaller than this are read as given: 4 KiB pages' TLB reach is a few MiB (a few
 * thousand entries on current x86 cores), and below it the copy would cost more than it saves. */
#define TK_TRACK_COPY_MIN_BYTES ((size_t)32 << 20)
/* Nor is a volume copied for a run of fewer seeds than one per this many bytes of it.  The copy
 * costs about 0.3 ms a MB (mostly the kernel zeroing the new pages: 30 ms for tk-bench's 108 MB
 * on the 2-core machine, under load up to twice that); with the corners prefetched and the seeds
 * taken in spatial order (tracking_field.h, tracking_seeds.c), the huge pages then save about
 * 3% of an SD_STREAM run, 1-2 us a seed (session 19's profiles), so tk-bench's volume pays from
 * some 20,000 seeds (4 KiB a seed: 27,000).  TK_TRACK_VOLUME_COPY=1 forces the copy. */
#define TK_TRACK_COPY_BYTES_PER_SEED ((size_t)4 << 10)
#define TK_TRACK_HUGE_PAGE ((size_t)2 << 20)

/* The first of v[0..n) that is NaN or infinite, or n; with copy, v[0..n) is copied there
 * block by block as it goes (up to the block of the first hit).  Every cpu and omp execute
 * checks the whole SH volume (27M values in tk-bench track: 13 ms, 8% of a 4,000-seed CPU run,
 * as a loop that stops at the first hit, which the compiler keeps scalar; the cuda backend
 * checks on the GPU, tracking_cuda.cu); here blocks are tested with the exponent bits OR-ed
 * together, which vectorises (2-3x faster), and only a block that holds one is searched again.
 * The copy's block is tested where it was written (in the L1 cache). */
static size_t first_nonfinite(const float *v, float *copy, size_t n)
{
    enum { BLOCK = 2048 };
    for (size_t start = 0; start < n; start += BLOCK) {
        const size_t end = n - start < BLOCK ? n : start + BLOCK;
        const float *b = v;
        if (copy) {
            memcpy(copy + start, v + start, (end - start) * sizeof *v);
            b = copy;
        }
        uint32_t hit = 0;
        for (size_t i = start; i < end; ++i) {
            uint32_t bits;
            memcpy(&bits, b + i, sizeof bits);
            hit |= (bits & 0x7f800000u) == 0x7f800000u; /* exponent all ones: NaN or infinity */
        }
        if (hit)
            for (size_t i = start; i < end; ++i)
                if (!isfinite(b[i])) return i;
    }
    return n;
}

/* One share of the pass: first_nonfinite, or with check 0 only the copy. */
static size_t scan_share(const float *v, float *copy, size_t n, int check)
{
    if (check) return first_nonfinite(v, copy, n);
    memcpy(copy, v, n * sizeof *v);
    return n;
}

/* The pass (check and/or copy) over the omp backend's threads, each a contiguous share (the
 * first index of the first share with a hit is the whole volume's first): it reads the whole
 * volume at every execute, 27M floats in tk-bench's, a tenth of a short omp run's time on one
 * thread; the threads also share the copy's page faults. */
static size_t scan_volume(const float *v, float *copy, size_t n, int threads, int check)
{
    if (!check && !copy) return n;
    if (threads <= 1 || n < ((size_t)1 << 20)) return scan_share(v, copy, n, check);
    size_t first = n;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) reduction(min : first)
#endif
    for (int t = 0; t < threads; ++t) {
        const size_t a = n / (size_t)threads * (size_t)t, b = t == threads - 1 ? n : n / (size_t)threads * (size_t)(t + 1);
        const size_t i = scan_share(v + a, copy ? copy + a : NULL, b - a, check);
        if (i < b - a && a + i < first) first = a + i;
    }
    return first;
}

/* Whether this execute copies the volume: TK_TRACK_VOLUME_COPY=0 never (the volume read as
 * given, for A/B runs on one binary), 1 always (tests: any size), unset or anything else where
 * the volume is at least TK_TRACK_COPY_MIN_BYTES and the kernel's transparent huge pages are
 * not "never" (a copy on 4 KiB pages is slower than none: its page faults alone take 3x the
 * copy's time). */
static int want_copy(size_t bytes, uint64_t seeds)
{
#ifdef TK_TRACK_HUGE_COPY
    const char *env = getenv("TK_TRACK_VOLUME_COPY");
    if (env && strcmp(env, "0") == 0) return 0;
    if (env && strcmp(env, "1") == 0) return 1;
    if (bytes < TK_TRACK_COPY_MIN_BYTES || seeds < bytes / TK_TRACK_COPY_BYTES_PER_SEED) return 0;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return 0;
    char line[128] = {0};
    const int read = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    return read && strstr(line, "[never]") == NULL;
#else
    (void)bytes, (void)seeds;
    return 0;
#endif
}

/* A copy's pages: anonymous memory, 2 MiB aligned (mmap's own alignment is the 4 KiB page's,
 * so a run of huge pages is cut from a larger mapping), marked for huge pages; NULL where
 * none could be had (the run then reads the caller's volume). */
static float *map_copy(size_t bytes, tk_tracking_volume *vol)
{
#ifdef TK_TRACK_HUGE_COPY
    const size_t len = (bytes + TK_TRACK_HUGE_PAGE - 1) / TK_TRACK_HUGE_PAGE * TK_TRACK_HUGE_PAGE;
    const size_t span = len + TK_TRACK_HUGE_PAGE;
    char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    const size_t lead = (TK_TRACK_HUGE_PAGE - (uintptr_t)m % TK_TRACK_HUGE_PAGE) % TK_TRACK_HUGE_PAGE;
    char *start = m + lead;
    /* the unaligned ends back to the kernel; what is left is exactly [start, start + len) */
    if (lead) munmap(m, lead);
    if (span - lead > len) munmap(start + len, span - lead - len);
    (void)madvise(start, len, MADV_HUGEPAGE); /* advice: 4 KiB pages still give the same floats */
    vol->map = start, vol->map_bytes = len;
    return (float *)start;
#else
    (void)bytes, (void)vol;
    return NULL;
#endif
}

tk_status tk_tracking_nonfinite_error(const tk_tracking_plan *plan, const float *sh, size_t i)
{
    const size_t *d = plan->grid.dims, v = i / (size_t)plan->k;
    return tk_set_error(TK_ERR_DATA,
                        "the SH volume has a non-finite coefficient (%g) at voxel (%zu, %zu, %zu), coefficient %zu",
                        (double)sh[i], v % d[0], (v / d[0]) % d[1], v / (d[0] * d[1]), i % (size_t)plan->k);
}

void tk_tracking_volume_release(tk_tracking_volume *vol)
{
#ifdef TK_TRACK_HUGE_COPY
    if (vol->map) munmap(vol->map, vol->map_bytes);
#endif
    memset(vol, 0, sizeof *vol);
}

tk_status tk_tracking_volume_prepare(const tk_tracking_plan *plan, const float *sh, size_t sh_values, uint64_t seeds,
                                     int threads, tk_tracking_volume *vol)
{
    memset(vol, 0, sizeof *vol);
    vol->sh = sh;
    const int check = !plan->opts.allow_nonfinite;
    float *copy = want_copy(sh_values * sizeof *sh, seeds) ? map_copy(sh_values * sizeof *sh, vol) : NULL;
    const size_t i = scan_volume(sh, copy, sh_values, threads, check);
    if (i < sh_values) {
        tk_tracking_volume_release(vol);
        return tk_tracking_nonfinite_error(plan, sh, i);
    }
    if (copy) vol->sh = copy;
    return TK_OK;
}
