/* The warp kernels' sorts of a voxel's positive samples into the walk's order (descending
 * sample, ties by ascending direction): fx_warp_sort (float keys, the fused kernel's) and
 * fx_warp_sort16 (the host's 16-bit linear key, the pull kernel's).  Device text with the warp's
 * collectives (ballots, shuffles, matches, __syncwarp) and shared-memory atomics only, nothing of
 * the CUDA runtime: tk_test_fixels_warp_sort compiles it on the host and runs it on a 32-thread
 * emulation of the warp against a plain sort. */
#ifndef TK_FIXELS_WARP_SORT_CUH
#define TK_FIXELS_WARP_SORT_CUH

/* The float key of a positive sample (sort_descending's): ascending keys, descending floats. */
__device__ static inline unsigned fx_key(const double *values, unsigned short d)
{
    return ~__float_as_uint((float)values[d]);
}

__device__ static inline unsigned fx_lanes_below(int lane)
{
    return (1u << lane) - 1u;
}

/* sort_descending for one warp: order[0..npos) (ascending directions) into the host's order,
 * other (npos ushorts) and hist (256 ints) as scratch; the result ends in order. */
__device__ static inline void fx_warp_sort(const double *values, unsigned short *order, unsigned short *other,
                                           int *hist, int npos, int lane)
{
    const unsigned full = 0xffffffffu;
    unsigned short *src = order, *dst = other;
    for (int shift = 0; shift < 32; shift += 8) {
        __syncwarp();
        for (int b = lane; b < 256; b += 32) hist[b] = 0;
        __syncwarp();
        /* two of a lane's keys read before their counts (the reads are a chain: direction, sample) */
        for (int i = lane; i < npos; i += 64) {
            const bool two = i + 32 < npos;
            const unsigned k0 = fx_key(values, src[i]), k1 = two ? fx_key(values, src[i + 32]) : 0u;
            atomicAdd(&hist[(k0 >> shift) & 0xffu], 1);
            if (two) atomicAdd(&hist[(k1 >> shift) & 0xffu], 1);
        }
        __syncwarp();
        /* a byte all keys share orders nothing (the host skips it too; a stable pass over it
         * would leave the order as it is) */
        int same = 0;
        for (int b = lane; b < 256; b += 32) same |= hist[b] == npos;
        if (__any_sync(full, same)) continue;
        /* exclusive prefix sums: lane owns bins 8 lane .. 8 lane + 7 */
        int local[8], sum = 0;
        for (int j = 0; j < 8; ++j) local[j] = hist[8 * lane + j], sum += local[j];
        int incl = sum;
        for (int off = 1; off < 32; off *= 2) {
            const int up = __shfl_up_sync(full, incl, off);
            if (lane >= off) incl += up;
        }
        int at = incl - sum;
        __syncwarp();
        for (int j = 0; j < 8; ++j) hist[8 * lane + j] = at, at += local[j];
        __syncwarp();
        /* stable scatter, 32 at a time in order: equal digits ranked by lane; the next 32's
         * directions and keys read before this 32's barriers (src is not written in the pass) */
        unsigned short next_d = lane < npos ? src[lane] : 0;
        unsigned next_key = lane < npos ? fx_key(values, next_d) : 0u;
        for (int base = 0; base < npos; base += 32) {
            const int i = base + lane;
            const bool live = i < npos;
            const unsigned short d = next_d;
            const unsigned key = next_key;
            if (i + 32 < npos) next_d = src[i + 32], next_key = fx_key(values, next_d);
            const unsigned digit = live ? (key >> shift) & 0xffu : 256u + (unsigned)lane;
            const unsigned peers = __match_any_sync(full, digit);
            const int rank = __popc(peers & fx_lanes_below(lane));
            const int slot = live ? hist[digit] : 0;
            __syncwarp();
            if (live) {
                dst[slot + rank] = d;
                if (rank == 0) hist[digit] = slot + __popc(peers);
            }
            __syncwarp();
        }
        unsigned short *t = src;
        src = dst, dst = t;
    }
    __syncwarp();
    if (src != order)
        for (int i = lane; i < npos; i += 32) order[i] = src[i];
    __syncwarp();
    /* runs of samples that round to the same float: double order (insertion), as the host */
    int tie = 0;
    for (int i = lane + 1; i < npos; i += 32) tie |= fx_key(values, order[i]) == fx_key(values, order[i - 1]);
    const bool any_tie = __any_sync(full, tie);
    __syncwarp();
    if (any_tie && lane == 0) {
        for (int i = 1; i < npos; ++i) {
            const unsigned key = fx_key(values, order[i]);
            if (key != fx_key(values, order[i - 1])) continue;
            const unsigned short d = order[i];
            const double v = values[d];
            int j = i;
            while (j > 0 && fx_key(values, order[j - 1]) == key &&
                   (values[order[j - 1]] < v || (values[order[j - 1]] == v && order[j - 1] > d))) {
                order[j] = order[j - 1];
                --j;
            }
            order[j] = d;
        }
    }
    __syncwarp();
}

/* The 16-bit linear key of a positive sample (fixels_host_order.h's): q = v * scale truncated,
 * clamped to 65535 (scale = 65535 / the largest sample; v > 0, so v * scale is not NaN), as
 * 65535 - q (ascending keys, descending samples).  Monotone in v: a sort by it, stable from
 * direction order, with each run of equal keys then put in (sample descending, direction
 * ascending) order, is the walk's total order. */
__device__ static inline unsigned fx_key16(double v, double scale)
{
    const double t = v * scale;
    return 65535u - (t < 65535.0 ? (unsigned)t : 65535u);
}

/* The positive samples of values (n; the largest sample most > 0) in the walk's order into order
 * (n ushorts), returned their count: the host's sort (fx_host_sorted_positive) in warp form.
 * Scratch: keys (n uint32; may hold order's memory, which is written only once they are read),
 * mid (n ushorts), hist (256 words, at least n / 32) and run_keys (n ushorts; may hold the keys'
 * memory, not order's, mid's or hist's: the second pass's keys by sorted position).
 * The keys (65535 - q) << 16 | direction made and compacted in direction order, both bytes'
 * counts in one histogram (the low byte's in the low half, the high byte's in the high half);
 * two stable passes, keys -> mid (directions) -> order, equal digits ranked by lane
 * (__match_any_sync); the second pass's keys from the samples again.  Against fx_warp_sort: two
 * passes, not up to four, the first without the direction -> sample chain, and the linear key's
 * bytes spread over the counters (the float key's high byte puts most samples in a few, whose
 * atomic increments wait on each other).  Then the runs of equal keys (a few short ones a voxel:
 * 640 keys in 65536) are marked by a ballot a 32 of the order, and each run is put in order by
 * the lane of its first position, all runs at once. */
__device__ static inline int fx_warp_sort16(const double *values, double most, int n, unsigned *keys,
                                            unsigned short *mid, unsigned *hist, unsigned short *order,
                                            unsigned short *run_keys, int lane)
{
    const unsigned full = 0xffffffffu;
    const double scale = 65535.0 / most;
    for (int b = lane; b < 256; b += 32) hist[b] = 0;
    __syncwarp();
    int npos = 0;
    /* the samples of the FX_SORT_AHEAD 32s after this one read before this 32's ballot and counts
     * (a ring in registers: the slim kernel's samples are in global memory, a few hundred cycles
     * away, a 32's counts a few tens; the constant loops over the ring are unrolled by nvcc
     * without a pragma, which the host test's compiler would warn of) */
    constexpr int FX_SORT_AHEAD = 4;
    double ahead[FX_SORT_AHEAD];
    for (int j = 0; j < FX_SORT_AHEAD; ++j) ahead[j] = lane + 32 * j < n ? values[lane + 32 * j] : 0.0;
    for (int base = 0; base < n; base += 32) {
        const int d = base + lane;
        const double v = d < n ? ahead[0] : 0.0;
        for (int j = 0; j + 1 < FX_SORT_AHEAD; ++j) ahead[j] = ahead[j + 1];
        ahead[FX_SORT_AHEAD - 1] = d + 32 * FX_SORT_AHEAD < n ? values[d + 32 * FX_SORT_AHEAD] : 0.0;
        const bool pos = v > 0.0;
        const unsigned bits = __ballot_sync(full, pos);
        if (pos) {
            const unsigned key = fx_key16(v, scale);
            keys[npos + __popc(bits & fx_lanes_below(lane))] = key << 16 | (unsigned)d;
            atomicAdd(&hist[key & 0xffu], 1u);
            atomicAdd(&hist[key >> 8], 0x10000u);
        }
        npos += __popc(bits);
    }
    __syncwarp();
    for (int pass = 0; pass < 2; ++pass) {
        /* exclusive prefix sums of the pass's counts: lane owns bins 8 lane .. 8 lane + 7; the
         * first pass keeps the second's counts in the high halves */
        unsigned local[8], sum = 0;
        for (int j = 0; j < 8; ++j) {
            const unsigned h = hist[8 * lane + j];
            local[j] = pass ? h >> 16 : h & 0xffffu, sum += local[j];
        }
        unsigned incl = sum;
        for (int off = 1; off < 32; off *= 2) {
            const unsigned up = __shfl_up_sync(full, incl, off);
            if (lane >= off) incl += up;
        }
        unsigned at = incl - sum;
        __syncwarp();
        for (int j = 0; j < 8; ++j) {
            const unsigned h = hist[8 * lane + j];
            hist[8 * lane + j] = (pass ? 0u : h & 0xffff0000u) | at, at += local[j];
        }
        __syncwarp();
        /* stable scatter, 32 at a time in order: the entries of the two 32s after this one read
         * before this 32's barriers (the pass's source is not written in it; the second pass's
         * keys again from the samples, which may be in global memory); the second pass also
         * puts each key where its direction goes (run_keys: the runs' search below without the
         * samples) */
        unsigned next = 0, after = 0;
        if (lane < npos) next = pass ? fx_key16(values[mid[lane]], scale) << 16 | mid[lane] : keys[lane];
        if (lane + 32 < npos)
            after = pass ? fx_key16(values[mid[lane + 32]], scale) << 16 | mid[lane + 32] : keys[lane + 32];
        for (int base = 0; base < npos; base += 32) {
            const int i = base + lane;
            const bool live = i < npos;
            const unsigned e = next;
            next = after;
            if (i + 64 < npos) after = pass ? fx_key16(values[mid[i + 64]], scale) << 16 | mid[i + 64] : keys[i + 64];
            const unsigned digit = live ? (e >> (16 + 8 * pass)) & 0xffu : 256u + (unsigned)lane;
            const unsigned peers = __match_any_sync(full, digit);
            const int rank = __popc(peers & fx_lanes_below(lane));
            const unsigned slot = live ? hist[digit] & 0xffffu : 0u;
            __syncwarp();
            if (live) {
                (pass ? order : mid)[slot + rank] = (unsigned short)(e & 0xffffu);
                if (pass) run_keys[slot + rank] = (unsigned short)(e >> 16);
                if (rank == 0) hist[digit] += (unsigned)__popc(peers);
            }
            __syncwarp();
        }
    }
    /* the runs of equal keys: flags word t, bit j: position 32 t + j has its predecessor's key
     * (the histogram's memory, free now: n / 32 words) */
    unsigned *same = hist;
    unsigned prev = 0xffffffffu, any = 0;
    for (int base = 0; base < npos; base += 32) {
        const int i = base + lane;
        const unsigned key = i < npos ? (unsigned)run_keys[i] : 0xfffffffeu - (unsigned)lane;
        unsigned before = __shfl_up_sync(full, key, 1);
        if (lane == 0) before = prev;
        const unsigned bits = __ballot_sync(full, i < npos && key == before);
        if (lane == 0) same[base / 32] = bits;
        any |= bits;
        prev = __shfl_sync(full, key, 31);
    }
    __syncwarp();
    if (any) {
        /* a run: a position without its predecessor's key whose successor has it; its end: the
         * next position without (the flags only: the runs' entries are their lanes' alone) */
        for (int i = lane; i + 1 < npos; i += 32) {
            if ((same[i / 32] >> (i % 32) & 1u) || !(same[(i + 1) / 32] >> ((i + 1) % 32) & 1u)) continue;
            int end = i + 2;
            while (end < npos && (same[end / 32] >> (end % 32) & 1u)) ++end;
            for (int a = i + 1; a < end; ++a) {
                const unsigned short d = order[a];
                const double v = values[d];
                int b = a;
                while (b > i && (values[order[b - 1]] < v || (values[order[b - 1]] == v && order[b - 1] > d))) {
                    order[b] = order[b - 1];
                    --b;
                }
                order[b] = d;
            }
        }
    }
    __syncwarp();
    return npos;
}

#endif
