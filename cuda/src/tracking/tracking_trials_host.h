/* Internal, host only: iFOD1's trials four at a time, their first Philox blocks computed in
 * vector lanes.
 *
 * Why: a trial draws about four 32-bit words (the cone's point on its disc by rejection,
 * 4/pi tries of two words on average, and the acceptance test's word: tracking_directions.h,
 * tracking_ifod1.h), one to two Philox blocks of ten rounds each, and at about 22 trials a
 * step on tk-bench's volume the scalar blocks were the largest part of the step.  One block
 * (four words) covers the trials that take one try (pi/4 of them) and more; two blocks, which
 * cover 99%, cost 10% more CPU time a run (the second block is wasted on most trials).  The
 * four trials of a group differ only in their counter's low word (tk_philox_trial), so their
 * first blocks run as four lanes of GCC's vector extension (AVX2 in tracking_streamline_avx2.c); a trial that
 * draws past its fourth word goes on with tk_philox_next32 from its next block.
 *
 * The same draws to the bit: integer arithmetic is exact in any lane width, the words are
 * handed out in tk_philox_next32's order, and the conversions and the cone's rejection loop
 * below are tracking_rng.h's and tracking_directions.h's operations in their order (the
 * conversion copied for the pre-computed words; the host's byte-identity checks cover it:
 * Documentation/tracking.md, "Speed on the CPU"). */
#ifndef TK_TRACKING_TRIALS_HOST_H
#define TK_TRACKING_TRIALS_HOST_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "tracking_directions.h"
#include "tracking_rng.h"

#define TK_TRIAL_PRE_BLOCKS 1
#define TK_TRIAL_PRE_WORDS (4 * TK_TRIAL_PRE_BLOCKS)

/* A trial's stream with its first blocks' words at hand. */
typedef struct tk_trial_pre {
    tk_philox rest; /* the stream from block TK_TRIAL_PRE_BLOCKS on */
    uint32_t w[TK_TRIAL_PRE_WORDS];
    int i; /* words of w handed out */
} tk_trial_pre;

typedef uint64_t tk_trial_u4 __attribute__((vector_size(32)));

/* tk_philox_trial for trials n0 .. n0 + 3 of step `step` of stream `line`, blocks
 * 0 .. TK_TRIAL_PRE_BLOCKS - 1 computed at once: tk_philox_block's rounds, the 32-bit words
 * held in 64-bit lanes so that a product's high and low halves are a shift and a mask. */
static inline void tk_trial_pre_init4(tk_trial_pre *t, const tk_philox *line, uint32_t step, uint32_t n0)
{
    const uint64_t m32 = 0xFFFFFFFFu;
    for (int b = 0; b < TK_TRIAL_PRE_BLOCKS; ++b) {
        tk_trial_u4 c0, c1, c2, c3;
        for (int l = 0; l < 4; ++l) c0[l] = (uint32_t)(((n0 + (uint32_t)l) << TK_PHILOX_TRIAL_BLOCK_BITS) + (uint32_t)b);
        c1 = (tk_trial_u4){0, 0, 0, 0} + (uint64_t)(step + 1u);
        c2 = (tk_trial_u4){0, 0, 0, 0} + (uint64_t)line->ctr[2];
        c3 = (tk_trial_u4){0, 0, 0, 0} + (uint64_t)line->ctr[3];
        uint32_t k0 = line->key[0], k1 = line->key[1];
        for (int round = 0; round < 10; ++round) {
            const tk_trial_u4 p0 = c0 * (uint64_t)0xD2511F53u, p1 = c2 * (uint64_t)0xCD9E8D57u;
            const tk_trial_u4 n0v = (p1 >> 32) ^ c1 ^ (uint64_t)k0, n2v = (p0 >> 32) ^ c3 ^ (uint64_t)k1;
            c0 = n0v, c1 = p1 & m32, c2 = n2v, c3 = p0 & m32;
            k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
        }
        for (int l = 0; l < 4; ++l) {
            uint32_t *w = t[l].w + 4 * b;
            w[0] = (uint32_t)c0[l], w[1] = (uint32_t)c1[l], w[2] = (uint32_t)c2[l], w[3] = (uint32_t)c3[l];
        }
    }
    for (int l = 0; l < 4; ++l) {
        tk_philox_trial(&t[l].rest, line, step, n0 + (uint32_t)l);
        t[l].rest.ctr[0] += TK_TRIAL_PRE_BLOCKS; /* stays within the trial's 2^12 blocks */
        t[l].i = 0;
    }
}

static inline uint32_t tk_trial_pre_next32(tk_trial_pre *t)
{
    return t->i < TK_TRIAL_PRE_WORDS ? t->w[t->i++] : tk_philox_next32(&t->rest);
}

/* tk_philox_uniform32's conversion. */
static inline double tk_trial_pre_uniform32(tk_trial_pre *t)
{
    return (double)tk_trial_pre_next32(t) * (1.0 / 4294967296.0);
}

typedef double tk_trial_v4 __attribute__((vector_size(32)));

/* tk_tracking_random_cone on each trial's stream, then tk_tracking_rotate, for trials
 * 0..cnt-1 of a group (directions to d[3 l ..]), the four in vector lanes: each lane's first
 * try on the disc (tk_tracking_disc_try's operations) from its first two words, a lane whose
 * try falls outside retried in turn by tk_tracking_disc_try itself, then the square roots and
 * the rotation (tk_tracking_disc_to_cap's and tk_tracking_rotate's operations) in lanes.  Every
 * lane's operations are the scalar ones in their order, so the same directions to the bit.
 * Lanes cnt..3 get +z rotated, unused. */
static inline void tk_trial_pre_cones4(tk_trial_pre *t, int cnt, const tk_tracking_rotation *rot, double cone_radius,
                                       double cone_radius2, double *d)
{
    tk_trial_v4 a, b;
    for (int l = 0; l < 4; ++l) { /* tk_trial_pre_uniform32 of words 0 and 1 */
        a[l] = (double)t[l].w[0] * (1.0 / 4294967296.0);
        b[l] = (double)t[l].w[1] * (1.0 / 4294967296.0);
    }
    a = cone_radius * (2.0 * a - 1.0), b = cone_radius * (2.0 * b - 1.0);
    tk_trial_v4 r2 = a * a + b * b;
    for (int l = 0; l < 4; ++l) {
        t[l].i = 2;
        if (l >= cnt) {
            a[l] = b[l] = r2[l] = 0.0;
            continue;
        }
        while (r2[l] > cone_radius2) {
            const double u0 = tk_trial_pre_uniform32(&t[l]), u1 = tk_trial_pre_uniform32(&t[l]); /* in this order */
            double al, bl;
            r2[l] = tk_tracking_disc_try(u0, u1, cone_radius, &al, &bl);
            a[l] = al, b[l] = bl;
        }
    }
    const tk_trial_v4 one = {1.0, 1.0, 1.0, 1.0};
    const tk_trial_v4 root = (tk_trial_v4)_mm256_sqrt_pd((__m256d)(one - 0.25 * r2));
    const tk_trial_v4 x = a * root, y = b * root, z = one - 0.5 * r2;
    if (rot->flip != 0.0) { /* the reference is +-z: rare, lane by lane */
        for (int l = 0; l < 4; ++l) tk_tracking_rotate(rot, (const double[3]){x[l], y[l], z[l]}, d + 3 * l);
        return;
    }
    /* tk_tracking_rotate: out[c] = d[c] - alpha * (c == 2) - beta * m[c] + alpha * ref[c] + beta * mp[c] */
    const tk_trial_v4 alpha = z, beta = x * rot->m[0] + y * rot->m[1];
    const tk_trial_v4 o0 = x - alpha * 0.0 - beta * rot->m[0] + alpha * rot->ref[0] + beta * rot->mp[0];
    const tk_trial_v4 o1 = y - alpha * 0.0 - beta * rot->m[1] + alpha * rot->ref[1] + beta * rot->mp[1];
    const tk_trial_v4 o2 = z - alpha * 1.0 - beta * rot->m[2] + alpha * rot->ref[2] + beta * rot->mp[2];
    for (int l = 0; l < 4; ++l) d[3 * l] = o0[l], d[3 * l + 1] = o1[l], d[3 * l + 2] = o2[l];
}

#endif
