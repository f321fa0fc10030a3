/* Eigenvalues only for the smallest orders (n <= TK_EIG_SMALL_MAX_N): one thread per
 * matrix, the whole matrix in registers.
 *
 * Why this shape.  At n = 5 the thread-per-matrix lockstep pair (eig_cuda_lockstep.cuh)
 * kept H in shared memory: every bulge step loaded and stored its rows and columns
 * there, so the QR kernel issued about 900 warp instructions per matrix, a third of
 * them shared-memory loads and stores, and the reduction went through global scratch
 * in between.  Here N is a template parameter and every loop over rows and columns is
 * unrolled, so each H(i, j) is a register and every index is a constant; what depends
 * on the matrix (the active window ql..qi, ilo, ihi, a permutation's rows) becomes a
 * predicate on straight-line code instead of an address.  One kernel does it all:
 * load, finiteness, prescaling, balancing, Householder reduction, the double-shift QR
 * and the sort.
 *
 * Outside the active window the bulge steps update whole rows and columns (what
 * LAPACK's dlahqr does with wantt): those entries couple blocks that are already split
 * off, never feed a later window, and updating them costs no more issue slots than
 * predicating them off.  The rest is eig_cuda_lockstep.cuh's arithmetic (the same
 * shifts, deflation tests, exceptional shifts and balancing decisions); results differ
 * from the CPU's by rounding only.
 *
 * Memory: each block stages its matrices through shared memory so that global loads
 * and stores are coalesced; a thread's slice then holds its unsorted eigenvalues and
 * finally its sorted ones. */
#ifndef TK_EIG_CUDA_SMALL_CUH
#define TK_EIG_CUDA_SMALL_CUH

#define TK_EIG_SMALL_MAX_N 8

/* Shared-memory reals per thread: the matrix or 2N eigenvalue parts, whichever is
 * more, odd so that the 32 threads of a warp hit different banks. */
__host__ __device__ constexpr int eig_small_slice(int n) { return (n * n > 2 * n ? n * n : 2 * n) | 1; }

/* Swap entries j and m of the N values at(0..N-1) where `on` (register arrays: the
 * indices are run-time values, so selects instead of addresses). */
template <typename R, int N, typename At>
__device__ __forceinline__ void eig_small_swap_entries(At at, int j, int m, bool on)
{
    R xj = 0, xm = 0;
#pragma unroll
    for (int c = 0; c < N; ++c) {
        if (c == j) xj = at(c);
        if (c == m) xm = at(c);
    }
#pragma unroll
    for (int c = 0; c < N; ++c) {
        if (on && c == j) at(c) = xm;
        if (on && c == m) at(c) = xj;
    }
}

/* Swap columns j and m over rows 0..ihi, then rows j and m over columns ilo..N-1 (the
 * permutation step of balancing, rare). */
template <typename R, int N>
__device__ __forceinline__ void eig_small_swap(R (&h)[N][N], int j, int m, int ilo, int ihi)
{
#pragma unroll
    for (int r = 0; r < N; ++r)
        eig_small_swap_entries<R, N>([&](int c) -> R & { return h[r][c]; }, j, m, r <= ihi);
#pragma unroll
    for (int q = 0; q < N; ++q)
        eig_small_swap_entries<R, N>([&](int r) -> R & { return h[r][q]; }, j, m, q >= ilo);
}

/* LAPACK's dgebal 'B' (eig_ls_balance with one lane): permutations, then power-of-two
 * scaling until row and column norms balance within 5%. */
template <typename R, int N> __device__ __forceinline__ void eig_small_balance(R (&h)[N][N], int *ilo_out, int *ihi_out)
{
    int ilo = 0, ihi = N - 1;
    /* rows with no off-diagonal entry in columns 0..ihi go to the bottom (the lowest such row first) */
    while (ihi > 0) {
        int jz = -1;
#pragma unroll
        for (int j = N - 1; j >= 0; --j) {
            bool zero = j <= ihi;
#pragma unroll
            for (int c = 0; c < N; ++c)
                if (c != j && c <= ihi && h[j][c] != 0) zero = false;
            if (jz < 0 && zero) jz = j;
        }
        if (jz < 0) break;
        if (jz != ihi) eig_small_swap<R, N>(h, jz, ihi, ilo, ihi);
        --ihi;
    }
    /* columns with no off-diagonal entry in rows ilo..ihi go to the top */
    while (ilo < ihi) {
        int jz = N;
#pragma unroll
        for (int j = 0; j < N; ++j) {
            bool zero = j >= ilo && j <= ihi;
#pragma unroll
            for (int r = 0; r < N; ++r)
                if (r != j && r >= ilo && r <= ihi && h[r][j] != 0) zero = false;
            if (jz == N && zero) jz = j;
        }
        if (jz == N) break;
        if (jz != ilo) eig_small_swap<R, N>(h, jz, ilo, ilo, ihi);
        ++ilo;
    }
    R scale[N];
#pragma unroll
    for (int i = 0; i < N; ++i) scale[i] = 1;
    bool noconv = ilo < ihi;
    for (int sweeps = 0; noconv && sweeps < 100; ++sweeps) {
        noconv = false;
#pragma unroll
        for (int i = 0; i < N; ++i) {
            if (i < ilo || i > ihi) continue;
            R cn = 0, rn = 0, ca = 0, ra = 0;
#pragma unroll
            for (int k = 0; k < N; ++k) {
                const R col = h[k][i], row = h[i][k];
                if (k >= ilo && k <= ihi) cn += col * col, rn += row * row;
                if (k <= ihi) ca = fmax(ca, fabs(col));
                if (k >= ilo) ra = fmax(ra, fabs(row));
            }
            const R f = eig_balance_factor(sqrt(cn), sqrt(rn), ca, ra, scale[i], (R)0.95);
            if (f == 1) continue;
            scale[i] *= f;
            const R gi = 1 / f;
#pragma unroll
            for (int k = 0; k < N; ++k) {
                if (k >= ilo && k != i) h[i][k] *= gi;
                if (k <= ihi && k != i) h[k][i] *= f;
            }
            noconv = true;
        }
    }
    *ilo_out = ilo;
    *ihi_out = ihi;
}

/* Householder reduction of rows and columns ilo..ihi to Hessenberg form (values only:
 * nothing outside the block is needed).  The reflector's entries beyond ihi are zero,
 * so the updates run over whole unrolled ranges. */
template <typename R, int N> __device__ __forceinline__ void eig_small_hessenberg(R (&h)[N][N], int ilo, int ihi)
{
#pragma unroll
    for (int k = 0; k + 2 < N; ++k) {
        if (k < ilo || k >= ihi - 1) continue;
        R x2 = 0;
#pragma unroll
        for (int i = k + 2; i < N; ++i)
            if (i <= ihi) x2 += h[i][k] * h[i][k];
        if (x2 == 0) continue; /* the column is already reduced */
        const R alpha = h[k + 1][k];
        const R beta = -copysign(hypot(alpha, sqrt(x2)), alpha);
        const R tau = (beta - alpha) / beta, sc = 1 / (alpha - beta);
        R v[N];
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = i == k + 1 ? (R)1 : (i > k + 1 && i <= ihi) ? h[i][k] * sc : (R)0;
        h[k + 1][k] = beta;
#pragma unroll
        for (int i = k + 2; i < N; ++i)
            if (i <= ihi) h[i][k] = 0;
        /* from the left: columns k+1..ihi */
#pragma unroll
        for (int j = k + 1; j < N; ++j) {
            R s = 0;
#pragma unroll
            for (int i = k + 1; i < N; ++i) s = fma(v[i], h[i][j], s);
            s *= tau;
            if (j <= ihi) {
#pragma unroll
                for (int i = k + 1; i < N; ++i) h[i][j] = fma(-s, v[i], h[i][j]);
            }
        }
        /* from the right: rows ilo..ihi */
#pragma unroll
        for (int r = 0; r < N; ++r) {
            R s = 0;
#pragma unroll
            for (int j = k + 1; j < N; ++j) s = fma(h[r][j], v[j], s);
            s *= tau;
            if (r >= ilo && r <= ihi) {
#pragma unroll
                for (int j = k + 1; j < N; ++j) h[r][j] = fma(-s, v[j], h[r][j]);
            }
        }
    }
}

/* Is H(k, k-1) negligible (eig_ls_negligible; k a constant after unrolling)? */
template <typename R, int N>
__device__ __forceinline__ bool eig_small_negligible(const R (&h)[N][N], int k, int ilo, int ihi, R smlnum)
{
    const R ulp = EigLimits<R>::eps();
    const R sub = fabs(h[k][k - 1]);
    if (sub <= smlnum) return true;
    const R hkk = h[k][k], hk1 = h[k - 1][k - 1];
    R tst = fabs(hk1) + fabs(hkk);
    if (tst == 0) {
        if (k >= 2 && k - 2 >= ilo) tst += fabs(h[k - 1][k >= 2 ? k - 2 : 0]);
        if (k + 1 < N && k + 1 <= ihi) tst += fabs(h[k + 1 < N ? k + 1 : k][k]);
    }
    if (sub > ulp * tst) return false;
    const R up = fabs(h[k - 1][k]);
    const R ab = fmax(sub, up), ba = fmin(sub, up);
    const R dk = fabs(hkk), dd = fabs(hk1 - hkk);
    const R aa = fmax(dk, dd), bb = fmin(dk, dd), s = aa + ab;
    return ba * (ab / s) <= fmax(smlnum, ulp * (bb * (aa / s)));
}

/* The double-shift QR iteration on the Hessenberg block ilo..ihi; the unsorted
 * eigenvalues go to wr[2k], wi[2k + 1] of `w` (the thread's shared slice).  Returns
 * whether it converged. */
template <typename R, int N>
__device__ __forceinline__ bool eig_small_hqr(R (&h)[N][N], R *w, int ilo, int ihi, int max_iter)
{
    const R ulp = EigLimits<R>::eps();
    const R smlnum = EigLimits<R>::safmin() * ((R)(ihi - ilo + 1) / ulp);
#pragma unroll
    for (int k = 0; k < N; ++k)
        if (k < ilo || k > ihi) w[2 * k] = h[k][k], w[2 * k + 1] = 0;
    int qi = ihi, ql = ilo, its = 0, kdefl = 0;
    while (qi >= ilo) {
        /* the lowest negligible subdiagonal in (ql, qi]: a split once found stays */
        int low = ql;
#pragma unroll
        for (int k = N - 1; k >= 1; --k)
            if (low == ql && k <= qi && k > ql && eig_small_negligible<R, N>(h, k, ilo, ihi, smlnum)) low = k;
        ql = low;
        if (ql > ilo) {
#pragma unroll
            for (int k = 1; k < N; ++k)
                if (k == ql) h[k][k - 1] = 0;
        }
        if (ql >= qi - 1) {
            /* one or two eigenvalues split off at the bottom */
            R a = 0, b = 0, c = 0, d = 0;
#pragma unroll
            for (int k = 0; k < N; ++k)
                if (k == qi) {
                    d = h[k][k];
                    if (k >= 1) a = h[k - 1][k - 1], b = h[k - 1][k], c = h[k][k - 1 >= 0 ? k - 1 : 0];
                }
            if (ql == qi) {
                w[2 * qi] = d, w[2 * qi + 1] = 0;
            } else {
                R r1r, r1i, r2r, r2i, cs, sn;
                Eig<R>::lanv2(&a, &b, &c, &d, &r1r, &r1i, &r2r, &r2i, &cs, &sn);
                w[2 * (qi - 1)] = r1r, w[2 * (qi - 1) + 1] = r1i;
                w[2 * qi] = r2r, w[2 * qi + 1] = r2i;
            }
            qi = ql - 1, ql = ilo, its = 0, kdefl = 0;
            continue;
        }
        if (its > max_iter) return false;
        ++its, ++kdefl;

        /* the shifts, and the first column of (H - s1)(H - s2) at the top of the window */
        R h11 = 0, h12 = 0, h21 = 0, h22 = 0, hqq1 = 0, hq1q2 = 0;
#pragma unroll
        for (int k = 2; k < N; ++k)
            if (k == qi) {
                h11 = h[k - 1][k - 1], h12 = h[k - 1][k], h21 = h[k][k - 1], h22 = h[k][k];
                hqq1 = h21, hq1q2 = h[k - 1][k - 2];
            }
        R hll = 0, hl1l = 0, hll1 = 0, hl1l1 = 0, hl2l1 = 0;
#pragma unroll
        for (int k = 0; k + 2 < N; ++k)
            if (k == ql) hll = h[k][k], hl1l = h[k + 1][k], hll1 = h[k][k + 1], hl1l1 = h[k + 1][k + 1], hl2l1 = h[k + 2][k + 1];
        if (kdefl % 20 == 0) {
            const R s = fabs(hqq1) + fabs(hq1q2);
            h11 = (R)0.75 * s + h22, h12 = (R)-0.4375 * s, h21 = s, h22 = h11;
        } else if (kdefl % 10 == 0) {
            const R s = fabs(hl1l) + fabs(hl2l1);
            h11 = (R)0.75 * s + hll, h12 = (R)-0.4375 * s, h21 = s, h22 = h11;
        }
        R rt[4], v[3];
        Eig<R>::double_shift(h11, h12, h21, h22, rt);
        Eig<R>::shift_column(rt, hll, hl1l, hll1, hl1l1, hl2l1, v);
        const R v0 = v[0], v1 = v[1], v2 = v[2];

        /* the bulge chase over the window's positions K = ql..qi-1 */
#pragma unroll
        for (int K = 0; K + 1 < N; ++K) {
            if (K < ql || K >= qi) continue;
            constexpr int last = N - 1;
            const int K2 = K + 2 <= last ? K + 2 : last; /* row K+2 exists when `three` can hold */
            const bool first = K == ql, three = K + 2 <= qi;
            R x0 = v0, x1 = v1, x2 = v2;
            if (K > 0 && !first) x0 = h[K][K > 0 ? K - 1 : 0], x1 = h[K + 1][K > 0 ? K - 1 : 0], x2 = h[K2][K > 0 ? K - 1 : 0];
            if (!three) x2 = 0;
            const R xn2 = x1 * x1 + x2 * x2;
            if (xn2 == 0) continue;
            /* beta = -sign(x0) |x|; t1 = (beta - x0) / beta; the vector's scale 1 / (x0 - beta) */
            const R all = fma(x0, x0, xn2);
            R rnrm, nrm;
            if (all > EigLimits<R>::sq_lo() && all < EigLimits<R>::sq_hi()) {
                rnrm = eig_rsqrt_normal(all), nrm = all * rnrm;
            } else {
                nrm = hypot(x0, sqrt(xn2)), rnrm = 1 / nrm;
            }
            const R sg = x0 >= 0 ? (R)1 : (R)-1, srn = sg * rnrm;
            const R t1 = fma(fabs(x0), rnrm, (R)1);
            const R sc = srn * eig_rcp_1to2(t1);
            const R u1 = x1 * sc, u2 = x2 * sc, t2 = srn * x1, t3 = srn * x2;
            /* rows K..K+2 from the left, columns K..N-1 */
#pragma unroll
            for (int j = K; j < N; ++j) {
                const R c2 = three ? h[K2][j] : (R)0;
                const R sum = fma(u2, c2, fma(u1, h[K + 1][j], h[K][j]));
                h[K][j] = fma(-sum, t1, h[K][j]);
                h[K + 1][j] = fma(-sum, t2, h[K + 1][j]);
                if (three) h[K2][j] = fma(-sum, t3, c2);
            }
            if (K > 0 && !first) {
                h[K][K > 0 ? K - 1 : 0] = -sg * nrm;
                h[K + 1][K > 0 ? K - 1 : 0] = 0;
                if (three) h[K2][K > 0 ? K - 1 : 0] = 0;
            }
            /* columns K..K+2 from the right, rows 0..min(K+3, qi) */
#pragma unroll
            for (int r = 0; r < N && r <= K + 3; ++r) {
                if (r > qi) continue;
                const R c2 = three ? h[r][K2] : (R)0;
                const R sum = fma(u2, c2, fma(u1, h[r][K + 1], h[r][K]));
                h[r][K] = fma(-sum, t1, h[r][K]);
                h[r][K + 1] = fma(-sum, t2, h[r][K + 1]);
                if (three) h[r][K2] = fma(-sum, t3, c2);
            }
        }
    }
    return true;
}

/* One thread per matrix; blockDim.x matrices per block, each block's matrices staged
 * through shared memory (eig_small_slice(N) reals per thread). */
template <typename R, int N>
__global__ void eig_small_kernel(size_t count, const R *__restrict__ a, R *__restrict__ values,
                                 int8_t *__restrict__ status, int balance, int max_iter)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    R *stage = reinterpret_cast<R *>(smem_raw);
    constexpr int NN = N * N, S = eig_small_slice(N);
    const size_t first = (size_t)blockIdx.x * blockDim.x;
    const int here = count - first < blockDim.x ? (int)(count - first) : (int)blockDim.x;
    const R *src = a + first * NN;
    for (int e = threadIdx.x; e < here * NN; e += blockDim.x) {
        const int m = e / NN;
        stage[m * S + (e - m * NN)] = src[e];
    }
    __syncthreads();
    int st = 0;
    if ((int)threadIdx.x < here) {
        R *w = stage + threadIdx.x * S;
        R h[N][N];
        R amax = 0;
        bool finite = true;
#pragma unroll
        for (int i = 0; i < N; ++i)
#pragma unroll
            for (int j = 0; j < N; ++j) {
                h[i][j] = w[i * N + j];
                finite = finite && isfinite(h[i][j]);
                amax = fmax(amax, fabs(h[i][j]));
            }
        /* prescale by a power of two to max |a| in [0.5, 1) */
        int expo = 0;
        if (finite && amax > 0) {
            frexp(amax, &expo);
            const R f = ldexp((R)1, -expo);
            const bool mul = expo > -100 && expo < 100;
#pragma unroll
            for (int i = 0; i < N; ++i)
#pragma unroll
                for (int j = 0; j < N; ++j) h[i][j] = mul ? h[i][j] * f : ldexp(h[i][j], -expo);
        }
        if (!finite) {
            st = TK_EIG_NONFINITE;
        } else {
            int ilo = 0, ihi = N - 1;
            if (balance) eig_small_balance<R, N>(h, &ilo, &ihi);
            eig_small_hessenberg<R, N>(h, ilo, ihi);
            if (!eig_small_hqr<R, N>(h, w, ilo, ihi, max_iter)) st = TK_EIG_NOT_CONVERGED;
        }
        if (st) {
#pragma unroll
            for (int e = 0; e < 2 * N; ++e) w[e] = (R)NAN;
        } else {
            /* each eigenvalue goes to its rank: how many come before it (eig_sorts_before) */
            R re[N], im[N];
#pragma unroll
            for (int s = 0; s < N; ++s) re[s] = w[2 * s], im[s] = w[2 * s + 1];
#pragma unroll
            for (int s = 0; s < N; ++s) {
                int rank = 0;
#pragma unroll
                for (int q = 0; q < N; ++q)
                    rank += eig_sorts_before(re[q], im[q], q, re[s], im[s], s);
                w[2 * rank] = Eig<R>::scale2(re[s], expo);
                w[2 * rank + 1] = Eig<R>::scale2(im[s], expo);
            }
        }
        status[first + threadIdx.x] = (int8_t)st;
    }
    __syncthreads();
    R *dst = values + first * 2 * N;
    for (int e = threadIdx.x; e < here * 2 * N; e += blockDim.x) {
        const int m = e / (2 * N);
        dst[e] = stage[m * S + (e - m * 2 * N)];
    }
}

#endif
