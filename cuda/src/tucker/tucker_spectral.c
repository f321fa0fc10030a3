/* FastTucker's spectral start (tk_tucker_spectral_start) and its deflation round
 * (tk_tucker_spectral_deflate): the C form of the numpy prototype
 * scripts/tucker_spectral_start.py, whose results are in Documentation/benchmarks.md ("A spectral
 * start", "Deflation").  Host only, double precision; any backend then trains from the model it
 * writes.
 *
 * Determinism: every sum runs in an order fixed by the data (columns, rows, blocks of entries),
 * never by the thread count, so a seed gives the same model bit for bit on any number of
 * threads, as the solvers do. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/avx2_copy.h"
#include "common/timer.h"
#include "tucker_core_rows.h"
#include "tucker_internal.h"

void tk_tucker_spectral_options_init(tk_tucker_spectral_options *o)
{
    memset(o, 0, sizeof *o);
    o->subspace_iterations = 40;
    o->core_sweeps = 20;
    o->seed = 0;
    o->num_threads = 0;
}

/* Threads for work over nnz entries: one below SPECTRAL_PARALLEL_MIN, where a parallel
 * region's start-up and barriers cost more than the work (and much more on a loaded host:
 * 2.4 s against 0.2 s for 60,000 entries on two busy cores). */
#define SPECTRAL_PARALLEL_MIN 200000
/* Entries a block where work over entries is cut in fixed blocks (sums in block order). */
#define SPECTRAL_BLOCK 65536
static int thread_count(const tk_tucker_spectral_options *o, size_t nnz)
{
#ifdef _OPENMP
    if (nnz < SPECTRAL_PARALLEL_MIN) return 1;
    return o->num_threads > 0 ? o->num_threads : omp_get_max_threads();
#else
    (void)o;
    (void)nnz;
    return 1;
#endif
}

/* ---- phase times (TK_TUCKER_SPECTRAL_TIMES=1) ----------------------------------------------
 * A diagnostic: with TK_TUCKER_SPECTRAL_TIMES=1 in the environment, the start and the round print
 * each phase's wall seconds to stderr (benchmarks.md's per-phase figures), summed per calling
 * thread. */
enum { PH_SORT, PH_UNFOLD, PH_UNFOLD_ROWS, PH_PRODUCTS, PH_ORTHO, PH_RITZ, PH_GROUP, PH_CORES, PH_RESIDUAL,
       PH_COUNT };
static const char *const phase_names[PH_COUNT] = {
    "sorts", "unfolding build (after its sort)", "unfolding by rows", "subspace products X X^T V",
    "orthonormalize", "Ritz step", "core fit grouping (after its sort)", "core fit sweeps", "residuals"};
/* per calling thread: two host threads may each run a start (the library's concurrency rule);
 * the phases are summed at the caller's level, outside the parallel regions */
static _Thread_local double phase_seconds[PH_COUNT];
static double now_seconds(void) { return tk_now_ms() / 1e3; }
/* t0 <- now, after adding the time since t0 to phase ph */
static void phase_add(int ph, double *t0)
{
    const double t = now_seconds();
    phase_seconds[ph] += t - *t0;
    *t0 = t;
}
static void phases_report(const char *what, double total)
{
    const char *env = getenv("TK_TUCKER_SPECTRAL_TIMES");
    if (env && env[0] == '1') {
        fprintf(stderr, "tk_tucker %s: %.2f s\n", what, total);
        for (int i = 0; i < PH_COUNT; ++i) fprintf(stderr, "  %-36s %8.2f s\n", phase_names[i], phase_seconds[i]);
    }
    memset(phase_seconds, 0, sizeof phase_seconds);
}

/* ---- random numbers ------------------------------------------------------------------- */

/* A standard normal from a 64-bit key (Box-Muller on two hashes): the start's random matrices
 * are then a function of (seed, stream, element), whatever the thread count. */
static double gauss(uint64_t seed, uint64_t stream, uint64_t element)
{
    const uint64_t h1 = tk_tucker_mix(tk_tucker_mix(seed ^ 0x5EC7A15EC7A1ull) + stream * 0x100000001B3ull + element);
    const uint64_t h2 = tk_tucker_mix(h1);
    const double u1 = ((double)(h1 >> 11) + 1.0) * (1.0 / 9007199254740992.0); /* (0, 1]: log is finite */
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * tk_tucker_unit(h2));
}

/* ---- small dense linear algebra (double, row-major) --------------------------------------
 * The library has no LAPACK dependency (LAPACKE is only the tests' oracle), and the matrices
 * here are tall I x J panels and J x J or JR x JR squares with J, R <= 64: these textbook
 * algorithms are enough and keep the library's link line as it was. */

/* Orthonormalize the columns 0..cols-1 of V by modified Gram-Schmidt, each column twice
 * ("twice is enough": orthogonal to round-off even when V is nearly rank deficient).  A column
 * that collapses (the product lost a direction: a mode with fewer rows of entries than J) is
 * replaced by a random one and orthonormalized in turn, so the basis always has full width.
 * Element i of column k is V[i * rs + k * cs]. */
static void gram_schmidt(double *V, size_t rows, int cols, size_t rs, size_t cs, uint64_t seed, uint64_t stream)
{
    for (int k = 0; k < cols; ++k) {
        double *vk = V + (size_t)k * cs;
        for (int attempt = 0;; ++attempt) {
            double before = 0;
            for (size_t i = 0; i < rows; ++i) before += vk[i * rs] * vk[i * rs];
            for (int pass = 0; pass < 2; ++pass)
                for (int l = 0; l < k; ++l) {
                    const double *vl = V + (size_t)l * cs;
                    double d = 0;
                    for (size_t i = 0; i < rows; ++i) d += vl[i * rs] * vk[i * rs];
                    for (size_t i = 0; i < rows; ++i) vk[i * rs] -= d * vl[i * rs];
                }
            double norm = 0;
            for (size_t i = 0; i < rows; ++i) norm += vk[i * rs] * vk[i * rs];
            if (norm > 1e-20 * before && norm > 1e-300) {
                const double s = 1.0 / sqrt(norm);
                for (size_t i = 0; i < rows; ++i) vk[i * rs] *= s;
                break;
            }
            if (attempt == 8) { /* rows < cols: no further direction exists; the caller keeps cols <= rows */
                for (size_t i = 0; i < rows; ++i) vk[i * rs] = 0;
                break;
            }
            for (size_t i = 0; i < rows; ++i)
                vk[i * rs] = gauss(seed, stream, ((uint64_t)attempt << 48) ^ ((uint64_t)k << 40) ^ (uint64_t)i);
        }
    }
}

/* gram_schmidt on the columns 0..cols-1 of V (rows x ld, row-major), run on a column-major copy:
 * each of its 4k + 3 passes for column k reads one column, where in place each read every
 * column's cache lines (J = 8: one 64-byte line a row for 8 bytes; at Netflix's 480,189 users the
 * start's orthonormalisations took 8 s on one thread).  The same operations in the same order on
 * the same values, so the same bits; in place where the copy's memory is not to be had. */
static void orthonormalize(double *V, size_t rows, int cols, int ld, uint64_t seed, uint64_t stream)
{
    double *T = cols > 1 ? malloc(rows * (size_t)cols * sizeof *T) : NULL;
    if (!T) {
        gram_schmidt(V, rows, cols, (size_t)ld, 1, seed, stream);
        return;
    }
    for (size_t i = 0; i < rows; ++i)
        for (int k = 0; k < cols; ++k) T[(size_t)k * rows + i] = V[i * ld + k];
    gram_schmidt(T, rows, cols, 1, rows, seed, stream);
    for (size_t i = 0; i < rows; ++i)
        for (int k = 0; k < cols; ++k) V[i * ld + k] = T[(size_t)k * rows + i];
    free(T);
}

/* Eigenvalues (w, descending) and eigenvectors (the columns of Q) of the symmetric n x n H
 * (destroyed) by cyclic Jacobi rotations: accurate to round-off for the J x J Ritz matrices. */
static void symmetric_eigen(double *H, int n, double *w, double *Q)
{
    for (int i = 0; i < n * n; ++i) Q[i] = 0;
    for (int i = 0; i < n; ++i) Q[i * n + i] = 1;
    for (int sweep = 0; sweep < 100; ++sweep) {
        double off = 0, total = 0;
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) {
                total += H[i * n + j] * H[i * n + j];
                if (i != j) off += H[i * n + j] * H[i * n + j];
            }
        if (!(off > 1e-30 * total)) break;
        for (int p = 0; p < n - 1; ++p)
            for (int q = p + 1; q < n; ++q) {
                const double hpq = H[p * n + q];
                if (hpq == 0) continue;
                /* the rotation that zeroes H[p][q] (the smaller angle, for stability) */
                const double theta = (H[q * n + q] - H[p * n + p]) / (2 * hpq);
                const double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1));
                const double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < n; ++k) { /* H <- H G (columns p, q) */
                    const double hkp = H[k * n + p], hkq = H[k * n + q];
                    H[k * n + p] = c * hkp - s * hkq;
                    H[k * n + q] = s * hkp + c * hkq;
                }
                for (int k = 0; k < n; ++k) { /* H <- G^T H (rows p, q) */
                    const double hpk = H[p * n + k], hqk = H[q * n + k];
                    H[p * n + k] = c * hpk - s * hqk;
                    H[q * n + k] = s * hpk + c * hqk;
                }
                for (int k = 0; k < n; ++k) {
                    const double qkp = Q[k * n + p], qkq = Q[k * n + q];
                    Q[k * n + p] = c * qkp - s * qkq;
                    Q[k * n + q] = s * qkp + c * qkq;
                }
            }
    }
    for (int i = 0; i < n; ++i) w[i] = H[i * n + i];
    /* sort descending (selection sort on n <= 64), the columns of Q with them */
    for (int i = 0; i < n; ++i) {
        int best = i;
        for (int j = i + 1; j < n; ++j)
            if (w[j] > w[best]) best = j;
        if (best == i) continue;
        const double tw = w[i];
        w[i] = w[best];
        w[best] = tw;
        for (int k = 0; k < n; ++k) {
            const double tq = Q[k * n + i];
            Q[k * n + i] = Q[k * n + best];
            Q[k * n + best] = tq;
        }
    }
}

/* ---- the entries grouped ---------------------------------------------------------------- */

/* ---- stable counting sorts on threads ---------------------------------------------------
 * A stable sort has one result, so splitting its work among threads changes nothing in it: the
 * input is cut into `chunks` contiguous pieces, each counts its keys (hist: chunk c's counts at
 * c * buckets), the counts become offsets in bucket-major, chunk-minor order, and each piece
 * scatters its entries in its own order.  At Netflix's 98M entries the serial sorts and
 * unfolding builds were most of the start that did not scale with threads. */

/* hist (chunks x buckets counts) <- each chunk's first position of each bucket; bucket_start
 * (buckets + 1, or NULL) <- each bucket's first position.  The prefix runs over blocks of
 * buckets on the threads: the sums of counts are exact, so any split gives the same offsets. */
static void counts_to_offsets(size_t *hist, int chunks, size_t buckets, int threads, size_t *bucket_start)
{
    enum { SPAN = 4096 };
    const size_t spans = (buckets + SPAN - 1) / SPAN;
    size_t *span_total = malloc((spans ? spans : 1) * sizeof *span_total), one_total;
    size_t *total = span_total ? span_total : &one_total; /* no scratch: one span of everything */
    const size_t span = span_total ? SPAN : buckets, nspans = span_total ? spans : 1;
    (void)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long sp = 0; sp < (long)nspans; ++sp) {
        size_t sum = 0;
        const size_t end = ((size_t)sp + 1) * span < buckets ? ((size_t)sp + 1) * span : buckets;
        for (size_t b = (size_t)sp * span; b < end; ++b)
            for (int c = 0; c < chunks; ++c) sum += hist[(size_t)c * buckets + b];
        total[sp] = sum;
    }
    size_t run = 0;
    for (size_t sp = 0; sp < nspans; ++sp) {
        const size_t c = total[sp];
        total[sp] = run;
        run += c;
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long sp = 0; sp < (long)nspans; ++sp) {
        size_t sum = total[sp];
        const size_t end = ((size_t)sp + 1) * span < buckets ? ((size_t)sp + 1) * span : buckets;
        for (size_t b = (size_t)sp * span; b < end; ++b) {
            if (bucket_start) bucket_start[b] = sum;
            for (int c = 0; c < chunks; ++c) {
                const size_t k = hist[(size_t)c * buckets + b];
                hist[(size_t)c * buckets + b] = sum;
                sum += k;
            }
        }
    }
    if (bucket_start) bucket_start[buckets] = run;
    free(span_total);
}

/* Pieces for `threads` threads over n items: one below SPECTRAL_PARALLEL_MIN items. */
static int chunk_count(size_t n, int threads)
{
    return n < SPECTRAL_PARALLEL_MIN || threads < 1 ? 1 : threads;
}

/* perm <- the entries in stable order of the index columns keys[0..nkeys-1], the first the most
 * significant (LSD counting sorts, one a key: O(nnz + dims) each); first_start (dims[keys[0]] +
 * 1, or NULL) <- where each value of the first key starts. */
static tk_status sort_entries(const tk_tucker_coo *t, const uint32_t *dims, const int *keys, int nkeys, int threads,
                              size_t *perm, size_t *first_start)
{
    double t0 = now_seconds();
    uint32_t max_dim = 0;
    for (int k = 0; k < nkeys; ++k) max_dim = dims[keys[k]] > max_dim ? dims[keys[k]] : max_dim;
    const size_t nnz = t->nnz;
    const int chunks = chunk_count(nnz, threads);
    size_t *hist = malloc((size_t)chunks * ((size_t)max_dim + 1) * sizeof *hist);
    size_t *next = nkeys > 1 ? malloc(nnz * sizeof *next) : NULL;
    if (!hist || (nkeys > 1 && !next)) {
        free(hist);
        free(next);
        return tk_set_error(TK_ERR_MEMORY, "spectral start: out of memory sorting %zu entries", nnz);
    }
    const int N = t->order;
    const size_t *src = NULL; /* the first pass reads the entries in their order */
    for (int k = nkeys - 1; k >= 0; --k) {
        /* the passes alternate between next and perm, the last one writing perm */
        size_t *dst = (k % 2 == 0) ? perm : next;
        const int mode = keys[k];
        const size_t D = dims[mode];
        (void)threads;
#pragma omp parallel for schedule(static, 1) num_threads(threads)
        for (int c = 0; c < chunks; ++c) {
            size_t *h = hist + (size_t)c * D;
            const size_t lo = nnz * (size_t)c / (size_t)chunks, hi = nnz * ((size_t)c + 1) / (size_t)chunks;
            memset(h, 0, D * sizeof *h);
            if (src)
                for (size_t e = lo; e < hi; ++e) ++h[t->idx[src[e] * N + mode]];
            else
                for (size_t e = lo; e < hi; ++e) ++h[t->idx[e * N + mode]];
        }
        counts_to_offsets(hist, chunks, D, threads, k == 0 ? first_start : NULL);
#pragma omp parallel for schedule(static, 1) num_threads(threads)
        for (int c = 0; c < chunks; ++c) {
            size_t *h = hist + (size_t)c * D;
            const size_t lo = nnz * (size_t)c / (size_t)chunks, hi = nnz * ((size_t)c + 1) / (size_t)chunks;
            if (src)
                for (size_t e = lo; e < hi; ++e) dst[h[t->idx[src[e] * N + mode]]++] = src[e];
            else
                for (size_t e = lo; e < hi; ++e) dst[h[t->idx[e * N + mode]]++] = e;
        }
        src = dst;
    }
    free(hist);
    free(next);
    phase_add(PH_SORT, &t0);
    return TK_OK;
}

/* X(n) restricted to its observed columns (the distinct tuples of the other modes' indices),
 * duplicates summed, as the prototype's scipy matrix holds it: by columns (for X^T V) and by
 * rows (for X W), so that each product runs over its own outputs without races.
 *
 * W = X^T V is kept only for the columns of two or more entries (multi_cols): a column of one
 * entry x in row i has W = 0 + x V(i, :), which X W's row i forms from its own V row rather than
 * reading it back from a random place of a cols x J array (most columns of a sparse tensor's
 * unfolding hold one entry: Netflix's mode 3 nearly all).  The same operations on the same
 * values: the products are unchanged to the bit. */
#define SPECTRAL_SINGLE ((size_t)-1)
typedef struct unfolding {
    uint32_t rows;
    size_t cols, nnz;
    size_t *col_ptr, *col_of; /* by columns: cols + 1 offsets; by rows: the entry's column's row of
                                 W (its rank among multi_cols), SPECTRAL_SINGLE for a column of one */
    size_t multi, *multi_cols; /* the columns of two or more entries, ascending */
    uint32_t *row_of;         /* by columns: each entry's row */
    double *col_val;
    size_t *row_ptr;          /* by rows: rows + 1 offsets */
    double *row_val;
    double *diag;             /* rows: the diagonal of X X^T, each row's sum of squares */
} unfolding;

static void unfolding_free(unfolding *u)
{
    free(u->col_ptr);
    free(u->col_of);
    free(u->multi_cols);
    free(u->row_of);
    free(u->col_val);
    free(u->row_ptr);
    free(u->row_val);
    free(u->diag);
    memset(u, 0, sizeof *u);
}

static int same_others(const tk_tucker_coo *t, const int *others, size_t e, size_t f)
{
    for (int k = 0; k < t->order - 1; ++k)
        if (t->idx[e * t->order + others[k]] != t->idx[f * t->order + others[k]]) return 0;
    return 1;
}

/* By rows, from the by-columns arrays (a stable counting sort on the row, the pieces ranges of
 * columns of about equal entries). */
static tk_status unfolding_rows(unfolding *u, int threads)
{
    double t0 = now_seconds();
    const int chunks = chunk_count(u->nnz, threads);
    const size_t D = u->rows;
    size_t *hist = malloc((size_t)chunks * (D ? D : 1) * sizeof *hist),
           *first_col = malloc(((size_t)chunks + 1) * sizeof *first_col);
    if (!hist || !first_col) {
        free(hist);
        free(first_col);
        return tk_set_error(TK_ERR_MEMORY, "spectral start: out of memory for an unfolding's rows");
    }
    for (int c = 0; c <= chunks; ++c) { /* the first column whose entries start at or after c nnz / chunks */
        const size_t target = u->nnz * (size_t)c / (size_t)chunks;
        size_t lo = 0, hi = u->cols;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (u->col_ptr[mid] < target) lo = mid + 1;
            else hi = mid;
        }
        first_col[c] = c == chunks ? u->cols : lo;
    }
    (void)threads;
    size_t *multi_before = calloc((size_t)chunks + 1, sizeof *multi_before); /* multi columns before a piece */
    if (!multi_before) {
        free(hist);
        free(first_col);
        return tk_set_error(TK_ERR_MEMORY, "spectral start: out of memory for an unfolding's rows");
    }
#pragma omp parallel for schedule(static, 1) num_threads(threads)
    for (int c = 0; c < chunks; ++c) {
        size_t *h = hist + (size_t)c * D, multi = 0;
        memset(h, 0, D * sizeof *h);
        for (size_t p = u->col_ptr[first_col[c]]; p < u->col_ptr[first_col[c + 1]]; ++p) ++h[u->row_of[p]];
        for (size_t col = first_col[c]; col < first_col[c + 1]; ++col) multi += u->col_ptr[col + 1] - u->col_ptr[col] > 1;
        multi_before[c + 1] = multi;
    }
    for (int c = 0; c < chunks; ++c) multi_before[c + 1] += multi_before[c];
    u->multi = multi_before[chunks];
    u->multi_cols = malloc((u->multi ? u->multi : 1) * sizeof *u->multi_cols);
    if (!u->multi_cols) {
        free(hist);
        free(first_col);
        free(multi_before);
        return tk_set_error(TK_ERR_MEMORY, "spectral start: out of memory for an unfolding's rows");
    }
    counts_to_offsets(hist, chunks, D, threads, u->row_ptr);
#pragma omp parallel for schedule(static, 1) num_threads(threads)
    for (int c = 0; c < chunks; ++c) {
        size_t *h = hist + (size_t)c * D, k = multi_before[c];
        for (size_t col = first_col[c]; col < first_col[c + 1]; ++col) {
            const size_t wrow = u->col_ptr[col + 1] - u->col_ptr[col] > 1 ? k++ : SPECTRAL_SINGLE;
            if (wrow != SPECTRAL_SINGLE) u->multi_cols[wrow] = col;
            for (size_t p = u->col_ptr[col]; p < u->col_ptr[col + 1]; ++p) {
                const size_t q = h[u->row_of[p]]++;
                u->col_of[q] = wrow;
                u->row_val[q] = u->col_val[p];
            }
        }
    }
    free(hist);
    free(first_col);
    free(multi_before);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long i = 0; i < (long)u->rows; ++i) {
        double d = 0;
        for (size_t q = u->row_ptr[i]; q < u->row_ptr[i + 1]; ++q) d += u->row_val[q] * u->row_val[q];
        u->diag[i] = d;
    }
    phase_add(PH_UNFOLD_ROWS, &t0);
    return TK_OK;
}

/* The entry at sorted position s (perm) opens a new column of X(n) (bit 1), a new entry of it
 * (bit 2: a new column, or another row than s - 1's; otherwise a duplicate of s - 1). */
static unsigned char entry_flags(const tk_tucker_coo *t, const size_t *perm, const int *others, int n, size_t s)
{
    if (s == 0) return 3;
    if (!same_others(t, others, perm[s], perm[s - 1])) return 3;
    return t->idx[perm[s] * t->order + n] != t->idx[perm[s - 1] * t->order + n] ? 2 : 0;
}

/* values: one a t entry in place of t->val (the deflation's residual, in double), or NULL. */
static tk_status unfolding_build(const tk_tucker_coo *t, const double *values, const uint32_t *dims, int n,
                                 int threads, unfolding *u)
{
    memset(u, 0, sizeof *u);
    const int N = t->order;
    const size_t nnz = t->nnz;
    int keys[TK_TUCKER_MAX_ORDER];
    tk_tucker_other_modes(N, n, keys);
    keys[N - 1] = n; /* within a column by row, so that duplicates are adjacent */
    size_t *perm = malloc(nnz * sizeof *perm);
    const size_t blocks = (nnz + SPECTRAL_BLOCK - 1) / SPECTRAL_BLOCK;
    size_t *block_start = malloc(2 * (blocks + 1) * sizeof *block_start); /* entries, columns before block */
    unsigned char *flags = malloc(nnz ? nnz : 1);
    u->rows = dims[n];
    u->col_ptr = malloc((nnz + 1) * sizeof *u->col_ptr);
    u->col_of = malloc(nnz * sizeof *u->col_of);
    u->row_of = malloc(nnz * sizeof *u->row_of);
    u->col_val = malloc(nnz * sizeof *u->col_val);
    u->row_ptr = malloc(((size_t)dims[n] + 1) * sizeof *u->row_ptr);
    u->row_val = malloc(nnz * sizeof *u->row_val);
    u->diag = malloc((size_t)dims[n] * sizeof *u->diag);
    tk_status st = TK_OK;
    if (!perm || !block_start || !flags || !u->col_ptr || !u->col_of || !u->row_of || !u->col_val || !u->row_ptr ||
        !u->row_val || !u->diag)
        st = tk_set_error(TK_ERR_MEMORY, "spectral start: out of memory for mode %d's unfolding (%zu entries)", n + 1,
                          nnz);
    if (st == TK_OK) st = sort_entries(t, dims, keys, N, threads, perm, NULL);
    if (st != TK_OK) {
        free(perm);
        free(block_start);
        free(flags);
        unfolding_free(u);
        return st;
    }
    double t0 = now_seconds();
    /* Each block of sorted positions counts its new entries and columns; a block's entries then
     * start after the blocks before it.  A run of duplicates is summed by the block of its first
     * entry, in sorted order (the stable sort keeps the data's order), past its block's end if
     * it runs on: the sums of the serial loop, to the bit.  The first pass gathers each sorted
     * entry's row and value (into col_of and row_val, unfolding_rows' arrays, not yet in use),
     * so that the second reads them in order rather than through perm again. */
    size_t *sorted_row = u->col_of;
    double *sorted_val = u->row_val;
    (void)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long b = 0; b < (long)blocks; ++b) {
        const size_t lo = (size_t)b * SPECTRAL_BLOCK, hi = lo + SPECTRAL_BLOCK < nnz ? lo + SPECTRAL_BLOCK : nnz;
        size_t entries = 0, cols = 0;
        for (size_t s = lo; s < hi; ++s) {
            const unsigned char f = entry_flags(t, perm, keys, n, s);
            flags[s] = f;
            sorted_row[s] = t->idx[perm[s] * N + n];
            sorted_val[s] = values ? values[perm[s]] : (double)t->val[perm[s]];
            entries += f >> 1;
            cols += f & 1;
        }
        block_start[2 * b + 2] = entries;
        block_start[2 * b + 3] = cols;
    }
    block_start[0] = block_start[1] = 0;
    for (size_t b = 0; b < blocks; ++b) {
        block_start[2 * b + 2] += block_start[2 * b];
        block_start[2 * b + 3] += block_start[2 * b + 1];
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long b = 0; b < (long)blocks; ++b) {
        const size_t lo = (size_t)b * SPECTRAL_BLOCK, hi = lo + SPECTRAL_BLOCK < nnz ? lo + SPECTRAL_BLOCK : nnz;
        size_t p = block_start[2 * b], col = block_start[2 * b + 1];
        for (size_t s = lo; s < hi; ++s) {
            const unsigned char f = flags[s];
            if (!(f & 2)) continue; /* a duplicate: summed with its run's first entry */
            if (f & 1) u->col_ptr[col++] = p;
            double x = sorted_val[s];
            for (size_t d = s + 1; d < nnz && !(flags[d] & 2); ++d) x += sorted_val[d];
            u->row_of[p] = (uint32_t)sorted_row[s];
            u->col_val[p++] = x;
        }
    }
    u->cols = block_start[2 * blocks + 1];
    u->nnz = block_start[2 * blocks];
    u->col_ptr[u->cols] = u->nnz;
    free(perm);
    free(block_start);
    free(flags);
    phase_add(PH_UNFOLD, &t0);
    if ((st = unfolding_rows(u, threads)) != TK_OK) unfolding_free(u);
    return st;
}

/* Rows a dynamic chunk over a mode's rows: few where the rows are few.  Their entries follow a
 * power law (Netflix's 2182 days: chunks of 256 would give 9 chunks to 16 threads, one of them
 * most of the entries); each row's sums are its own, so the chunk changes no result. */
static int row_chunk(size_t rows, int threads, int most)
{
    const size_t c = rows / ((size_t)(threads > 0 ? threads : 1) * 64);
    return c < 1 ? 1 : c > (size_t)most ? most : (int)c;
}

/* Entries ahead whose W row X W prefetches: its reads of W are at random places of an array far
 * larger than the caches, one a entry; asking for them early overlaps the misses. */
#define SPECTRAL_PREFETCH 16

/* The largest rank whose core sums run with the rank a constant (core_row_fixed): R of 4 and 8. */
#define SPECTRAL_FIXED_MAX 8

/* Column k of W = X^T V (k of the columns of two or more entries), its J sums in entry order,
 * held in locals: W and V are both double *, so sums kept in W were stored and reloaded at every
 * entry.  Inlined with J a constant where the caller knows it (4, 8), the sums then stay in
 * registers.  The same operations in the same order as in W, so the same bits. */
static inline __attribute__((always_inline)) void gram_column(const unfolding *u, const double *V, int J, size_t k,
                                                              double *W)
{
    const size_t c = u->multi_cols[k];
    double w[TK_TUCKER_MAX_RANK];
    for (int j = 0; j < J; ++j) w[j] = 0;
    for (size_t p = u->col_ptr[c]; p < u->col_ptr[c + 1]; ++p) {
        if (p + SPECTRAL_PREFETCH < u->nnz) __builtin_prefetch(V + (size_t)u->row_of[p + SPECTRAL_PREFETCH] * J);
        const double x = u->col_val[p];
        const double *v = V + (size_t)u->row_of[p] * J;
        for (int j = 0; j < J; ++j) w[j] += x * v[j];
    }
    for (int j = 0; j < J; ++j) W[k * J + j] = w[j];
}

/* Row i of Y = X W less diag(X X^T) V: as gram_column, its J sums in registers. */
static inline __attribute__((always_inline)) void gram_row(const unfolding *u, const double *V, int J, size_t i,
                                                           const double *W, double *Y)
{
    const double *v = V + i * J;
    double y[TK_TUCKER_MAX_RANK];
    for (int j = 0; j < J; ++j) y[j] = -u->diag[i] * v[j];
    const size_t end = u->row_ptr[i + 1];
    for (size_t q = u->row_ptr[i]; q < end; ++q) {
        if (q + SPECTRAL_PREFETCH < u->nnz && u->col_of[q + SPECTRAL_PREFETCH] != SPECTRAL_SINGLE)
            __builtin_prefetch(W + u->col_of[q + SPECTRAL_PREFETCH] * J);
        const double x = u->row_val[q];
        if (u->col_of[q] == SPECTRAL_SINGLE) { /* W's row, formed as the column pass would */
            for (int j = 0; j < J; ++j) {
                double w = 0;
                w += x * v[j];
                y[j] += x * w;
            }
            continue;
        }
        const double *w = W + u->col_of[q] * J;
        for (int j = 0; j < J; ++j) y[j] += x * w[j];
    }
    for (int j = 0; j < J; ++j) Y[i * J + j] = y[j];
}

/* Y = X X^T V - diag(X X^T) V (V, Y: rows x J): W = X^T V by columns (those of two or more
 * entries), then X W by rows.  J = 4 and 8 (the ranks the time to accuracy is reached at) run
 * the loops with J a constant; the rest with J as given. */
static void gram_product(const unfolding *u, const double *V, int J, double *W, double *Y, int threads)
{
    (void)threads;
    const int chunk = row_chunk(u->rows, threads, 256);
    /* dynamic: the columns' entries too follow the other modes' popularity */
#pragma omp parallel for schedule(dynamic, 4096) num_threads(threads)
    for (long k = 0; k < (long)u->multi; ++k) {
        if (J == 4) gram_column(u, V, 4, (size_t)k, W);
        else if (J == 8) gram_column(u, V, 8, (size_t)k, W);
        else gram_column(u, V, J, (size_t)k, W);
    }
#pragma omp parallel for schedule(dynamic, chunk) num_threads(threads)
    for (long i = 0; i < (long)u->rows; ++i) {
        if (J == 4) gram_row(u, V, 4, (size_t)i, W, Y);
        else if (J == 8) gram_row(u, V, 8, (size_t)i, W, Y);
        else gram_row(u, V, J, (size_t)i, W, Y);
    }
}

/* ---- the spectral vectors --------------------------------------------------------------- */

/* Subspace iteration on M = X X^T - diag, then the Ritz step: V <- V Q, Q the eigenvectors of
 * V^T M V, by descending eigenvalue (the prototype's spectral_mode).  Like the prototype's, the
 * iteration converges to the J eigenvalues of largest magnitude: M has negative eigenvalues
 * (its trace is 0), and one of the J can be one of them (benchmarks.md: mode 1's 608, 455,
 * 247, -163). */
static tk_status spectral_iterate(const unfolding *u, int J, const tk_tucker_spectral_options *o, int n, double *V,
                                  double *eigenvalues)
{
    const int threads = thread_count(o, u->nnz);
    const size_t rows = u->rows;
    double *W = malloc((u->multi ? u->multi : 1) * (size_t)J * sizeof *W), *Y = malloc(rows * (size_t)J * sizeof *Y);
    if (!W || !Y) {
        free(W);
        free(Y);
        return tk_set_error(TK_ERR_MEMORY, "spectral start: out of memory for mode %d's products", n + 1);
    }
    const uint64_t stream = 2 * (uint64_t)n; /* mode n's random start; 2n + 1 its fresh columns */
    for (size_t i = 0; i < rows; ++i)
        for (int j = 0; j < J; ++j) V[i * J + j] = gauss(o->seed, stream, i * (uint64_t)J + (uint64_t)j);
    double t0 = now_seconds();
    orthonormalize(V, rows, J, J, o->seed, stream + 1);
    phase_add(PH_ORTHO, &t0);
    for (int it = 0; it < o->subspace_iterations; ++it) {
        gram_product(u, V, J, W, Y, threads);
        phase_add(PH_PRODUCTS, &t0);
        memcpy(V, Y, rows * (size_t)J * sizeof *V);
        orthonormalize(V, rows, J, J, o->seed, stream + 1);
        phase_add(PH_ORTHO, &t0);
    }
    gram_product(u, V, J, W, Y, threads);
    phase_add(PH_PRODUCTS, &t0);
    double H[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK], Q[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK],
        w[TK_TUCKER_MAX_RANK], row[TK_TUCKER_MAX_RANK];
    for (int a = 0; a < J; ++a)
        for (int b = 0; b < J; ++b) {
            double s = 0;
            for (size_t i = 0; i < rows; ++i) s += V[i * J + a] * Y[i * J + b];
            H[a * J + b] = s;
        }
    for (int a = 0; a < J; ++a) /* (H + H^T) / 2: round-off leaves V^T M V a little asymmetric */
        for (int b = a + 1; b < J; ++b) H[a * J + b] = H[b * J + a] = 0.5 * (H[a * J + b] + H[b * J + a]);
    symmetric_eigen(H, J, w, Q);
    for (size_t i = 0; i < rows; ++i) {
        for (int b = 0; b < J; ++b) {
            double s = 0;
            for (int a = 0; a < J; ++a) s += V[i * J + a] * Q[a * J + b];
            row[b] = s;
        }
        memcpy(V + i * J, row, (size_t)J * sizeof *row);
    }
    if (eigenvalues) memcpy(eigenvalues, w, (size_t)J * sizeof *w);
    phase_add(PH_RITZ, &t0);
    free(W);
    free(Y);
    return TK_OK;
}

static tk_status check_options(const tk_tucker_spectral_options *o, const tk_tucker_coo *t)
{
    if (!t || t->nnz == 0) return tk_set_error(TK_ERR_ARGUMENT, "spectral start: no training entries");
    if (!o || o->subspace_iterations < 0 || o->core_sweeps < 0 || o->num_threads < 0)
        return tk_set_error(TK_ERR_ARGUMENT, "spectral start: subspace_iterations, core_sweeps and num_threads must be "
                                             ">= 0 (tk_tucker_spectral_options_init gives the defaults)");
    return TK_OK;
}

tk_status tk_tucker_spectral_vectors(const tk_tucker_coo *t, const uint32_t *dims, int mode, int J,
                                     const tk_tucker_spectral_options *o, double *V, double *eigenvalues)
{
    tk_status st = check_options(o, t);
    if (st != TK_OK) return st;
    if (mode < 0 || mode >= t->order || J < 1 || J > TK_TUCKER_MAX_RANK || (uint32_t)J > dims[mode])
        return tk_set_error(TK_ERR_ARGUMENT, "spectral vectors: mode %d of %d, J = %d (1..%d, at most the mode's size)",
                            mode + 1, t->order, J, TK_TUCKER_MAX_RANK);
    unfolding u;
    if ((st = unfolding_build(t, NULL, dims, mode, thread_count(o, t->nnz), &u)) != TK_OK) return st;
    st = spectral_iterate(&u, J, o, mode, V, eigenvalues);
    unfolding_free(&u);
    return st;
}

/* ---- the cores ---------------------------------------------------------------------------- */

/* The entries of t copied in order of mode n's index: rows_of_mode (tucker_core_rows.h). */
static tk_status rows_build(const tk_tucker_coo *t, const uint32_t *dims, int n, int threads, rows_of_mode *r)
{
    const int N = t->order, K = N - 1;
    const size_t nnz = t->nnz ? t->nnz : 1;
    size_t *order = malloc(nnz * sizeof *order);
    r->row_ptr = malloc(((size_t)dims[n] + 1) * sizeof *r->row_ptr);
    r->idx = malloc(nnz * (size_t)K * sizeof *r->idx);
    r->val = malloc(nnz * sizeof *r->val);
    tk_status st = order && r->row_ptr && r->idx && r->val
                       ? sort_entries(t, dims, &n, 1, threads, order, r->row_ptr)
                       : tk_set_error(TK_ERR_MEMORY, "spectral start: out of memory grouping entries");
    double t0 = now_seconds();
    if (st == TK_OK) {
        tk_tucker_other_modes(N, n, r->others);
        (void)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
        for (long p = 0; p < (long)t->nnz; ++p) {
            for (int k = 0; k < K; ++k) r->idx[(size_t)p * K + k] = t->idx[order[p] * N + r->others[k]];
            r->val[p] = t->val[order[p]];
        }
    }
    free(order);
    phase_add(PH_GROUP, &t0);
    return st;
}

static void rows_free(rows_of_mode *r)
{
    free(r->row_ptr);
    free(r->idx);
    free(r->val);
}

/* q_r = prod_{k != n} C(k)[i_k][r] for entry e of t (n = -1: over every mode). */
static void entry_q(const tk_tucker_coo *t, double *const *C, int n, int R, size_t e, double *q)
{
    for (int r = 0; r < R; ++r) q[r] = 1;
    for (int k = 0; k < t->order; ++k) {
        if (k == n) continue;
        const double *c = C[k] + (size_t)t->idx[e * t->order + k] * R;
        for (int r = 0; r < R; ++r) q[r] *= c[r];
    }
}

/* The same for entry p of a rows_of_mode copy. */
static void row_entry_q(const rows_of_mode *rm, int K, double *const *C, int R, size_t p, double *q)
{
    const uint32_t *ix = rm->idx + p * (size_t)K;
    const double *c = C[rm->others[0]] + (size_t)ix[0] * R;
    for (int r = 0; r < R; ++r) q[r] = c[r];
    for (int k = 1; k < K; ++k) {
        c = C[rm->others[k]] + (size_t)ix[k] * R;
        for (int r = 0; r < R; ++r) q[r] *= c[r];
    }
}

/* C = A B for one mode (rows x J times J x R). */
static void refresh_c(const double *A, const double *B, size_t rows, int J, int R, double *C)
{
    for (size_t i = 0; i < rows; ++i)
        for (int r = 0; r < R; ++r) {
            double s = 0;
            for (int j = 0; j < J; ++j) s += A[i * J + j] * B[j * R + r];
            C[i * R + r] = s;
        }
}

/* sum over the entries of x^2 and of the model's prediction^2, in blocks summed in order (the
 * same result on any thread count). */
static void prediction_norms(const tk_tucker_coo *t, double *const *C, int R, int threads, double *data2,
                             double *model2)
{
    const size_t blocks = (t->nnz + SPECTRAL_BLOCK - 1) / SPECTRAL_BLOCK;
    double *part = calloc(2 * (blocks ? blocks : 1), sizeof *part);
    (void)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long b = 0; b < (long)blocks; ++b) {
        double q[TK_TUCKER_MAX_RANK], sx = 0, sp = 0;
        const size_t end = ((size_t)b + 1) * SPECTRAL_BLOCK < t->nnz ? ((size_t)b + 1) * SPECTRAL_BLOCK : t->nnz;
        for (size_t e = (size_t)b * SPECTRAL_BLOCK; e < end; ++e) {
            entry_q(t, C, -1, R, e, q); /* n = -1: the product over every mode */
            double p = 0;
            for (int r = 0; r < R; ++r) p += q[r];
            sx += (double)t->val[e] * t->val[e];
            sp += p * p;
        }
        part[2 * b] = sx;
        part[2 * b + 1] = sp;
    }
    *data2 = *model2 = 0;
    for (size_t b = 0; b < blocks; ++b) *data2 += part[2 * b], *model2 += part[2 * b + 1];
    free(part);
}

/* Scratch of one core solve: JR x JR normal equations, and a block of rows' R x R sums. */
typedef struct core_work {
    double *G, *h, *L, *x, *S, *T;
    uint32_t row_block; /* rows a block: S and T hold one block's */
} core_work;
/* Rows a block of the core fit: as many as 4M doubles of S hold, at least 1024 (R = 64).  G sums
 * the rows in ascending order whatever the block, so the size sets only how many parallel
 * regions a solve opens (Netflix's 480,189 users: 469 blocks of 1024, two regions each, on each
 * of 20 sweeps; 2 of 262,144 at R = 4), not a bit of the result. */
static uint32_t core_row_block(int R)
{
    const size_t rows = ((size_t)4 << 20) / ((size_t)R * R);
    return rows > 1024 ? (uint32_t)rows : 1024;
}

/* Row i's S_i = sum q q^T (its upper triangle; the rest 0) and t_i = sum x q into s and t, the
 * sums in entry order.  Inlined with R a constant and s, t locals (core_row_fixed), the
 * R(R+1)/2 + R sums and q stay in registers; with S and T themselves (any R), they are stored
 * and reloaded at every entry, since S and the C rows are both double *.  The same operations
 * in the same order either way, so the same bits. */
static inline __attribute__((always_inline)) void core_row_sums(const rows_of_mode *rm, int K, double *const *C,
                                                                int R, size_t nnz, size_t i, double *s, double *t)
{
    double q[TK_TUCKER_MAX_RANK];
    for (int a = 0; a < R * R; ++a) s[a] = 0;
    for (int r = 0; r < R; ++r) t[r] = 0;
    for (size_t p = rm->row_ptr[i]; p < rm->row_ptr[i + 1]; ++p) {
        tk_tucker_core_prefetch(rm, K, C, R, p, nnz);
        row_entry_q(rm, K, C, R, p, q);
        const double x = rm->val[p];
        for (int r = 0; r < R; ++r) {
            for (int u = r; u < R; ++u) s[r * R + u] += q[r] * q[u];
            t[r] += x * q[r];
        }
    }
}

/* core_row_sums with R = 4 or 8 a constant and the sums in locals, copied to S and T. */
static inline __attribute__((always_inline)) void core_row_fixed(const rows_of_mode *rm, int K, double *const *C,
                                                                 int R, size_t nnz, size_t i, double *S, double *T)
{
    double s[SPECTRAL_FIXED_MAX * SPECTRAL_FIXED_MAX], t[SPECTRAL_FIXED_MAX];
    core_row_sums(rm, K, C, R, nnz, i, s, t);
    for (int a = 0; a < R * R; ++a) S[a] = s[a];
    for (int r = 0; r < R; ++r) T[r] = t[r];
}

/* Whether the row sums take their AVX2 copy (tucker_core_rows_avx2.c, the same bits): R of 4 or
 * 8, a build and a CPU that have it, and TK_TUCKER_NO_AVX2 unset or 0 (the portable text, for
 * A/B runs on one binary). */
static int core_rows_avx2(int R)
{
#ifdef TK_TUCKER_AVX2_TU
    return (R == 4 || R == 8) && tk_avx2_copy_enabled("TK_TUCKER_NO_AVX2");
#else
    (void)R;
    return 0;
#endif
}

/* G += sum_i (a_i a_i^T) kron S_i and h += sum_i a_i kron t_i over rows lo..hi-1, with S_i =
 * sum q q^T and t_i = sum x q over row i's entries: the normal equations of B(n) (unknowns
 * (j, r) at j R + r), in O(entries R^2 + rows J^2 R^2), not O(entries J^2 R^2). */
static void core_rows(const tk_tucker_coo *t, const rows_of_mode *rm, double *const *C, const double *A, int J,
                      int R, uint32_t lo, uint32_t hi, int threads, core_work *w)
{
    const int P = J * R, K = t->order - 1;
    const size_t nnz = t->nnz;
    const int chunk = row_chunk(hi - lo, threads, 16), avx2 = core_rows_avx2(R);
    (void)threads;
    (void)avx2;
#pragma omp parallel for schedule(dynamic, chunk) num_threads(threads)
    for (long i = lo; i < (long)hi; ++i) {
        double *S = w->S + (size_t)(i - lo) * R * R, *T = w->T + (size_t)(i - lo) * R;
#ifdef TK_TUCKER_AVX2_TU
        if (avx2) tk_tucker_core_row_sums_avx2(rm, K, C, R, nnz, (size_t)i, S, T);
        else
#endif
        if (R == 4) core_row_fixed(rm, K, C, 4, nnz, (size_t)i, S, T);
        else if (R == 8) core_row_fixed(rm, K, C, 8, nnz, (size_t)i, S, T);
        else core_row_sums(rm, K, C, R, nnz, (size_t)i, S, T);
    }
    /* block (j, k), j <= k, of G: one thread each, the rows in order */
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int jk = 0; jk < J * J; ++jk) {
        const int j = jk / J, k = jk % J;
        if (k < j) continue;
        for (uint32_t i = lo; i < hi; ++i) {
            const double ajk = A[(size_t)i * J + j] * A[(size_t)i * J + k];
            if (ajk == 0) continue;
            const double *S = w->S + (size_t)(i - lo) * R * R;
            for (int r = 0; r < R; ++r)
                for (int s = 0; s < R; ++s) /* S's upper triangle holds S[min][max] */
                    w->G[(size_t)(j * R + r) * P + (k * R + s)] += ajk * S[r <= s ? r * R + s : s * R + r];
        }
        if (j == k)
            for (uint32_t i = lo; i < hi; ++i) {
                const double a = A[(size_t)i * J + j];
                const double *T = w->T + (size_t)(i - lo) * R;
                for (int r = 0; r < R; ++r) w->h[j * R + r] += a * T[r];
            }
    }
}

/* B(n) <- the least-squares core with every A and the other C fixed (the prototype's inner
 * step), with its whisker of ridge (1e-6 of G's mean diagonal: G may be singular, e.g. where a
 * mode's A has zero columns).  A failed solve leaves B(n). */
static void core_solve(const tk_tucker_coo *t, const rows_of_mode *rm, double *const *C, const double *A,
                       uint32_t rows, int J, int R, double ridge_fraction, int threads, core_work *w, double *B)
{
    const int P = J * R;
    memset(w->G, 0, (size_t)P * P * sizeof *w->G);
    memset(w->h, 0, (size_t)P * sizeof *w->h);
    for (uint32_t lo = 0; lo < rows; lo += w->row_block) {
        const uint32_t hi = rows - lo > w->row_block ? lo + w->row_block : rows;
        core_rows(t, rm, C, A, J, R, lo, hi, threads, w);
    }
    double trace = 0;
    for (int p = 0; p < P; ++p) trace += w->G[(size_t)p * P + p];
    if (!(trace > 0)) return;
    if (tk_tucker_cholesky_solve(w->G, ridge_fraction * trace / P, w->h, P, w->L, w->x))
        memcpy(B, w->x, (size_t)P * sizeof *B);
}

tk_status tk_tucker_spectral_fit_cores(const tk_tucker_coo *t, int order, const uint32_t *dims, int J, int R,
                                       const double *const *A, const tk_tucker_spectral_options *o,
                                       double ridge_fraction, int start_given, double *const *B)
{
    tk_status st = check_options(o, t);
    if (st != TK_OK) return st;
    if (order != t->order || J < 1 || J > TK_TUCKER_MAX_RANK || R < 1 || R > TK_TUCKER_MAX_RANK)
        return tk_set_error(TK_ERR_ARGUMENT, "spectral cores: order %d (the data's %d), J = %d, R = %d (1..%d)", order,
                            t->order, J, R, TK_TUCKER_MAX_RANK);
    const int threads = thread_count(o, t->nnz), P = J * R;
    rows_of_mode rm[TK_TUCKER_MAX_ORDER];
    memset(rm, 0, sizeof rm);
    double *C[TK_TUCKER_MAX_ORDER] = {0};
    core_work w = {0};
    w.G = malloc((size_t)P * P * sizeof *w.G);
    w.L = malloc((size_t)P * P * sizeof *w.L);
    w.h = malloc((size_t)P * sizeof *w.h);
    w.x = malloc((size_t)P * sizeof *w.x);
    uint32_t max_rows = 1;
    for (int n = 0; n < order; ++n) max_rows = dims[n] > max_rows ? dims[n] : max_rows;
    w.row_block = core_row_block(R) < max_rows ? core_row_block(R) : max_rows;
    w.S = malloc((size_t)w.row_block * R * R * sizeof *w.S);
    w.T = malloc((size_t)w.row_block * R * sizeof *w.T);
    st = w.G && w.L && w.h && w.x && w.S && w.T ? TK_OK
                                                : tk_set_error(TK_ERR_MEMORY, "spectral cores: out of memory (J R = %d)", P);
    for (int n = 0; n < order && st == TK_OK; ++n) {
        if (!(C[n] = malloc((size_t)dims[n] * R * sizeof *C[n])))
            st = tk_set_error(TK_ERR_MEMORY, "spectral cores: out of memory for C(%d)", n + 1);
        else
            st = rows_build(t, dims, n, threads, &rm[n]);
    }
    if (st == TK_OK) {
        /* a random start (the prototype's), scaled so that its predictions have the data's RMS */
        for (int n = 0; n < order; ++n) {
            for (int p = 0; p < P && !start_given; ++p) B[n][p] = gauss(o->seed, 1000 + (uint64_t)n, (uint64_t)p);
            refresh_c(A[n], B[n], dims[n], J, R, C[n]);
        }
        if (!start_given) {
            double data2, model2;
            prediction_norms(t, C, R, threads, &data2, &model2);
            const double scale = pow(sqrt(data2) / fmax(sqrt(model2), 1e-30), 1.0 / order);
            for (int n = 0; n < order; ++n) {
                for (int p = 0; p < P; ++p) B[n][p] *= scale;
                refresh_c(A[n], B[n], dims[n], J, R, C[n]);
            }
        }
        double t0 = now_seconds();
        for (int sweep = 0; sweep < o->core_sweeps; ++sweep)
            for (int n = 0; n < order; ++n) {
                core_solve(t, &rm[n], C, A[n], dims[n], J, R, ridge_fraction, threads, &w, B[n]);
                refresh_c(A[n], B[n], dims[n], J, R, C[n]);
            }
        phase_add(PH_CORES, &t0);
    }
    for (int n = 0; n < order; ++n) {
        free(C[n]);
        rows_free(&rm[n]);
    }
    free(w.G);
    free(w.L);
    free(w.h);
    free(w.x);
    free(w.S);
    free(w.T);
    return st;
}

/* ---- the whole start -------------------------------------------------------------------------- */

tk_status tk_tucker_spectral_start(const tk_tucker_coo *train, const tk_tucker_spectral_options *o,
                                   tk_tucker_model *m)
{
    tk_status st = check_options(o, train);
    if (st != TK_OK) return st;
    if (!m || !m->a[0] || (st = tk_tucker_check_shape(m, train)) != TK_OK)
        return m && m->a[0] ? st
                            : tk_set_error(TK_ERR_ARGUMENT, "spectral start: allocate the model first "
                                                            "(tk_tucker_model_alloc)");
    const int N = m->order, J = m->rank_j, R = m->rank_r;
    const double start_time = now_seconds();
    double *A[TK_TUCKER_MAX_ORDER] = {0}, *B[TK_TUCKER_MAX_ORDER] = {0};
    for (int n = 0; n < N && st == TK_OK; ++n) {
        A[n] = calloc((size_t)m->dims[n] * J, sizeof *A[n]);
        B[n] = calloc((size_t)J * R, sizeof *B[n]);
        if (!A[n] || !B[n]) st = tk_set_error(TK_ERR_MEMORY, "spectral start: out of memory for mode %d", n + 1);
    }
    for (int n = 0; n < N && st == TK_OK; ++n) {
        /* a mode smaller than J has at most its size of directions: the rest of A(n) stays 0 */
        const int width = (uint32_t)J < m->dims[n] ? J : (int)m->dims[n];
        double *V = malloc((size_t)m->dims[n] * width * sizeof *V);
        if (!V) {
            st = tk_set_error(TK_ERR_MEMORY, "spectral start: out of memory for mode %d", n + 1);
            break;
        }
        st = tk_tucker_spectral_vectors(train, m->dims, n, width, o, V, NULL);
        /* A(n) = V sqrt(I_n): entries of unit mean square, the scale ALS's ridge expects; kept
         * as the float the model stores, so the cores are fitted to the A(n) it will hold */
        const double s = sqrt((double)m->dims[n]);
        for (size_t i = 0; st == TK_OK && i < m->dims[n]; ++i)
            for (int j = 0; j < width; ++j) {
                m->a[n][i * J + j] = (float)(V[i * width + j] * s);
                A[n][i * J + j] = m->a[n][i * J + j];
            }
        free(V);
    }
    if (st == TK_OK)
        st = tk_tucker_spectral_fit_cores(train, N, m->dims, J, R, (const double *const *)A, o,
                                          TK_TUCKER_SPECTRAL_RIDGE, 0, B);
    for (int n = 0; n < N && st == TK_OK; ++n)
        for (int p = 0; p < J * R; ++p) m->b[n][p] = (float)B[n][p];
    for (int n = 0; n < N; ++n) {
        free(A[n]);
        free(B[n]);
    }
    phases_report("spectral start", now_seconds() - start_time);
    return st;
}

/* ---- the deflation round ---------------------------------------------------------------------- */

void tk_tucker_deflate_options_init(tk_tucker_deflate_options *o)
{
    /* the round runs the start's subspace iteration and core fit: the same steps and sweeps */
    tk_tucker_spectral_options start;
    tk_tucker_spectral_options_init(&start);
    memset(o, 0, sizeof *o);
    o->keep_fraction = 0.03;
    o->subspace_iterations = start.subspace_iterations;
    o->core_sweeps = start.core_sweeps;
    o->seed = start.seed;
    o->num_threads = start.num_threads;
}

/* x - the model's prediction at every entry of t (double; each entry on its own, so the same
 * values on any thread count). */
static void residual_values(const tk_tucker_coo *t, double *const *C, int R, int threads, double *res)
{
    (void)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long e = 0; e < (long)t->nnz; ++e) {
        double q[TK_TUCKER_MAX_RANK], p = 0;
        entry_q(t, C, -1, R, (size_t)e, q);
        for (int r = 0; r < R; ++r) p += q[r];
        res[e] = (double)t->val[e] - p;
    }
}

/* The singular values of Cw (rows x R; sv, descending) and its right singular vectors (the
 * columns of Q, R x R), from the eigenvectors of the Gram Cw^T Cw (Jacobi); the caller forms a
 * left one as Cw Q(:, j) / sv[j].  Squaring the singular values costs accuracy only below ~1e-8
 * of the largest; the deflation keeps those above keep_fraction (0.03) of it and
 * orthonormalizes the kept columns again anyway. */
static void weighted_svd(const double *Cw, size_t rows, int R, double *sv, double *Q)
{
    double G[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK];
    for (int a = 0; a < R; ++a)
        for (int b = a; b < R; ++b) {
            double s = 0;
            for (size_t i = 0; i < rows; ++i) s += Cw[i * R + a] * Cw[i * R + b];
            G[a * R + b] = G[b * R + a] = s;
        }
    symmetric_eigen(G, R, sv, Q);
    for (int r = 0; r < R; ++r) sv[r] = sv[r] > 0 ? sqrt(sv[r]) : 0;
}

tk_status tk_tucker_spectral_deflate(const tk_tucker_coo *train, const tk_tucker_deflate_options *o,
                                     tk_tucker_model *m, int *kept)
{
    if (!train || train->nnz == 0) return tk_set_error(TK_ERR_ARGUMENT, "deflation: no training entries");
    if (!o || !(o->keep_fraction >= 0 && o->keep_fraction < 1) || o->subspace_iterations < 0 || o->core_sweeps < 0 ||
        o->num_threads < 0)
        return tk_set_error(TK_ERR_ARGUMENT, "deflation: keep_fraction must be in [0, 1), subspace_iterations, "
                                             "core_sweeps and num_threads >= 0 (tk_tucker_deflate_options_init gives "
                                             "the defaults)");
    if (!m || !m->a[0])
        return tk_set_error(TK_ERR_ARGUMENT, "deflation: no model (tk_tucker_model_alloc, then train it)");
    tk_status st = tk_tucker_check_shape(m, train);
    if (st != TK_OK) return st;
    const int N = m->order, J = m->rank_j, R = m->rank_r;
    if (J < 2) { /* one column: nothing to keep beside the residual's; the model stays */
        for (int n = 0; kept && n < N; ++n) kept[n] = J;
        return TK_OK;
    }
    tk_tucker_spectral_options so; /* the start's pieces, with the round's settings */
    tk_tucker_spectral_options_init(&so);
    so.subspace_iterations = o->subspace_iterations;
    so.core_sweeps = o->core_sweeps;
    so.seed = o->seed;
    so.num_threads = o->num_threads;
    const int threads = thread_count(&so, train->nnz);
    const double start_time = now_seconds();
    double *C[TK_TUCKER_MAX_ORDER] = {0}, *A[TK_TUCKER_MAX_ORDER] = {0}, *B[TK_TUCKER_MAX_ORDER] = {0};
    double norms[TK_TUCKER_MAX_ORDER][TK_TUCKER_MAX_RANK];
    double *res = malloc(train->nnz * sizeof *res);
    st = res ? TK_OK : tk_set_error(TK_ERR_MEMORY, "deflation: out of memory for %zu residuals", train->nnz);
    for (int n = 0; n < N && st == TK_OK; ++n) {
        C[n] = malloc((size_t)m->dims[n] * R * sizeof *C[n]);
        A[n] = calloc((size_t)m->dims[n] * J, sizeof *A[n]);
        B[n] = calloc((size_t)J * R, sizeof *B[n]);
        if (!C[n] || !A[n] || !B[n]) {
            st = tk_set_error(TK_ERR_MEMORY, "deflation: out of memory for mode %d", n + 1);
            break;
        }
        /* C(n) = A(n) B(n) of the model as it is, and its column norms */
        for (size_t i = 0; i < (size_t)m->dims[n] * J; ++i) A[n][i] = m->a[n][i];
        for (int p = 0; p < J * R; ++p) B[n][p] = m->b[n][p];
        refresh_c(A[n], B[n], m->dims[n], J, R, C[n]);
        for (int r = 0; r < R; ++r) {
            double s = 0;
            for (size_t i = 0; i < m->dims[n]; ++i) s += C[n][i * R + r] * C[n][i * R + r];
            norms[n][r] = sqrt(s);
        }
    }
    if (st == TK_OK) {
        double t0 = now_seconds();
        residual_values(train, C, R, threads, res);
        phase_add(PH_RESIDUAL, &t0);
    }
    for (int n = 0; n < N && st == TK_OK; ++n) {
        const size_t rows = m->dims[n];
        /* a mode smaller than J has at most its size of directions (the start's rule) */
        const int width = (uint32_t)J < m->dims[n] ? J : (int)m->dims[n];
        double *Cw = malloc(rows * R * sizeof *Cw), *V = malloc(rows * J * sizeof *V);
        if (!Cw || !V) {
            free(Cw);
            free(V);
            st = tk_set_error(TK_ERR_MEMORY, "deflation: out of memory for mode %d", n + 1);
            break;
        }
        /* C(n)'s column r weighted by the other modes' C(k) column norms: component r's share
         * of the model's predictions, so that the SVD ranks the directions by what they carry */
        double weight[TK_TUCKER_MAX_RANK], sv[TK_TUCKER_MAX_RANK], Q[TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK];
        for (int r = 0; r < R; ++r) {
            weight[r] = 1;
            for (int k = 0; k < N; ++k)
                if (k != n) weight[r] *= norms[k][r];
        }
        for (size_t i = 0; i < rows; ++i)
            for (int r = 0; r < R; ++r) Cw[i * R + r] = C[n][i * R + r] * weight[r];
        /* keep the directions above keep_fraction of the largest, at least one and at most J - 1
         * (the prototype's rule: one column always comes from the residual); none of a zero C(n) */
        int count = 0;
        weighted_svd(Cw, rows, R, sv, Q);
        for (int r = 0; r < R; ++r) count += sv[r] > o->keep_fraction * sv[0] && sv[r] > 0;
        int keep = count < J - 1 ? count : J - 1;
        keep = keep < width ? keep : width;
        for (size_t i = 0; i < rows; ++i)
            for (int j = 0; j < J; ++j) {
                double s = 0; /* U_c(i, j) = (Cw Q)(i, j) / sv[j], sv[j] > 0 for j < keep */
                for (int r = 0; j < keep && r < R; ++r) s += Cw[i * R + r] * Q[r * R + j];
                V[i * J + j] = j < keep ? s / sv[j] : 0;
            }
        /* the rest of the width: the top eigenvectors of the residual's off-diagonal Gram */
        const int fresh = width - keep;
        if (fresh > 0) {
            unfolding u;
            double *F = malloc(rows * fresh * sizeof *F);
            st = F ? unfolding_build(train, res, m->dims, n, threads, &u)
                   : tk_set_error(TK_ERR_MEMORY, "deflation: out of memory for mode %d", n + 1);
            if (st == TK_OK) {
                st = spectral_iterate(&u, fresh, &so, n, F, NULL);
                unfolding_free(&u);
            }
            for (size_t i = 0; st == TK_OK && i < rows; ++i)
                for (int j = 0; j < fresh; ++j) V[i * J + keep + j] = F[i * fresh + j];
            free(F);
        }
        if (st == TK_OK) {
            /* [U_c(:, :keep), the residual's vectors] orthonormalized (the prototype's QR: the
             * first keep columns span the kept directions), x sqrt(I_n) as the start's A(n), kept
             * as the float the model stores so the cores are fitted to the A(n) it will hold */
            orthonormalize(V, rows, width, J, so.seed, 2 * (uint64_t)n + 1);
            const double s = sqrt((double)rows);
            for (size_t i = 0; i < rows; ++i)
                for (int j = 0; j < J; ++j) A[n][i * J + j] = (float)(V[i * J + j] * s);
            if (kept) kept[n] = keep;
        }
        free(Cw);
        free(V);
    }
    if (st == TK_OK)
        st = tk_tucker_spectral_fit_cores(train, N, m->dims, J, R, (const double *const *)A, &so,
                                          TK_TUCKER_SPECTRAL_RIDGE, 0, B);
    for (int n = 0; n < N && st == TK_OK; ++n) {
        for (size_t i = 0; i < (size_t)m->dims[n] * J; ++i) m->a[n][i] = (float)A[n][i];
        for (int p = 0; p < J * R; ++p) m->b[n][p] = (float)B[n][p];
    }
    for (int n = 0; n < N; ++n) {
        free(C[n]);
        free(A[n]);
        free(B[n]);
    }
    free(res);
    phases_report("deflation round", now_seconds() - start_time);
    return st;
}
