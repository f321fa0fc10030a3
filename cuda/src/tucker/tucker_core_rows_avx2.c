/* The core fit's row sums (tucker_core_rows.h) with AVX2, at R = 4 and 8: compiled with -mavx2
 * -mno-fma -ffp-contract=off (cuda/src/tucker/CMakeLists.txt), picked at run time where the CPU
 * has AVX2.  Each sum S_i[r][u] (u >= r) and t_i[r] is its own chain over the row's entries in
 * order, a product then a sum as in the portable text; the lanes only run several chains at
 * once, so the bits are the portable text's.  Four lanes hold a row r of S_i from column 0 or
 * 4: the lanes left of the diagonal sum products too, which are dropped (set to 0) at the end. */
#include <immintrin.h>

#include "tucker_core_rows.h"

int tk_tucker_core_rows_avx2_usable(void)
{
    static int usable = -1;
    if (usable < 0) usable = __builtin_cpu_supports("avx2") ? 1 : 0;
    return usable;
}

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

static inline void prefetch_ahead(const rows_of_mode *rm, int K, double *const *C, int R, size_t p, size_t nnz)
{
    if (p + TK_TUCKER_CORE_PREFETCH < nnz)
        for (int k = 0; k < K; ++k)
            __builtin_prefetch(C[rm->others[k]] + (size_t)rm->idx[(p + TK_TUCKER_CORE_PREFETCH) * K + k] * R);
}

static void row_sums4(const rows_of_mode *rm, int K, double *const *C, size_t nnz, size_t i, double *S, double *T)
{
    __m256d s[4], t = _mm256_setzero_pd(), q[1];
    for (int r = 0; r < 4; ++r) s[r] = _mm256_setzero_pd();
    for (size_t p = rm->row_ptr[i]; p < rm->row_ptr[i + 1]; ++p) {
        prefetch_ahead(rm, K, C, 4, p, nnz);
        entry_q4(rm, K, C, 4, p, q);
        double qs[4];
        _mm256_storeu_pd(qs, q[0]);
        for (int r = 0; r < 4; ++r) s[r] = _mm256_add_pd(s[r], _mm256_mul_pd(_mm256_set1_pd(qs[r]), q[0]));
        t = _mm256_add_pd(t, _mm256_mul_pd(_mm256_set1_pd((double)rm->val[p]), q[0]));
    }
    for (int r = 0; r < 4; ++r) {
        _mm256_storeu_pd(S + 4 * r, s[r]);
        for (int u = 0; u < r; ++u) S[4 * r + u] = 0;
    }
    _mm256_storeu_pd(T, t);
}

static void row_sums8(const rows_of_mode *rm, int K, double *const *C, size_t nnz, size_t i, double *S, double *T)
{
    /* rows 0-3 of S_i in two halves (columns 0-3, 4-7), rows 4-7 in their right half only */
    __m256d lo[4], hi[8], t0 = _mm256_setzero_pd(), t1 = _mm256_setzero_pd(), q[2];
    for (int r = 0; r < 4; ++r) lo[r] = _mm256_setzero_pd();
    for (int r = 0; r < 8; ++r) hi[r] = _mm256_setzero_pd();
    for (size_t p = rm->row_ptr[i]; p < rm->row_ptr[i + 1]; ++p) {
        prefetch_ahead(rm, K, C, 8, p, nnz);
        entry_q4(rm, K, C, 8, p, q);
        double qs[8];
        _mm256_storeu_pd(qs, q[0]);
        _mm256_storeu_pd(qs + 4, q[1]);
        for (int r = 0; r < 4; ++r) {
            const __m256d b = _mm256_set1_pd(qs[r]);
            lo[r] = _mm256_add_pd(lo[r], _mm256_mul_pd(b, q[0]));
            hi[r] = _mm256_add_pd(hi[r], _mm256_mul_pd(b, q[1]));
        }
        for (int r = 4; r < 8; ++r) hi[r] = _mm256_add_pd(hi[r], _mm256_mul_pd(_mm256_set1_pd(qs[r]), q[1]));
        const __m256d x = _mm256_set1_pd((double)rm->val[p]);
        t0 = _mm256_add_pd(t0, _mm256_mul_pd(x, q[0]));
        t1 = _mm256_add_pd(t1, _mm256_mul_pd(x, q[1]));
    }
    for (int r = 0; r < 8; ++r) {
        if (r < 4) _mm256_storeu_pd(S + 8 * r, lo[r]);
        else _mm256_storeu_pd(S + 8 * r, _mm256_setzero_pd());
        _mm256_storeu_pd(S + 8 * r + 4, hi[r]);
        for (int u = 0; u < r; ++u) S[8 * r + u] = 0;
    }
    _mm256_storeu_pd(T, t0);
    _mm256_storeu_pd(T + 4, t1);
}

void tk_tucker_core_row_sums_avx2(const rows_of_mode *rm, int K, double *const *C, int R, size_t nnz, size_t i,
                                  double *S, double *T)
{
    if (R == 4) row_sums4(rm, K, C, nnz, i, S, T);
    else row_sums8(rm, K, C, nnz, i, S, T);
}
