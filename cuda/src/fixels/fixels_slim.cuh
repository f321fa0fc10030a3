/* The slim pull kernel: the pull kernel's loop (fixels_warp.cuh: each warp takes the chunk's next
 * voxel from a counter) and its segmentation, step for step the same, with the voxel's samples
 * left in the samples kernel's global array (read there, through the same generic pointer) and
 * so a shared-memory layout without them: 9,088 bytes a voxel on the 1281 directions at lmax 8
 * where the pull kernel's is 19,248 (fx_warp_slim_layout_for).  Why: Nsight Compute found the
 * pull kernel latency bound at 12 warps an SM, held there by both its 168 registers and its
 * shared memory (the samples' 10 KB a voxel); without the samples in shared memory the registers
 * alone bound the warps an SM: 16 at 128 registers, 21 at 96.  The samples' reads from global
 * memory are the largest-|sample| scan and the sort's (coalesced, issued ahead of their use), the
 * walk's (fetched a batch ahead) and the bridges', the rare merges' and the ties' (a few).
 *
 * Included by a unit that defines TK_FX_SLIM_REGISTERS (the register cap) and FX_SLIM_ENTRY (the
 * fx_slim_entry it defines); the device text of fixels_warp.cuh without its kernels.  SPLIT (the
 * split form, fixels_split.cuh): the lobes' climbs handed off to a kernel of their own. */
#ifndef TK_FIXELS_SLIM_CUH
#define TK_FIXELS_SLIM_CUH

#define TK_FX_WARP_DEVICE_ONLY
#include "fixels_warp.cuh"
#include "fixels_slim.h"
#include "fixels_split.cuh"

/* A grid of as many blocks as fit the GPU at once, blockDim.x = 32 vpb, vpb *
 * fx_warp_slim_layout_for(n, k).bytes of dynamic shared memory. */
template <bool SPLIT>
static __global__ void __maxnreg__(TK_FX_SLIM_REGISTERS)
    fixels_warp_slim_kernel(tk_fixels_view view, size_t num_voxels, const double *samples, fx_warp_io io,
                            unsigned *next, fx_split_io split)
{
    extern __shared__ __align__(16) unsigned char fx_smem[];
    __shared__ tk_fixels_view sview;
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const fx_warp_layout lay = fx_warp_slim_layout_for(view.n, view.k);
    unsigned char *mine = fx_smem + (size_t)warp * lay.bytes;
    const size_t stride = fx_samples_stride(view.n);
    if (threadIdx.x == 0) sview = view;
    __syncthreads();
    for (;;) {
        const size_t v = fx_warp_next_voxel(next, lane);
        if (v >= num_voxels) break;
        FX_PHASE_START;
        if (fx_warp_start(view, v, io, NULL, lane)) {
            /* the voxel's row (written by the samples kernel, most likely out of L2 by now) asked
             * into L2 at once, a 128-byte line a lane a step: the scan's loads below then wait for
             * one memory latency, not one a few lines (a hint: nothing read changes) */
            const char *row = (const char *)(samples + v * stride);
            for (size_t b = (size_t)lane * 128u; b < stride * sizeof(double); b += 32u * 128u)
                asm volatile("prefetch.global.L2 [%0];" ::"l"(row + b));
            FX_PHASE(0);
            fx_warp_segment<true, SPLIT>(view, sview, lay, mine, samples + v * stride, v, io, lane, split);
        }
        __syncwarp();
    }
}

static const void *fx_slim_kernel(int split)
{
    return split ? (const void *)fixels_warp_slim_kernel<true> : (const void *)fixels_warp_slim_kernel<false>;
}

static cudaError_t fx_slim_launch(unsigned blocks, unsigned threads, size_t smem, cudaStream_t q, tk_fixels_view view,
                                  size_t num_voxels, const double *samples, fx_warp_io io, unsigned *next,
                                  const fx_split_io *split)
{
    if (!split) {
        fixels_warp_slim_kernel<false><<<blocks, threads, smem, q>>>(view, num_voxels, samples, io, next, fx_split_io());
        return cudaGetLastError();
    }
    fixels_warp_slim_kernel<true><<<blocks, threads, smem, q>>>(view, num_voxels, samples, io, next, *split);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    /* grids for about four lobes a voxel and a warp a voxel; the kernels' strides take the rest */
    const unsigned climbs = (unsigned)((4 * num_voxels + TK_FX_SPLIT_THREADS - 1) / TK_FX_SPLIT_THREADS);
    const unsigned finish = (unsigned)((num_voxels + TK_FX_SPLIT_THREADS / 32 - 1) / (TK_FX_SPLIT_THREADS / 32));
    if (split->wide)
        fixels_split_climb_kernel<1><<<climbs, TK_FX_SPLIT_THREADS, 0, q>>>(view, *split);
    else
        fixels_split_climb_kernel<3><<<climbs, TK_FX_SPLIT_THREADS, 0, q>>>(view, *split);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
    fixels_split_finish_kernel<<<finish, TK_FX_SPLIT_THREADS, 0, q>>>(view, *split, io);
    return cudaGetLastError();
}

static cudaError_t fx_slim_phases(unsigned long long *cycles)
{
#ifdef TK_FX_PHASE_TIMING
    unsigned long long mine[TK_FX_PHASES] = {0};
    cudaError_t e = cudaMemcpyFromSymbol(mine, fx_phase_cycles, sizeof mine);
    if (e != cudaSuccess) return e;
    for (int i = 0; i < TK_FX_PHASES; ++i) cycles[i] += mine[i], mine[i] = 0;
    return cudaMemcpyToSymbol(fx_phase_cycles, mine, sizeof mine);
#else
    (void)cycles;
    return cudaSuccess;
#endif
}

const fx_slim_entry FX_SLIM_ENTRY = {TK_FX_SLIM_REGISTERS, fx_slim_kernel, fx_slim_launch, fx_slim_phases};

#endif
