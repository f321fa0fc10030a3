/* Internal, host only (fixels_segment.h includes it outside __CUDACC__): a voxel's positive
 * samples in the walk's order, descending amplitude and ties by ascending direction index (the
 * order of fmls.cpp's multimap), as the device's sort_descending gives it, in fewer steps:
 * - the largest |sample| by a vector max (exact, so the same value as a scan) and the first
 *   direction holding it only where a positive and a negative maximum tie;
 * - the positives compacted without a branch (which one is positive is a coin toss), four at a
 *   time by AVX2 where the CPU has it;
 * - a 16-bit key by linear quantization, q = (uint)(v * (65535 / most)): monotone in v, so an LSD
 *   radix sort of 65535 - q (two byte passes, stable from index order) orders every pair of
 *   different keys as their values, and a last pass puts each run of equal keys in (value
 *   descending, index ascending) order; the result is the same total order as the float-key
 *   sort's.  The float keys' high byte (the exponent) puts most samples in a few counters, whose
 *   increments then wait on each other through memory; the linear key's bytes spread them. */
#ifndef TK_FIXELS_HOST_ORDER_H
#define TK_FIXELS_HOST_ORDER_H

#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TK_FIXELS_HOST_X86 1 /* the AVX paths below, picked at run time */
#endif

#include "fixels_internal.h"

/* Without AVX: four independent maxima (max is exact in any order, so the same value as one
 * scan). */
static inline void fx_host_max_scalar(const double *values, int n, double *pos, double *neg)
{
    double pm[4] = {0, 0, 0, 0}, nm[4] = {0, 0, 0, 0};
    int d = 0;
    for (; d + 4 <= n; d += 4)
        for (int i = 0; i < 4; ++i) {
            const double v = values[d + i];
            pm[i] = v > pm[i] ? v : pm[i], nm[i] = -v > nm[i] ? -v : nm[i];
        }
    for (; d < n; ++d) pm[0] = values[d] > pm[0] ? values[d] : pm[0], nm[0] = -values[d] > nm[0] ? -values[d] : nm[0];
    double p = pm[0], q = nm[0];
    for (int i = 1; i < 4; ++i) p = pm[i] > p ? pm[i] : p, q = nm[i] > q ? nm[i] : q;
    *pos = p, *neg = q;
}

#ifdef TK_FIXELS_HOST_X86
/* The largest sample and the largest negated sample (from 0) by AVX: vmaxpd keeps maxsd's rule
 * (the first operand where it is larger), and a max is exact in any order. */
__attribute__((target("avx"))) static void fx_host_max_avx(const double *values, int n, double *pos, double *neg)
{
    const __m256d sign = _mm256_set1_pd(-0.0);
    __m256d p0 = _mm256_setzero_pd(), p1 = p0, n0 = p0, n1 = p0;
    int d = 0;
    for (; d + 8 <= n; d += 8) {
        const __m256d v0 = _mm256_loadu_pd(values + d), v1 = _mm256_loadu_pd(values + d + 4);
        p0 = _mm256_max_pd(v0, p0), p1 = _mm256_max_pd(v1, p1);
        n0 = _mm256_max_pd(_mm256_xor_pd(v0, sign), n0), n1 = _mm256_max_pd(_mm256_xor_pd(v1, sign), n1);
    }
    double pl[4], nl[4];
    _mm256_storeu_pd(pl, _mm256_max_pd(p0, p1)), _mm256_storeu_pd(nl, _mm256_max_pd(n0, n1));
    double p = pl[0], q = nl[0];
    for (int i = 1; i < 4; ++i) p = pl[i] > p ? pl[i] : p, q = nl[i] > q ? nl[i] : q;
    for (; d < n; ++d) p = values[d] > p ? values[d] : p, q = -values[d] > q ? -values[d] : q;
    *pos = p, *neg = q;
}
#endif

/* Returns 1 where the first direction of the largest |sample| is negative or no sample is
 * positive (fmls.cpp's early return: no lobes), else 0 with *most the largest sample.
 * vector: the maxima by AVX where the CPU has it (the tests clear it for the scalar loop). */
static inline int fx_host_no_lobes(const double *values, int n, double *most, int vector)
{
    double p, q;
#ifdef TK_FIXELS_HOST_X86
    if (vector && __builtin_cpu_supports("avx")) {
        fx_host_max_avx(values, n, &p, &q);
    } else
#endif
    {
        fx_host_max_scalar(values, n, &p, &q);
    }
    *most = p;
    if (!(p > 0.0) || q > p) return 1;
    if (q < p) return 0;
    /* a positive and a negative sample of the same magnitude: the first of them decides */
    for (int d = 0; d < n; ++d)
        if (values[d] == p || values[d] == -p) return values[d] < 0;
    return 0;
}

/* t clamped to [0, 65535] (NaN to 0) and truncated, without a branch: whether a sample is
 * positive is a coin toss, and the compiler turns the plain ternaries into jumps. */
static inline uint32_t fx_host_key16(double t)
{
#ifdef __SSE2__
    const __m128d lo = _mm_max_sd(_mm_set_sd(t), _mm_setzero_pd()); /* NaN: the second, 0 */
    return (uint32_t)_mm_cvttsd_si32(_mm_min_sd(lo, _mm_set_sd(65535.0)));
#else
    const double lo = t > 0.0 ? t : 0.0;
    return (uint32_t)(lo < 65535.0 ? lo : 65535.0);
#endif
}

/* The keys of the positive samples of values[from..n), (65535 - q) << 16 | d, compacted into
 * key + npos; returns the new count. */
static inline int fx_host_keys_from(const double *values, int from, int n, double scale, uint32_t *key, int npos)
{
    for (int d = from; d < n; ++d) {
        const double v = values[d];
        const uint32_t q = fx_host_key16(v * scale);
        key[npos] = (65535u - q) << 16 | (uint32_t)d;
        npos += v > 0.0;
    }
    return npos;
}

#ifdef TK_FIXELS_HOST_X86
#define TK_FIXELS_HOST_AVX2 1
/* fx_host_keys_from four samples at a time (AVX2): the same clamps (vmaxpd/vminpd keep maxsd's
 * and minsd's NaN rule, the second operand), the same truncation, and the four keys compacted
 * by a byte shuffle of the positives' mask; each store of four lands at or before key[d + 3]. */
__attribute__((target("avx2"))) static int fx_host_keys_avx2(const double *values, int n, double scale,
                                                             uint32_t *key)
{
    static const uint8_t count4[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};
    static const uint8_t pick[16][16] = { /* per mask: the bytes of the kept lanes first, 0x80 zero */
        {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
        {0, 1, 2, 3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
        {4, 5, 6, 7, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
        {0, 1, 2, 3, 4, 5, 6, 7, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
        {8, 9, 10, 11, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
        {0, 1, 2, 3, 8, 9, 10, 11, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
        {4, 5, 6, 7, 8, 9, 10, 11, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x80, 0x80, 0x80, 0x80},
        {12, 13, 14, 15, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
        {0, 1, 2, 3, 12, 13, 14, 15, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
        {4, 5, 6, 7, 12, 13, 14, 15, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
        {0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15, 0x80, 0x80, 0x80, 0x80},
        {8, 9, 10, 11, 12, 13, 14, 15, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
        {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 0x80, 0x80, 0x80, 0x80},
        {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0x80, 0x80, 0x80, 0x80},
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    };
    const __m256d zero = _mm256_setzero_pd(), top = _mm256_set1_pd(65535.0), s4 = _mm256_set1_pd(scale);
    const __m128i top_i = _mm_set1_epi32(65535), step = _mm_set1_epi32(4);
    __m128i idx = _mm_setr_epi32(0, 1, 2, 3);
    int npos = 0, d = 0;
    for (; d + 4 <= n; d += 4, idx = _mm_add_epi32(idx, step)) {
        const __m256d v = _mm256_loadu_pd(values + d);
        const __m256d s = _mm256_min_pd(_mm256_max_pd(_mm256_mul_pd(v, s4), zero), top);
        const __m128i q = _mm256_cvttpd_epi32(s);
        const __m128i k = _mm_or_si128(_mm_slli_epi32(_mm_sub_epi32(top_i, q), 16), idx);
        const int m = _mm256_movemask_pd(_mm256_cmp_pd(v, zero, _CMP_GT_OQ));
        _mm_storeu_si128((__m128i *)(void *)(key + npos), _mm_shuffle_epi8(k, _mm_loadu_si128((const __m128i *)pick[m])));
        npos += count4[m];
    }
    return fx_host_keys_from(values, d, n, scale, key, npos);
}
#endif

/* The keys of every positive sample (fx_host_keys_from), by AVX2 where the CPU has it and
 * vector is set (the tests clear it to hold the scalar loop to the same order). */
static inline int fx_host_keys(const double *values, int n, double scale, uint32_t *key, int vector)
{
#ifdef TK_FIXELS_HOST_AVX2
    if (vector && __builtin_cpu_supports("avx2")) return fx_host_keys_avx2(values, n, scale, key);
#endif
    (void)vector;
    return fx_host_keys_from(values, 0, n, scale, key, 0);
}

/* The positive samples of values (n, largest most > 0) in the walk's order into order;
 * returns how many.  keys: two scratch arrays of n uint32 each; vector: fx_host_keys'. */
static inline int fx_host_sorted_positive(const double *values, int n, double most, uint32_t *key0, uint32_t *key1,
                                          int *order, int vector)
{
    /* most * scale may round past 65535, and scale may be inf for a subnormal most (0 * inf:
     * NaN, which the first clamp turns to 0): the clamps keep the key monotone and in 16 bits */
    const double scale = 65535.0 / most;
    int count[2][256];
    memset(count, 0, sizeof count);
    int npos = fx_host_keys(values, n, scale, key0, vector);
    for (int i = 0; i < npos; ++i) ++count[0][(key0[i] >> 16) & 0xff], ++count[1][key0[i] >> 24];
    /* two stable passes, low byte then high byte, skipped where every key shares the byte */
    uint32_t *src = key0, *dst = key1;
    for (int pass = 0; pass < 2; ++pass) {
        int *c = count[pass], sum = 0, same = 0;
        for (int b = 0; b < 256; ++b) same |= c[b] == npos;
        if (same) continue;
        for (int b = 0; b < 256; ++b) {
            const int t = c[b];
            c[b] = sum, sum += t;
        }
        const int shift = 16 + 8 * pass;
        for (int i = 0; i < npos; ++i) dst[c[(src[i] >> shift) & 0xff]++] = src[i];
        uint32_t *t = src;
        src = dst, dst = t;
    }
    /* runs of equal keys: by value descending, index ascending (insertion; runs are short) */
    for (int i = 1; i < npos; ++i) {
        const uint32_t e = src[i];
        if ((e >> 16) != (src[i - 1] >> 16)) continue;
        const int d = (int)(e & 0xffff);
        const double v = values[d];
        int j = i;
        while (j > 0 && (src[j - 1] >> 16) == (e >> 16) &&
               (values[src[j - 1] & 0xffff] < v || (values[src[j - 1] & 0xffff] == v && (int)(src[j - 1] & 0xffff) > d))) {
            src[j] = src[j - 1];
            --j;
        }
        src[j] = e;
    }
    for (int i = 0; i < npos; ++i) order[i] = (int)(src[i] & 0xffff);
    return npos;
}

#endif
