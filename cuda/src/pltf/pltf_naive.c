/* The seed's GTM: every entry of the full joint tensor over all indices is
 * formed (as the product of the operands) and added into its output entry.
 * Kept for comparison: it costs the product of every index's size per GTM. */
#include <string.h>

#include "pltf_internal.h"

tk_status tk_pltf_naive_gtm_cpu(const size_t *dims, int n, const tk_pltf_term *terms, const double *const *operands,
                                const tk_pltf_term *out_term, double *out)
{
    /* The joint index space: every index of the operands and the output. */
    int ids[TK_PLTF_MAX_INDICES], nj = 0, seen[TK_PLTF_MAX_INDICES] = {0};
    for (int d = 0; d < out_term->ndim; ++d) seen[out_term->idx[d]] = 1, ids[nj++] = out_term->idx[d];
    for (int f = 0; f < n; ++f)
        for (int d = 0; d < terms[f].ndim; ++d)
            if (!seen[terms[f].idx[d]]) seen[terms[f].idx[d]] = 1, ids[nj++] = terms[f].idx[d];
    /* stride[t][j]: how far tensor t (operands, then the output) moves per step of joint axis j */
    size_t stride[TK_PLTF_MAX_OPERANDS + 1][TK_PLTF_MAX_INDICES];
    memset(stride, 0, sizeof stride);
    for (int t = 0; t <= n; ++t) {
        const tk_pltf_term *term = t < n ? &terms[t] : out_term;
        size_t s = 1;
        for (int d = term->ndim - 1; d >= 0; --d) {
            for (int j = 0; j < nj; ++j)
                if (ids[j] == term->idx[d]) stride[t][j] = s;
            s *= dims[term->idx[d]];
        }
    }
    size_t out_count = 1, joint = 1;
    for (int d = 0; d < out_term->ndim; ++d) out_count *= dims[out_term->idx[d]];
    for (int j = 0; j < nj; ++j) joint *= dims[ids[j]];
    memset(out, 0, out_count * sizeof(double));
    size_t pos[TK_PLTF_MAX_INDICES] = {0}, off[TK_PLTF_MAX_OPERANDS + 1] = {0};
    for (size_t e = 0; e < joint; ++e) {
        double prod = 1;
        for (int t = 0; t < n; ++t) prod *= operands[t][off[t]];
        out[off[n]] += prod;
        for (int j = nj - 1; j >= 0; --j) {
            for (int t = 0; t <= n; ++t) off[t] += stride[t][j];
            if (++pos[j] < dims[ids[j]]) break;
            for (int t = 0; t <= n; ++t) off[t] -= pos[j] * stride[t][j];
            pos[j] = 0;
        }
    }
    return TK_OK;
}
