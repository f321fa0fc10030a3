/* Packed symmetric storage: the index walk, ranks, multiplicities and the
 * reference kernels A x^m, A x^(m-1), A x^(m-2) of the seed's Algorithms 2-4. */
#include "tk_sshopm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/sym_tensor_hd.h" /* the walk, the multiplicity and A x^(m-2), host and device */

size_t tk_sym_num_unique(int order, int dim)
{
    if (order < 1 || dim < 1) return 0;
    /* binom(m+n-1, m) built as a running product that stays an integer. */
    size_t k = 1;
    for (int i = 1; i <= order; ++i) {
        size_t factor = (size_t)(dim - 1 + i);
        if (k > SIZE_MAX / factor) return 0;
        k = k * factor / (size_t)i;
    }
    return k;
}

void tk_sym_index_first(int order, int *index) { memset(index, 0, sizeof(int) * (size_t)order); }

int tk_sym_index_next(int order, int dim, int *index) { return tk_sym_hd_index_next(order, dim, index); }

/* Number of non-decreasing tuples of length len over `values` symbols. */
static size_t count_tuples(int len, int values)
{
    if (len == 0) return 1;
    if (values <= 0) return 0;
    return tk_sym_num_unique(len, values);
}

static int compare_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

size_t tk_sym_rank(int order, int dim, const int *index)
{
    int sorted[64];
    int *s = order <= 64 ? sorted : malloc(sizeof(int) * (size_t)order);
    if (!s) return (size_t)-1;
    memcpy(s, index, sizeof(int) * (size_t)order);
    qsort(s, (size_t)order, sizeof(int), compare_int);
    size_t rank = 0;
    int low = 0;
    for (int p = 0; p < order; ++p) {
        for (int u = low; u < s[p]; ++u) rank += count_tuples(order - p - 1, dim - u);
        low = s[p];
    }
    if (s != sorted) free(s);
    return rank;
}

double tk_sym_multiplicity(int order, const int *sorted_index) { return tk_sym_hd_multiplicity(order, sorted_index); }

#define TK_SYM_MAX_STACK_ORDER 64

/* Algorithm 2, y = A x^m, in the given precision. */
#define TK_DEFINE_AXM(NAME, REAL)                                                    \
    REAL NAME(int order, int dim, const REAL *packed, const REAL *x)                 \
    {                                                                                \
        int index[TK_SYM_MAX_STACK_ORDER];                                           \
        if (order > TK_SYM_MAX_STACK_ORDER) return (REAL)NAN;                        \
        tk_sym_index_first(order, index);                                            \
        REAL y = 0;                                                                  \
        size_t k = 0;                                                                \
        do {                                                                         \
            REAL term = packed[k++] * (REAL)tk_sym_multiplicity(order, index);       \
            for (int p = 0; p < order; ++p) term *= x[index[p]];                     \
            y += term;                                                               \
        } while (tk_sym_index_next(order, dim, index));                              \
        return y;                                                                    \
    }
TK_DEFINE_AXM(tk_sym_axm_d, double)
TK_DEFINE_AXM(tk_sym_axm_f, float)

/* Algorithm 3, y = A x^(m-1): each unique entry adds to y_i for every distinct
 * index i it holds, with the multiplicity of the class less one i (NUMOCC1). */
#define TK_DEFINE_AXM1(NAME, REAL)                                                   \
    void NAME(int order, int dim, const REAL *packed, const REAL *x, REAL *y)        \
    {                                                                                \
        int index[TK_SYM_MAX_STACK_ORDER];                                           \
        for (int i = 0; i < dim; ++i) y[i] = 0;                                      \
        if (order > TK_SYM_MAX_STACK_ORDER) return;                                  \
        tk_sym_index_first(order, index);                                            \
        size_t k = 0;                                                                \
        do {                                                                         \
            double mult = tk_sym_multiplicity(order, index);                         \
            for (int p = 0; p < order; ++p) {                                        \
                if (p > 0 && index[p] == index[p - 1]) continue;                     \
                int i = index[p], occ = 0;                                           \
                REAL term = packed[k];                                               \
                for (int q = 0; q < order; ++q) {                                    \
                    if (index[q] == i) ++occ;                                        \
                    if (q != p) term *= x[index[q]];                                 \
                }                                                                    \
                y[i] += term * (REAL)(mult * occ / order);                           \
            }                                                                        \
            ++k;                                                                     \
        } while (tk_sym_index_next(order, dim, index));                              \
    }
TK_DEFINE_AXM1(tk_sym_axm1_d, double)
TK_DEFINE_AXM1(tk_sym_axm1_f, float)

void tk_sym_axm2_d(int order, int dim, const double *packed, const double *x, double *y)
{
    int index[TK_SYM_MAX_STACK_ORDER];
    int count[256];
    memset(y, 0, sizeof(double) * (size_t)dim * (size_t)dim);
    if (order < 2 || order > TK_SYM_MAX_STACK_ORDER || dim > 256) return;
    tk_sym_hd_axm2(order, dim, packed, x, y, index, count);
}

static size_t full_size(int order, int dim)
{
    size_t total = 1;
    for (int p = 0; p < order; ++p) {
        if (total > SIZE_MAX / (size_t)dim) return 0;
        total *= (size_t)dim;
    }
    return total;
}

/* Decode a C-order offset of the full tensor into its index tuple. */
static void full_index(int order, int dim, size_t offset, int *index)
{
    for (int p = order - 1; p >= 0; --p) {
        index[p] = (int)(offset % (size_t)dim);
        offset /= (size_t)dim;
    }
}

tk_status tk_sym_pack_d(int order, int dim, const double *full, double tol, double *packed,
                        size_t *bad_full_offset)
{
    int index[TK_SYM_MAX_STACK_ORDER];
    size_t total = full_size(order, dim), num = tk_sym_num_unique(order, dim);
    if (order < 1 || order > TK_SYM_MAX_STACK_ORDER || dim < 1 || !total || !num)
        return tk_set_error(TK_ERR_ARGUMENT, "order %d, dimension %d: tensor too large", order, dim);
    double scale = 0;
    for (size_t e = 0; e < total; ++e) scale = fmax(scale, fabs(full[e]));
    char *seen = calloc(num, 1);
    if (!seen) return tk_set_error(TK_ERR_MEMORY, "out of memory packing a tensor");
    tk_status status = TK_OK;
    for (size_t e = 0; e < total; ++e) {
        full_index(order, dim, e, index);
        size_t r = tk_sym_rank(order, dim, index);
        if (!seen[r]) {
            seen[r] = 1;
            packed[r] = full[e];
        } else if (!(fabs(full[e] - packed[r]) <= tol * scale)) {
            if (bad_full_offset) *bad_full_offset = e;
            status = tk_set_error(TK_ERR_DATA, "not symmetric");
            break;
        }
    }
    free(seen);
    return status;
}

void tk_sym_unpack_d(int order, int dim, const double *packed, double *full)
{
    int index[TK_SYM_MAX_STACK_ORDER];
    size_t total = full_size(order, dim);
    if (order > TK_SYM_MAX_STACK_ORDER) return;
    for (size_t e = 0; e < total; ++e) {
        full_index(order, dim, e, index);
        full[e] = packed[tk_sym_rank(order, dim, index)];
    }
}
