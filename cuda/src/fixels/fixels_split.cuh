/* The split slim kernel's second and third kernels (TK_FIXELS_CUDA_SPLIT=1,
 * tk_fixels_plan_set_split): the slim kernel in its SPLIT form (fx_warp_segment) stops a voxel
 * with lobes after its climb tensor and hands the lobes off (fx_split_io); then
 *  - the climb kernel: a thread a lobe over the chunk's list of lobes to climb, the same climbs
 *    (fx_revise_lobe_inline) on the voxel's record in global memory (the same doubles as the one
 *    lane's climbs in shared memory: its results bit for bit theirs).  Why: in the slim kernel a voxel's
 *    climbs take one lane a lobe, about 3 of the warp's 32 lanes busy, and their Newton text
 *    spills at the kernel's 128-register cap and fills its instruction cache; here all 32 lanes
 *    climb, at a register cap of their own;
 *  - the finish kernel: a warp a handed-off voxel, its kept lobes' output slots, lobe mask and
 *    count (fx_warp_keep, fx_warp_masks: the slim kernel's own steps).
 * A lobe's revision writes only its own peaks and maximum and reads labels and parents that no
 * thread writes, so that the lobes of a voxel climb in any order, at once.
 * Included by fixels_slim.cuh (its unit's device text). */
#ifndef TK_FIXELS_SPLIT_CUH
#define TK_FIXELS_SPLIT_CUH

#define TK_FX_SPLIT_THREADS 128

/* A voxel's work on its hand-off record (lobes, peaks, kept) and labels. */
__device__ static inline void fx_split_bind(tk_fixels_work *w, const tk_fixels_view *view, fx_split_voxel *rec,
                                            int16_t *label)
{
    memset(w, 0, sizeof *w);
    w->t = view, w->label = label, w->lobes = rec->lobes, w->peaks = rec->peaks, w->kept = rec->kept;
}

/* A grid-stride loop over the counts[0] lobes of split.lobes, a thread each, the climbs inlined
 * (fx_revise_lobe_inline).  BLOCKS: the blocks an SM holds at least (the register cap): 3, 168
 * registers and 12 warps an SM (ptxas, sm_90: 3,584 bytes of spill stores); 1, as many registers
 * as the climbs want (255), 8 warps an SM, 1,848 bytes (split.wide, TK_FIXELS_SPLIT_WIDE=1: the
 * A/B's other side).  (4, 128 registers: 4,968 bytes, not kept.)  Which is faster: not measured. */
template <int BLOCKS>
static __global__ void __launch_bounds__(TK_FX_SPLIT_THREADS, BLOCKS) fixels_split_climb_kernel(tk_fixels_view view,
                                                                                                fx_split_io split)
{
    __shared__ tk_fixels_view sview;
    if (threadIdx.x == 0) sview = view;
    __syncthreads();
    const unsigned todo = split.counts[0];
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < todo; i += gridDim.x * blockDim.x) {
        const unsigned e = split.lobes[i];
        const size_t v = e / TK_FX_WARP_LOBES;
        const int l = (int)(e % TK_FX_WARP_LOBES);
        fx_split_voxel *rec = split.voxels + v;
        tk_fixels_work w;
        fx_split_bind(&w, &sview, rec, split.label + v * (size_t)view.n);
        /* the coefficients and the anisotropic part are read only where the tensor is not ready
         * (it is: the record's) */
        fx_revise_lobe_inline(&sview, NULL, &w, l, NULL, rec->tensor, rec->rows, rec->scale, rec->iso);
    }
}

/* A grid-stride loop over the counts[1] voxels of split.finish, a warp each (blockDim.x =
 * TK_FX_SPLIT_THREADS). */
static __global__ void __launch_bounds__(TK_FX_SPLIT_THREADS) fixels_split_finish_kernel(tk_fixels_view view,
                                                                                         fx_split_io split,
                                                                                         fx_warp_io io)
{
    const int lane = (int)(threadIdx.x & 31);
    const unsigned warps = gridDim.x * (blockDim.x >> 5), todo = split.counts[1];
    for (unsigned i = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); i < todo; i += warps) {
        const size_t v = split.finish[i];
        fx_split_voxel *rec = split.voxels + v;
        int16_t *label = split.label + v * (size_t)view.n;
        tk_fixels_work w;
        fx_split_bind(&w, &view, rec, label);
        const int nl = rec->nl;
        int kept = 0;
        /* the slim kernel's pass test on the climbed lobes, in lobe order */
        for (int base = 0; base < nl; base += 32) {
            const int l = base + lane;
            bool pass = false;
            if (l < nl) {
                const tk_fixels_lobe *lobe = &w.lobes[l];
                pass = lobe->alive && !(lobe->integral < view.integral_threshold) &&
                       !(lobe->max_peak < view.peak_value_threshold);
            }
            kept = fx_warp_keep(view, &w, l, nl, pass, kept, v, io, lane);
        }
        __syncwarp();
        fx_warp_masks(view, &w, label, true, kept, v, io, lane);
    }
}

#endif
