/* The core fit's row sums (tucker_core_rows.h) with AVX2, at R = 4 and 8: compiled with -mavx2
 * -mno-fma -ffp-contract=off (cmake's tk_core_avx2_copy), picked at run time where the CPU has
 * AVX2 (tucker_spectral.c's core_rows_avx2).  Each sum S_i[r][u] (u >= r) and t_i[r] is its own
 * chain over the row's entries in order, a product then a sum as in the portable text; the
 * lanes only run several chains at once, so the bits are the portable text's.  Four lanes hold
 * four columns of a row r of S_i: those left of the diagonal sum products too, which are
 * dropped (set to 0) at the end. */
#include <immintrin.h>

#include "tucker_core_rows.h"

/* q = the product of the entry's other modes' C rows, in mode order (row_entry_q). */
static inline void entry_q4(const rows_of_mode *rm, int K, double *const *C, int R, size_t p, __m256d *q)
{
    const uint32_t *ix = rm->idx + p * (size_t)K;
    const double *c = C[rm->others[0]] + (size_t)ix[0] * R;
    for (int h = 0; h < R / 4; ++h) q[h] = _mm256_loadu_pd(c + 4 * h);
    for (int k = 1; k < K; ++k) {
        c = C[rm->others[k]] + (size_t)ix[k] * R;
        for (int h = 0; h < R / 4; ++h) q[h] = _mm256_mul_pd(q[h], _mm256_loadu_pd(c + 4 * h));
    }
}

/* The sums with R (4 or 8) a constant where inlined: acc[r][h] holds S_i's row r, columns 4h to
 * 4h + 3, for the halves h from r's own (r / 4) on; the lanes left of the diagonal are set to 0
 * when stored. */
static inline __attribute__((always_inline)) void row_sums(const rows_of_mode *rm, int K, double *const *C, int R,
                                                           size_t nnz, size_t i, double *S, double *T)
{
    const int H = R / 4;
    __m256d acc[8][2], t[2], q[2];
    for (int h = 0; h < H; ++h) {
        t[h] = _mm256_setzero_pd();
        for (int r = 0; r < R; ++r) acc[r][h] = _mm256_setzero_pd();
    }
    for (size_t p = rm->row_ptr[i]; p < rm->row_ptr[i + 1]; ++p) {
        tk_tucker_core_prefetch(rm, K, C, R, p, nnz);
        entry_q4(rm, K, C, R, p, q);
        double qs[8];
        for (int h = 0; h < H; ++h) _mm256_storeu_pd(qs + 4 * h, q[h]);
        for (int r = 0; r < R; ++r) {
            const __m256d b = _mm256_set1_pd(qs[r]);
            for (int h = r / 4; h < H; ++h) acc[r][h] = _mm256_add_pd(acc[r][h], _mm256_mul_pd(b, q[h]));
        }
        const __m256d x = _mm256_set1_pd((double)rm->val[p]);
        for (int h = 0; h < H; ++h) t[h] = _mm256_add_pd(t[h], _mm256_mul_pd(x, q[h]));
    }
    for (int r = 0; r < R; ++r) {
        for (int h = 0; h < H; ++h) _mm256_storeu_pd(S + R * r + 4 * h, h >= r / 4 ? acc[r][h] : _mm256_setzero_pd());
        for (int u = 0; u < r; ++u) S[R * r + u] = 0;
    }
    for (int h = 0; h < H; ++h) _mm256_storeu_pd(T + 4 * h, t[h]);
}

void tk_tucker_core_row_sums_avx2(const rows_of_mode *rm, int K, double *const *C, int R, size_t nnz, size_t i,
                                  double *S, double *T)
{
    if (R == 4) row_sums(rm, K, C, 4, nnz, i, S, T);
    else row_sums(rm, K, C, 8, nnz, i, S, T);
}
