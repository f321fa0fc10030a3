/* The FastTucker CUDA kernels (cuFasterTucker's design on B-CSF sub-slices), templated on a
 * policy type (tucker_tuning.h) for their block shape.
 *
 * Factor pass, exact row solves (ALS): a warp a sub-slice gathers its row's normal equations in
 * double (als_gather_kernel), a warp a row solves them in double with the host's safeguard
 * (als_solve_kernel).
 * Factor pass, the seed's SGD, at J, R <= 32 (Netflix's 32 x 32 among them): a lane a sub-slice
 * (factor_lanes_kernel, below).  Otherwise, and for the core pass:
 * Work unit: one warp per B-CSF sub-slice, taken from a global counter so long
 * and short sub-slices balance.  Lanes own the rank components: lane j holds
 * a(n)_{i_n}[j] (factor pass) and lane r holds q_r and C rows (both passes).
 *
 * Factor pass of mode n: B(n) sits in registers (lane j: row j, zero padded to
 * 32 or 64), q is broadcast through a per-warp shared row read as float4, so
 * v = B q is MAXR FMAs per lane; a . v is a warp-shuffle reduction.  The row
 * a(n)_{i_n} stays in registers for the whole sub-slice (read once, written
 * once).  Entries sharing their leading indices (a CSF fiber) reuse the product
 * of those C rows (the seed's shared intermediate).  A row split into S > 1
 * sub-slices adds (a - a0) / S atomically into a delta buffer; the refresh
 * kernel applies it and recomputes C(n) = A(n) B(n) (the reusable
 * intermediates).  Rows never race, so this is the same algorithm as cpu/omp.
 *
 * Core pass of mode n: the slice's C(n) row stays in registers, each entry costs
 * N-1 C rows and one reduction (prediction = C(n)[i] . q), and z_i = sum e q is
 * accumulated per sub-slice; G = A(n)^T Z is one small tiled product, then
 * B(n) += lr_b (G / nnz - lambda_b B(n)) and C(n) is refreshed.
 *
 * C rows of the small modes stay in L2 (Netflix: C(movie) and C(day) are 2.3 MB
 * and 0.3 MB); C(user) is read in slice order in the user pass. */
#ifndef TK_TUCKER_KERNELS_CUH
#define TK_TUCKER_KERNELS_CUH

#include "tucker_device.cuh"

/* The warp kernels' rows of B in registers: lane j holds rows j, j + 32, ..., zero past J and R. */
template <int JPL, int MAXR>
__device__ __forceinline__ void warp_load_core_rows(const pass_args &p, int lane, float (&breg)[JPL][MAXR])
{
#pragma unroll
    for (int jj = 0; jj < JPL; ++jj) {
        int j = lane + 32 * jj;
#pragma unroll
        for (int r = 0; r < MAXR; ++r) breg[jj][r] = (j < p.J && r < p.R) ? p.b[j * p.R + r] : 0.0f;
    }
}

/* The warp kernels' v = B q: lane j's rows of B in registers (breg), q broadcast from the
 * warp's shared row as float4, each v_j summed in r order. */
template <int JPL, int MAXR>
__device__ __forceinline__ void warp_core_times(const float (&breg)[JPL][MAXR], const float4 *q4, float (&v)[JPL])
{
#pragma unroll
    for (int jj = 0; jj < JPL; ++jj) v[jj] = 0.0f;
#pragma unroll
    for (int r4 = 0; r4 < MAXR / 4; ++r4) {
        float4 qq = q4[r4];
#pragma unroll
        for (int jj = 0; jj < JPL; ++jj) {
            v[jj] = fmaf(breg[jj][4 * r4 + 0], qq.x, v[jj]);
            v[jj] = fmaf(breg[jj][4 * r4 + 1], qq.y, v[jj]);
            v[jj] = fmaf(breg[jj][4 * r4 + 2], qq.z, v[jj]);
            v[jj] = fmaf(breg[jj][4 * r4 + 3], qq.w, v[jj]);
        }
    }
}

/* Factor pass: JPL rows of B per lane (J <= 32 * JPL), MAXR padded rank (32 or 64). */
template <class Policy, int JPL, int MAXR>
__global__ void __launch_bounds__(Policy::threads_per_block) factor_kernel(pass_args p)
{
    constexpr int RPL = MAXR / 32;
    __shared__ __align__(16) float qs[Policy::warps_per_block][MAXR];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float breg[JPL][MAXR];
    warp_load_core_rows<JPL, MAXR>(p, lane, breg);
    const float4 *q4 = reinterpret_cast<const float4 *>(qs[warp]);
    for (unsigned long long part = next_part(p.counter, lane); part < p.mode.parts; part = next_part(p.counter, lane)) {
        const uint32_t i = p.mode.part_row[part], S = p.mode.part_count[part];
        const unsigned long long lo = p.mode.part_ptr[part], hi = p.mode.part_ptr[part + 1];
        float a[JPL], a0[JPL];
#pragma unroll
        for (int jj = 0; jj < JPL; ++jj) {
            int j = lane + 32 * jj;
            a0[jj] = a[jj] = j < p.J ? p.a[(size_t)i * p.J + j] : 0.0f;
        }
        float pre[RPL], q[RPL];
        for (unsigned long long e = lo; e < hi; ++e) {
            fiber_product<RPL>(p, e, lo, lane, pre, q);
#pragma unroll
            for (int rr = 0; rr < RPL; ++rr) qs[warp][lane + 32 * rr] = q[rr];
            __syncwarp();
            float v[JPL];
            warp_core_times<JPL, MAXR>(breg, q4, v);
            __syncwarp();
            float dot = 0.0f, vv = 0.0f;
#pragma unroll
            for (int jj = 0; jj < JPL; ++jj) dot = fmaf(a[jj], v[jj], dot), vv = fmaf(v[jj], v[jj], vv);
            const float_pair sums = tk_warp_allreduce(float_pair{dot, vv}, pair_sum());
            dot = sums.x, vv = sums.y;
            const float err = __ldg(p.mode.val + e) - dot;
            /* The step capped at 1 / |v|^2, as on the CPU (tucker_cpu_body.h). */
            const float step = p.lr * vv > 1.0f ? 1.0f / vv : p.lr;
#pragma unroll
            for (int jj = 0; jj < JPL; ++jj) a[jj] += step * (err * v[jj] - p.lambda * a[jj]);
        }
#pragma unroll
        for (int jj = 0; jj < JPL; ++jj) {
            int j = lane + 32 * jj;
            if (j >= p.J) continue;
            if (S == 1)
                p.a[(size_t)i * p.J + j] = a[jj]; /* the row's only sub-slice: nobody else touches it */
            else
                atomicAdd(p.delta + (size_t)i * p.J + j, (a[jj] - a0[jj]) / (float)S);
        }
    }
}

/* atomicAdd on a double: native from sm_60; a compare-and-swap loop below it (CUDA 12 still
 * builds sm_50 and sm_52 into "all"). */
__device__ __forceinline__ void atomic_add_double(double *addr, double x)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600
    unsigned long long *word = reinterpret_cast<unsigned long long *>(addr), old = *word, seen;
    do {
        seen = old;
        const double sum = __longlong_as_double((long long)seen) + x;
        old = atomicCAS(word, seen, (unsigned long long)__double_as_longlong(sum));
    } while (seen != old);
#else
    atomicAdd(addr, x);
#endif
}

/* Factor pass, exact row solves (TK_TUCKER_FACTOR_ALS): each sub-slice gathers its entries'
 * part of its row's normal equations, sum v v^T (lane j: column j) and sum x v (lane j:
 * element j), in double (v = B q itself in float, as on the host), and adds it into the row's
 * slot of p.eqd (stored when the row has one sub-slice); the slot's last word counts the row's
 * entries (tucker_cpu.c's als_add and the count its als_solve takes).  Double, as the host,
 * whose rows tk_test_tucker_als_rows checks against LAPACK's dgels.  (A float gather and
 * Cholesky, removed in session 19, ran 1.4x faster on the H100 at the Netflix shape and ended
 * 20 iterations at the same test RMSE, 0.99258 against 0.99256: what fails there is not
 * round-off; benchmarks.md.) */
template <class Policy, int JPL, int MAXR>
__global__ void __launch_bounds__(Policy::threads_per_block) als_gather_kernel(pass_args p)
{
    constexpr int MAXJ = 32 * JPL;
    __shared__ __align__(16) float qs[Policy::warps_per_block][MAXR];
    __shared__ __align__(16) float vs[Policy::warps_per_block][MAXJ];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const size_t stride = tk_tucker_eq_stride(p.J);
    float breg[JPL][MAXR];
    warp_load_core_rows<JPL, MAXR>(p, lane, breg);
    const float4 *q4 = reinterpret_cast<const float4 *>(qs[warp]);
    for (unsigned long long part = next_part(p.counter, lane); part < p.mode.parts; part = next_part(p.counter, lane)) {
        const uint32_t i = p.mode.part_row[part], S = p.mode.part_count[part];
        const unsigned long long lo = p.mode.part_ptr[part], hi = p.mode.part_ptr[part + 1];
        double m[JPL][MAXJ], rhs[JPL];
#pragma unroll
        for (int jj = 0; jj < JPL; ++jj) {
            rhs[jj] = 0.0;
#pragma unroll
            for (int k = 0; k < MAXJ; ++k) m[jj][k] = 0.0;
        }
        float pre[MAXR / 32], q[MAXR / 32];
        for (unsigned long long e = lo; e < hi; ++e) {
            fiber_product<MAXR / 32>(p, e, lo, lane, pre, q);
#pragma unroll
            for (int rr = 0; rr < MAXR / 32; ++rr) qs[warp][lane + 32 * rr] = q[rr];
            __syncwarp();
            float v[JPL];
            warp_core_times<JPL, MAXR>(breg, q4, v);
#pragma unroll
            for (int jj = 0; jj < JPL; ++jj) vs[warp][lane + 32 * jj] = v[jj];
            __syncwarp();
            const double x = (double)__ldg(p.mode.val + e);
#pragma unroll
            for (int k = 0; k < MAXJ; ++k) {
                const double vk = (double)vs[warp][k];
#pragma unroll
                for (int jj = 0; jj < JPL; ++jj) m[jj][k] = fma(vk, (double)v[jj], m[jj][k]);
            }
#pragma unroll
            for (int jj = 0; jj < JPL; ++jj) rhs[jj] = fma(x, (double)v[jj], rhs[jj]);
            __syncwarp(); /* qs and vs are rewritten by the next entry */
        }
        double *slot = p.eqd + (size_t)(i - p.row_lo) * stride;
#pragma unroll
        for (int jj = 0; jj < JPL; ++jj) {
            int j = lane + 32 * jj;
            if (j >= p.J) continue;
#pragma unroll
            for (int k = 0; k < MAXJ; ++k) {
                if (k >= p.J) break;
                if (S == 1)
                    slot[(size_t)k * p.J + j] = m[jj][k];
                else
                    atomic_add_double(slot + (size_t)k * p.J + j, m[jj][k]);
            }
            if (S == 1)
                slot[(size_t)p.J * p.J + j] = rhs[jj];
            else
                atomic_add_double(slot + (size_t)p.J * p.J + j, rhs[jj]);
        }
        if (lane == 0) {
            if (S == 1)
                slot[(size_t)p.J * p.J + p.J] = (double)(hi - lo);
            else
                atomic_add_double(slot + (size_t)p.J * p.J + p.J, (double)(hi - lo));
        }
    }
}

/* Doubles of shared memory one warp of als_solve_kernel takes: M (J x J; its upper triangle
 * the normal equations, kept for the safeguard, its strict lower triangle U transposed), then
 * U's diagonal, the solution and the right-hand side (J each). */
__host__ __device__ inline size_t als_solve_shared_doubles(int J) { return (size_t)J * (size_t)J + 3 * (size_t)J; }

/* Warp per row of [0, rows), in double: tucker_cpu.c's als_solve, operation for operation.  A
 * row without entries becomes 0 (its minimiser of f); otherwise Cholesky (M + ridge I) =
 * U^T U (ridge: tk_tucker_als_ridge of lambda, the row's count and per_entry, as the host),
 * y = the solution, and a + omega (y - a) kept only where it does not raise the row's loss (a
 * not positive definite M keeps the row too). */
template <class Policy>
__global__ void als_solve_kernel(float *A, const double *eq, uint32_t rows, int J, double lambda, int per_entry,
                                 double omega, int warps_per_block)
{
    extern __shared__ double smd[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const size_t stride = tk_tucker_eq_stride(J);
    double *M = smd + (size_t)warp * als_solve_shared_doubles(J), *ud = M + (size_t)J * J, *y = ud + J, *rhs = y + J;
    const size_t warps = (size_t)gridDim.x * (size_t)warps_per_block;
    for (size_t i = (size_t)blockIdx.x * warps_per_block + warp; i < rows; i += warps) {
        const double *slot = eq + i * stride;
        const double count = slot[(size_t)J * J + J];
        float *a = A + i * (size_t)J;
        if (count == 0.0) { /* no entries: the row's minimiser of f is 0 */
            for (int j = lane; j < J; j += 32) a[j] = 0.0f;
            continue;
        }
        for (int k = lane; k < J * J; k += 32) M[k] = slot[k];
        for (int k = lane; k < J; k += 32) rhs[k] = y[k] = slot[(size_t)J * J + k];
        __syncwarp();
        const double ridge = tk_tucker_als_ridge(lambda, count, per_entry);
        bool ok = true;
        for (int k = 0; k < J; ++k) {
            double d = M[k * J + k] + ridge;
            for (int t = 0; t < k; ++t) d -= M[k * J + t] * M[k * J + t]; /* U[t][k] at [k][t] */
            ok = d > 0.0;
            if (!ok) break;
            d = sqrt(d);
            for (int j = k + 1 + lane; j < J; j += 32) {
                double s = M[k * J + j];
                for (int t = 0; t < k; ++t) s -= M[k * J + t] * M[j * J + t];
                M[j * J + k] = s / d; /* U[k][j] */
            }
            if (lane == 0) ud[k] = d;
            __syncwarp();
        }
        if (ok && lane == 0) {
            for (int k = 0; k < J; ++k) {
                double s = y[k];
                for (int t = 0; t < k; ++t) s -= M[k * J + t] * y[t];
                y[k] = s / ud[k];
            }
            for (int k = J - 1; k >= 0; --k) {
                double s = y[k];
                for (int j = k + 1; j < J; ++j) s -= M[j * J + k] * y[j];
                y[k] = s / ud[k];
            }
            /* the safeguard (tucker_cpu.c's als_solve): the move a + omega (y - a) kept only where
             * it does not raise the row's loss; ud, done with, holds a in double */
            for (int k = 0; k < J; ++k) ud[k] = (double)a[k], y[k] = ud[k] + omega * (y[k] - ud[k]);
            if (!(tk_tucker_als_row_loss(M, rhs, ridge, y, J) <= tk_tucker_als_row_loss(M, rhs, ridge, ud, J)))
                for (int k = 0; k < J; ++k) y[k] = ud[k];
        }
        __syncwarp();
        if (ok)
            for (int j = lane; j < J; j += 32) a[j] = (float)y[j];
        __syncwarp(); /* M and y are the next row's */
    }
}

/* The lanes kernels' shared steps (J, R <= 32, a lane a sub-slice).  A lane's place in the
 * pass: entries [e, hi) of a sub-slice of row i (S sub-slices in that row), or done. */
struct lane_work {
    unsigned long long e = 0, hi = 0;
    uint32_t i = 0, S = 1;
    bool done = false;
};

/* Lanes whose sub-slice is finished take the next ones from the global counter (one atomic a
 * warp), so lanes stay busy while sub-slices differ in length; true for a lane that started a
 * new sub-slice (it then loads its row). */
__device__ __forceinline__ bool lanes_next_part(const pass_args &p, lane_work &w, int lane)
{
    const bool need = !w.done && w.e >= w.hi;
    const unsigned want = __ballot_sync(TK_WARP_ALL_LANES, need);
    if (!want) return false;
    const int leader = __ffs(want) - 1;
    unsigned long long base = 0;
    if (lane == leader) base = atomicAdd(p.counter, (unsigned long long)__popc(want));
    base = __shfl_sync(TK_WARP_ALL_LANES, base, leader);
    if (!need) return false;
    const unsigned long long part = base + __popc(want & ((1u << lane) - 1u));
    if (part >= p.mode.parts) {
        w.done = true;
        return false;
    }
    w.i = p.mode.part_row[part], w.S = p.mode.part_count[part];
    w.e = p.mode.part_ptr[part], w.hi = p.mode.part_ptr[part + 1];
    return true;
}

/* q of each lane's entry (zero past R; an idle lane's is row 0's, unused): the product of the
 * entry's C rows in level order, as fiber_product forms it.  The warp loads its 32 entries'
 * rows a row per coalesced load into its padded tile sm, from which lane l reads row l's
 * values without bank conflicts. */
__device__ __forceinline__ void lanes_load_q(const pass_args &p, const lane_work &w, bool active, int lane,
                                             float (*sm)[33], float (&q)[32])
{
    const int L = p.levels, R = p.R;
#pragma unroll
    for (int r = 0; r < 32; ++r) q[r] = 1.0f;
    for (int k = 0; k < L; ++k) {
        const uint32_t mine = active ? __ldg(p.mode.idx + w.e * (unsigned long long)L + k) : 0u;
        const float *c = p.cother[k];
        __syncwarp();
        for (int src = 0; src < 32; ++src) {
            const uint32_t row = __shfl_sync(TK_WARP_ALL_LANES, mine, src);
            sm[src][lane] = lane < R ? __ldg(c + (size_t)row * R + lane) : 0.0f;
        }
        __syncwarp();
#pragma unroll
        for (int r = 0; r < 32; ++r) q[r] *= sm[lane][r];
    }
}

/* Factor pass for J, R <= 32, a lane a sub-slice.  The warp version spends most of its issue
 * slots per entry on what a warp shares (the broadcast of q, the two 5-step reductions, the
 * step), about 200 instructions an entry; here each lane walks its own sub-slice, holding its
 * row a, q and v = B q in registers, so an entry costs a lane 1024 multiply-adds, B read from
 * shared memory four values a load, every lane the same address (a broadcast; from the
 * constant bank instead, 4 KB of B missed its cache on nearly every load), and a few dozen
 * others.  Same algorithm as the warp kernel and the CPU (entries of a sub-slice in order, rows
 * never race, split rows through the delta buffer); only the order of the dot products' sums
 * differs. */
template <class Policy>
__global__ void __launch_bounds__(Policy::lanes_threads_per_block, Policy::lanes_blocks_per_sm) factor_lanes_kernel(pass_args p)
{
    __shared__ float tile[Policy::lanes_threads_per_block / 32][32][33];
    __shared__ __align__(16) float bs[32][32]; /* B(n), zero-padded */
    for (int k = threadIdx.x; k < 32 * 32; k += blockDim.x) {
        const int j = k / 32, r = k % 32;
        bs[j][r] = j < p.J && r < p.R ? p.b[j * p.R + r] : 0.0f;
    }
    __syncthreads();
    const int lane = threadIdx.x & 31, J = p.J;
    float(*sm)[33] = tile[threadIdx.x >> 5];
    lane_work w;
    float a[32];
#pragma unroll
    for (int j = 0; j < 32; ++j) a[j] = 0.0f;
    for (;;) {
        if (lanes_next_part(p, w, lane))
#pragma unroll
            for (int j = 0; j < 32; ++j) a[j] = j < J ? p.a[(size_t)w.i * J + j] : 0.0f;
        const bool active = !w.done && w.e < w.hi;
        if (!__any_sync(TK_WARP_ALL_LANES, active)) break;
        float q[32];
        lanes_load_q(p, w, active, lane, sm, q);
        /* v = B q, each v_j summed in r order */
        float v[32];
#pragma unroll
        for (int j = 0; j < 32; ++j) v[j] = 0.0f;
#pragma unroll
        for (int r4 = 0; r4 < 8; ++r4)
#pragma unroll
            for (int j = 0; j < 32; ++j) {
                const float4 b = reinterpret_cast<const float4 *>(bs[j])[r4];
                v[j] = fmaf(b.x, q[4 * r4], v[j]);
                v[j] = fmaf(b.y, q[4 * r4 + 1], v[j]);
                v[j] = fmaf(b.z, q[4 * r4 + 2], v[j]);
                v[j] = fmaf(b.w, q[4 * r4 + 3], v[j]);
            }
        if (active) {
            float dot = 0.0f, vv = 0.0f;
#pragma unroll
            for (int j = 0; j < 32; ++j) dot = fmaf(a[j], v[j], dot), vv = fmaf(v[j], v[j], vv);
            const float err = __ldg(p.mode.val + w.e) - dot;
            /* The step capped at 1 / |v|^2, as on the CPU (tucker_cpu_body.h). */
            const float step = p.lr * vv > 1.0f ? 1.0f / vv : p.lr;
#pragma unroll
            for (int j = 0; j < 32; ++j) a[j] += step * (err * v[j] - p.lambda * a[j]);
            if (++w.e == w.hi) {
                /* the sub-slice's end: its row, or its share of a split row's change (the row's
                 * start is still in A: split rows change only through the delta buffer) */
#pragma unroll
                for (int j = 0; j < 32; ++j) {
                    if (j >= J) continue;
                    float *to = p.a + (size_t)w.i * J + j;
                    if (w.S == 1)
                        *to = a[j];
                    else
                        atomicAdd(p.delta + (size_t)w.i * J + j, (a[j] - *to) / (float)w.S);
                }
            }
        }
    }
}

/* Core pass for R <= 32, a lane a sub-slice (as factor_lanes_kernel): the lane holds its row's
 * C(n) row, q and z in registers; an entry costs it 32 multiply-adds for the prediction and 32
 * for z, where the warp kernel spends a 5-step reduction and its bookkeeping on each entry. */
template <class Policy>
__global__ void __launch_bounds__(Policy::lanes_threads_per_block, Policy::lanes_blocks_per_sm) core_lanes_kernel(pass_args p)
{
    __shared__ float tile[Policy::lanes_threads_per_block / 32][32][33];
    const int lane = threadIdx.x & 31, R = p.R;
    float(*sm)[33] = tile[threadIdx.x >> 5];
    lane_work w;
    float cn[32], z[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) cn[r] = z[r] = 0.0f;
    for (;;) {
        if (lanes_next_part(p, w, lane))
#pragma unroll
            for (int r = 0; r < 32; ++r) cn[r] = r < R ? p.cn[(size_t)w.i * R + r] : 0.0f, z[r] = 0.0f;
        const bool active = !w.done && w.e < w.hi;
        if (!__any_sync(TK_WARP_ALL_LANES, active)) break;
        float q[32];
        lanes_load_q(p, w, active, lane, sm, q);
        if (active) {
            float dot = 0.0f;
#pragma unroll
            for (int r = 0; r < 32; ++r) dot = fmaf(cn[r], q[r], dot);
            const float err = __ldg(p.mode.val + w.e) - dot;
#pragma unroll
            for (int r = 0; r < 32; ++r) z[r] = fmaf(err, q[r], z[r]);
            if (++w.e == w.hi)
#pragma unroll
                for (int r = 0; r < 32; ++r) {
                    if (r >= R) continue;
                    if (w.S == 1)
                        p.z[(size_t)w.i * R + r] = z[r];
                    else
                        atomicAdd(p.z + (size_t)w.i * R + r, z[r]);
                }
        }
    }
}

/* Core pass: RPL rank components per lane (R <= 32 * RPL). */
template <class Policy, int RPL>
__global__ void __launch_bounds__(Policy::threads_per_block) core_kernel(pass_args p)
{
    const int lane = threadIdx.x & 31;
    for (unsigned long long part = next_part(p.counter, lane); part < p.mode.parts; part = next_part(p.counter, lane)) {
        const uint32_t i = p.mode.part_row[part], S = p.mode.part_count[part];
        const unsigned long long lo = p.mode.part_ptr[part], hi = p.mode.part_ptr[part + 1];
        float cn[RPL], z[RPL], pre[RPL], q[RPL];
#pragma unroll
        for (int rr = 0; rr < RPL; ++rr) {
            int r = lane + 32 * rr;
            cn[rr] = r < p.R ? p.cn[(size_t)i * p.R + r] : 0.0f;
            z[rr] = 0.0f;
        }
        for (unsigned long long e = lo; e < hi; ++e) {
            fiber_product<RPL>(p, e, lo, lane, pre, q);
            float dot = 0.0f;
#pragma unroll
            for (int rr = 0; rr < RPL; ++rr) dot = fmaf(cn[rr], q[rr], dot);
            const float err = __ldg(p.mode.val + e) - tk_warp_allreduce(dot, tk_op_sum());
#pragma unroll
            for (int rr = 0; rr < RPL; ++rr) z[rr] = fmaf(err, q[rr], z[rr]);
        }
#pragma unroll
        for (int rr = 0; rr < RPL; ++rr) {
            int r = lane + 32 * rr;
            if (r >= p.R) continue;
            if (S == 1)
                p.z[(size_t)i * p.R + r] = z[rr];
            else
                atomicAdd(p.z + (size_t)i * p.R + r, z[rr]);
        }
    }
}

/* G += A^T Z over a block of rows: tiles of rows in shared memory, each thread owning
 * up to Policy::gram_outputs_per_thread of the J x R outputs. */
template <class Policy>
__global__ void __launch_bounds__(Policy::gram_threads)
    gram_kernel(const float *A, const float *Z, uint32_t rows, int J, int R, float *G)
{
    constexpr int TILE = Policy::gram_tile_rows, THREADS = Policy::gram_threads;
    constexpr int OUTS = Policy::gram_outputs_per_thread;
    static_assert(THREADS * OUTS >= TK_TUCKER_MAX_RANK * TK_TUCKER_MAX_RANK, "the threads cover every output");
    __shared__ float as[TILE][TK_TUCKER_MAX_RANK], zs[TILE][TK_TUCKER_MAX_RANK];
    const int outputs = J * R, t = threadIdx.x;
    float acc[OUTS];
#pragma unroll
    for (int k = 0; k < OUTS; ++k) acc[k] = 0.0f;
    size_t lo = (size_t)blockIdx.x * Policy::gram_rows_per_block, hi = lo + Policy::gram_rows_per_block;
    if (hi > rows) hi = rows;
    for (size_t base = lo; base < hi; base += TILE) {
        int n = (int)(hi - base < TILE ? hi - base : TILE);
        for (int k = t; k < TILE * TK_TUCKER_MAX_RANK; k += THREADS) {
            int row = k / TK_TUCKER_MAX_RANK, col = k % TK_TUCKER_MAX_RANK;
            as[row][col] = row < n && col < J ? A[(base + row) * J + col] : 0.0f;
            zs[row][col] = row < n && col < R ? Z[(base + row) * R + col] : 0.0f;
        }
        __syncthreads();
        for (int row = 0; row < n; ++row)
#pragma unroll
            for (int k = 0; k < OUTS; ++k) {
                int o = t + THREADS * k;
                if (o < outputs) acc[k] = fmaf(as[row][o / R], zs[row][o % R], acc[k]);
            }
        __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < OUTS; ++k) {
        int o = t + THREADS * k;
        if (o < outputs) atomicAdd(G + o, acc[k]);
    }
}

__global__ void update_core_kernel(float *B, const float *G, int count, float lr, float inv_nnz, float lambda)
{
    for (int k = threadIdx.x; k < count; k += blockDim.x) B[k] += lr * (G[k] * inv_nnz - lambda * B[k]);
}

/* Warp per row: apply (and clear) the split rows' deltas, then C[i] = A[i] B. */
template <class Policy>
__global__ void __launch_bounds__(Policy::threads_per_block)
    refresh_kernel(float *A, float *delta, const float *B, float *C, uint32_t rows, int J, int R)
{
    extern __shared__ float bs[];
    for (int k = threadIdx.x; k < J * R; k += blockDim.x) bs[k] = B[k];
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const size_t warps = (size_t)gridDim.x * Policy::warps_per_block;
    for (size_t i = (size_t)blockIdx.x * Policy::warps_per_block + (threadIdx.x >> 5); i < rows; i += warps) {
        float a[2];
        for (int jj = 0; jj < 2; ++jj) {
            int j = lane + 32 * jj;
            a[jj] = 0.0f;
            if (j < J) {
                a[jj] = A[i * J + j];
                if (delta) {
                    float d = delta[i * J + j];
                    if (d != 0.0f) {
                        a[jj] += d;
                        A[i * J + j] = a[jj];
                        delta[i * J + j] = 0.0f;
                    }
                }
            }
        }
        float c[2] = {0.0f, 0.0f};
        for (int j = 0; j < J; ++j) {
            float aj = __shfl_sync(TK_WARP_ALL_LANES, a[j >> 5], j & 31);
            for (int rr = 0; rr < 2; ++rr) {
                int r = lane + 32 * rr;
                if (r < R) c[rr] = fmaf(aj, bs[j * R + r], c[rr]);
            }
        }
        for (int rr = 0; rr < 2; ++rr) {
            int r = lane + 32 * rr;
            if (r < R) C[i * R + r] = c[rr];
        }
    }
}

#endif
