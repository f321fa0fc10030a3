/* The tuning table of the CUDA eigensolver (eig_tuning.h).  Why each column is what it is
 * (the measurements): Documentation/benchmarks.md, "Batched eigenvalues: tuning".
 *   lanes:         values only, the register kernel to n = 7, the lockstep kernels on 4, 8
 *                  and 16 lanes to n = 32, the whole warp above; with vectors (the shared
 *                  body's QR) 4, 8, 16 lanes, a block of 64 threads above 32.
 *   reduce_lanes:  at n = 23..27 the reduction on 16 lanes and the QR on 8 beat 8/8; at
 *                  n = 28..32 32/16 beat 16/16.
 *   qr_persistent: from n = 17 on, where a matrix's QR iteration is long enough that
 *                  refilling blocks costs less than the tails it saves.
 *   slots:         3; more did not pay (their device memory costs more than the depth gains).
 *   chunk_cap_mb:  64 MiB where the kernels outrun the copies (n <= 20), 256 MiB above.
 *   gentle:        above n = 20, where the kernels trail the copies. */
#include "eig_tuning.h"

#include "tk_eig.h"

static const tk_eig_tuning_row rows[] = {
    /* cc, vectors, max n   lanes reduce persistent slots cap gentle */
    {0, 0, 7, {1, 0, 0, 3, 64, 0}},
    {0, 0, 12, {4, 0, 0, 3, 64, 0}},
    {0, 0, 16, {8, 0, 0, 3, 64, 0}},
    {0, 0, 20, {8, 0, 1, 3, 64, 0}},
    {0, 0, 22, {8, 0, 1, 3, 256, 1}},
    {0, 0, 27, {8, 16, 1, 3, 256, 1}},
    {0, 0, 32, {16, 32, 1, 3, 256, 1}},
    {0, 0, TK_EIG_MAX_N, {32, 0, 1, 3, 256, 1}},
    {0, 1, 8, {4, 0, 0, 3, 64, 0}},
    {0, 1, 20, {8, 0, 0, 3, 64, 0}},
    {0, 1, 32, {16, 0, 0, 3, 256, 1}},
    {0, 1, TK_EIG_MAX_N, {64, 0, 0, 3, 256, 1}},
};

tk_eig_tuning tk_eig_tuning_pick(int cc, int n, int want_vectors)
{
    const int count = (int)(sizeof rows / sizeof rows[0]);
    int arch = 0; /* the newest architecture of the table the device reaches */
    for (int r = 0; r < count; ++r)
        if (rows[r].min_cc <= cc && rows[r].min_cc > arch) arch = rows[r].min_cc;
    const tk_eig_tuning_row *pick = NULL;
    for (int r = 0; r < count && !pick; ++r)
        if (rows[r].min_cc == arch && rows[r].want_vectors == (want_vectors != 0) && n <= rows[r].max_n) pick = &rows[r];
    return pick ? pick->choice : rows[count - 1].choice;
}
