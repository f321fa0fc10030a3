/* Internal: Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as
 * 1, 2, 3", SC'11), the counter-based generator of every random draw of the tracker.
 *
 * Why counter-based: a seed's draws are a pure function of (key, counter), so the key is the
 * caller's rng_seed and each seed's counter starts at (its seed index, 0).  No state passes
 * between seeds: the output does not depend on which thread tracks a seed, how many threads
 * there are, or how the seeds are cut into chunks.  Ten rounds pass BigCrush (the paper's
 * Table 2); the constants are the paper's. */
#ifndef TK_TRACKING_RNG_H
#define TK_TRACKING_RNG_H

#include <stdint.h>

#include "common/tk_hd.h"

typedef struct tk_philox {
    uint32_t key[2];
    uint32_t ctr[4]; /* ctr[0..1]: the block number within the stream; ctr[2..3]: the seed index */
    uint32_t out[4]; /* the current block */
    int used;        /* words of out already handed out (4: draw a new block) */
} tk_philox;

TK_HD static inline void tk_philox_mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
    const uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32), *lo = (uint32_t)p;
}

/* One block: ten rounds of the Philox S-box with the key bumped by the Weyl constants. */
TK_HD static inline void tk_philox_block(const uint32_t *ctr, const uint32_t *key, uint32_t *out)
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; ++round) {
        uint32_t hi0, lo0, hi1, lo1;
        tk_philox_mulhilo(0xD2511F53u, c0, &hi0, &lo0);
        tk_philox_mulhilo(0xCD9E8D57u, c2, &hi1, &lo1);
        const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* The stream of seed `stream` under key `seed`. */
TK_HD static inline void tk_philox_init(tk_philox *r, uint64_t seed, uint64_t stream)
{
    r->key[0] = (uint32_t)seed, r->key[1] = (uint32_t)(seed >> 32);
    r->ctr[0] = r->ctr[1] = 0;
    r->ctr[2] = (uint32_t)stream, r->ctr[3] = (uint32_t)(stream >> 32);
    r->used = 4;
}

TK_HD static inline uint32_t tk_philox_next32(tk_philox *r)
{
    if (r->used == 4) {
        tk_philox_block(r->ctr, r->key, r->out);
        if (++r->ctr[0] == 0) ++r->ctr[1];
        r->used = 0;
    }
    return r->out[r->used++];
}

/* The blocks one iFOD1 trial's stream holds: 2^12, 16,384 words, where a trial draws about
 * four (tracking_ifod1.h); one that drew more would run on into the next trial's. */
#define TK_PHILOX_TRIAL_BLOCK_BITS 12
/* The most trials a step may draw from streams of its own: 2^(32 - TK_PHILOX_TRIAL_BLOCK_BITS). */
#define TK_PHILOX_MAX_TRIALS (1u << (32 - TK_PHILOX_TRIAL_BLOCK_BITS))

/* Trial `trial` of step `step` of the streamline whose stream is `line`: a stream of its own
 * (block counter: step + 1 above, the trial and its blocks below; the streamline's own draws
 * keep the upper word 0), so that a step's trials are independent of one another and of the
 * order they are drawn in: the CPU draws them one after another, a GPU warp 32 at once. */
TK_HD static inline void tk_philox_trial(tk_philox *r, const tk_philox *line, uint32_t step, uint32_t trial)
{
    r->key[0] = line->key[0], r->key[1] = line->key[1];
    r->ctr[0] = trial << TK_PHILOX_TRIAL_BLOCK_BITS, r->ctr[1] = step + 1u;
    r->ctr[2] = line->ctr[2], r->ctr[3] = line->ctr[3];
    r->used = 4;
}

/* Uniform in [0, 1) with 53 random bits (two words). */
TK_HD static inline double tk_philox_uniform(tk_philox *r)
{
    const uint64_t hi = tk_philox_next32(r) >> 5, lo = tk_philox_next32(r) >> 6; /* 27 + 26 bits */
    return (double)(hi * 67108864u + lo) * (1.0 / 9007199254740992.0);
}

/* Uniform in [0, 1) with 32 random bits (one word): iFOD1's trials (a point of the cone's
 * disc, the acceptance test), where a step draws some twenty trials and the draws' Philox
 * blocks were the largest part of the CPU's step; 2^-32 is far below what a direction in
 * float or a rejection test against a float-accurate FOD can resolve (MRtrix3 draws these in
 * float, 24 bits). */
TK_HD static inline double tk_philox_uniform32(tk_philox *r)
{
    return (double)tk_philox_next32(r) * (1.0 / 4294967296.0);
}

#endif
